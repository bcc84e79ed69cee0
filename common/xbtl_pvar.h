/*
 * A component's statistics as MPI_T performance variables (issue 13, part 2):
 * tools (and test/mpi/mpit_read.c) read them with MPI_T_pvar_read while the
 * job runs.
 *
 * A component keeps plain counters (no atomics, nothing extra on its fast
 * paths: per endpoint or per module, wherever the code that counts already
 * writes) and gives one function that sums them into an array, in the order
 * of its table of names.  Each table entry becomes one read-only, continuous
 * COUNTER (or LEVEL) pvar of type unsigned long, not bound to an object, named
 * "<framework>_<component>_<name>" and withdrawn when the component closes
 * (so a component that declined to run shows none).  A read sums everything
 * afresh: the figures are exact once the traffic they count has completed.
 */
#ifndef XBTL_PVAR_H
#define XBTL_PVAR_H

#include <stdbool.h>
#include <stdint.h>

#define XBTL_PVAR_MAX 96     /* a component asserts its count fits (_Static_assert) */

typedef struct xbtl_counter_def {
    const char *name;           /* the pvar's last name part */
    const char *desc;           /* what it counts, and in which unit */
    bool level;                 /* an amount held now (bytes registered, peers known), not a
                                 * count: MPI_T_PVAR_CLASS_LEVEL, which a tool reads as it is.
                                 * Open MPI reads a COUNTER as the difference since the
                                 * handle started, so memory taken before that would vanish */
} xbtl_counter_def_t;

/* Fill VALUES[0 .. n-1] with the current totals, in table order. */
typedef void (*xbtl_counters_read_fn)(uint64_t *values);

typedef struct xbtl_pvar_set {
    const xbtl_counter_def_t *defs;
    unsigned n;
    xbtl_counters_read_fn read;
    struct xbtl_pvar_slot {
        const struct xbtl_pvar_set *set;
        unsigned index;
    } slot[XBTL_PVAR_MAX];      /* each pvar's context: which entry it reads */
} xbtl_pvar_set_t;

struct mca_base_component_2_1_0_t;

/* Register N counters (N <= XBTL_PVAR_MAX) of COMPONENT, read through READ;
 * SET is the caller's storage (static: it must outlive the pvars).  Returns
 * how many were registered; a counter that cannot be registered is left out
 * (MPI_T is for tools: never a reason to fail the job). */
unsigned xbtl_pvar_register_counters(xbtl_pvar_set_t *set,
                                     const struct mca_base_component_2_1_0_t *component,
                                     const xbtl_counter_def_t *defs, unsigned n,
                                     xbtl_counters_read_fn read);

#endif
