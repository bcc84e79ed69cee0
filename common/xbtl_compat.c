/* Open MPI side of the compatibility check: see xbtl_compat.h for why. */
#include "xbtl_config.h"

#include "opal_config.h"
#include "opal/constants.h"
#include "opal/runtime/opal.h"
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
        opal_show_help("help-xbtl-common.txt", "ompi version mismatch", true,
                       framework, component, XBTL_BUILT_OMPI_VERSION, opal_version_string);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return OPAL_SUCCESS;
}
