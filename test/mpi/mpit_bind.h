/*
 * Binding a component's MPI_T performance variables by name, for the test
 * programs that read them (test/mpi/mpit_read.c, test/pmeth/pmeth_memory.c).
 */
#ifndef MPIT_BIND_H
#define MPIT_BIND_H

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>

/* Open SESSION and a handle per variable PREFIX + NAMES[i] of CLASS (one value
 * each); false when any is missing (the component is not in this job). */
static inline bool mpit_bind(MPI_T_pvar_session *session, MPI_T_pvar_handle *handle,
                             const char *prefix, const char *const *names, int n, int var_class)
{
    char full[128];
    if (MPI_T_pvar_session_create(session) != MPI_SUCCESS) {
        return false;
    }
    for (int i = 0; i < n; i++) {
        int index, count;
        snprintf(full, sizeof(full), "%s%s", prefix, names[i]);
        if (MPI_T_pvar_get_index(full, var_class, &index) != MPI_SUCCESS
            || MPI_T_pvar_handle_alloc(*session, index, NULL, &handle[i], &count) != MPI_SUCCESS
            || count != 1) {
            return false;
        }
    }
    return true;
}

#endif
