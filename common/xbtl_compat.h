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

#endif
