/*
 * Run-time compatibility checks shared by every component of this project.
 *
 * The MCA loader only compares the MCA framework version (2.1), so a component
 * built against one Open MPI could be loaded into another whose structures
 * differ.  Each component calls xbtl_component_check() from its open function
 * and declines to open, with a readable message, when the running Open MPI is
 * not the one it was compiled against.
 */
#ifndef XBTL_COMPAT_H
#define XBTL_COMPAT_H

#include <stdbool.h>

/* every component also asks whether the job named it (xbtl_optin.h) */
#include "xbtl_optin.h"

/* Plain string comparison of "major.minor.release" versions: true when they
 * name the same release.  Tolerates a suffix after the release ("4.1.4rc1" is
 * not "4.1.4"), rejects malformed strings.  No Open MPI needed: unit-tested. */
bool xbtl_version_same_release(const char *built, const char *running);

/* Register this project's help directory with opal_show_help (idempotent),
 * then check the running Open MPI.  Returns 0 (OPAL_SUCCESS) when the
 * component may open, and an OPAL error after showing help otherwise. */
int xbtl_component_check(const char *framework, const char *component);

/* A help message that every process of a node would give alike and after which
 * the component cannot start (a parameter out of range, no interface to use):
 * rendered here and written to stderr by the node's first process (local rank
 * 0) only, instead of relayed to mpirun with opal_show_help.  Open MPI 4.1.4
 * relays a process's help message through PMIx_Log, and mpirun now and then
 * cannot unpack what arrives (ORTE_ERROR_LOG in orte/util/show_help.c) and
 * shows nothing: every copy of the message was lost in 2-4 of 20 jobs of 1, 2
 * or 4 ranks on 2026-12-07, leaving only Open MPI's "unable to reach each
 * other".  A process's own stderr always arrives.  One copy per node instead
 * of mpirun's "N more processes have sent help message". */
void xbtl_show_help_per_node(const char *filename, const char *topic, ...);

#endif
