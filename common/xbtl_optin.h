/*
 * "Installed, but only where asked" (issue 13, part 3), for every component of
 * this project.
 *
 * Once `make install` puts a component into Open MPI's component directory, the
 * MCA base opens it in every job that does not exclude it: a plain `mpirun`
 * would pick rsm for all local traffic (it ties vader's exclusivity and wins)
 * and pmeth for every raw-Ethernet link.  A site installing a new transport
 * should not have every job change under it, so each component asks, in its
 * init function and before it creates anything, whether the job named it:
 *
 *   - an inclusion list ("self,vader,rsm") names what it lists; when the
 *     component is running at all it is on that list (the base opens nothing
 *     else), but the check does not rely on it;
 *   - no list, or an exclusion list ("^uct,openib,ofi", Debian's default),
 *     names nothing: the component declines, unless the site turned it on for
 *     such jobs with its "<framework>_<component>_site_default" parameter (one
 *     line in openmpi-mca-params.conf; README, "Selecting a transport").
 */
#ifndef XBTL_OPTIN_H
#define XBTL_OPTIN_H

#include <stdbool.h>

/* Plain C, no Open MPI (unit-tested): does the component selection LIST, in
 * the MCA syntax (comma-separated names; a leading '^' makes the whole list an
 * exclusion list; blanks around names ignored), name COMPONENT for inclusion?
 * NULL or empty: no. */
bool xbtl_list_includes(const char *list, const char *component);

/* Plain C: may a framework whose selection is LIST select COMPONENT at all?
 * NULL or empty: yes; an exclusion list: unless it names it; an inclusion
 * list: if it names it. */
bool xbtl_list_allows(const char *list, const char *component);

/* Open MPI side: the current value of the MCA variable FRAMEWORK (the job's
 * selection for that framework, e.g. "btl") names COMPONENT for inclusion. */
bool xbtl_component_named(const char *framework, const char *component);

/* Open MPI side: may the framework FRAMEWORK of PROJECT ("opal" for btl,
 * "ompi" for osc) select COMPONENT, as its selection variable stands now (a
 * framework not registered yet: as with no list). */
bool xbtl_component_allowed(const char *project, const char *framework, const char *component);

/* Should COMPONENT run in this job: named by it, or SITE_DEFAULT (the
 * component's "site_default" parameter) is set.  When not, says so in one
 * line at verbosity 10 on OUTPUT (the framework's output stream), nothing
 * more: a component nobody asked for is no reason for a warning. */
bool xbtl_component_wanted(const char *framework, const char *component, bool site_default,
                           int output);

#endif
