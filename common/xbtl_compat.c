/* Open MPI side of the compatibility check: see xbtl_compat.h for why. */
#include "xbtl_config.h"

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
        /* Rendered here and written to our own stderr rather than relayed
         * with opal_show_help: Open MPI 4.1.4 relays a rank's help message to
         * mpirun through PMIx_Log and, on a loaded machine, loses it (mpirun
         * logs an unpack error instead; 6 of 20 runs of vader's own messages
         * here).  stderr is forwarded reliably.  Every rank refuses alike, so
         * one message per node (local rank 0) is enough. */
        char *msg = opal_show_help_string("help-xbtl-common.txt", "ompi version mismatch", true,
                                          framework, component, XBTL_BUILT_OMPI_VERSION,
                                          opal_version_string);
        if (NULL != msg && opal_process_info.my_local_rank <= 0) {
            fputs(msg, stderr);
            fflush(stderr);
        }
        free(msg);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return OPAL_SUCCESS;
}
