/*
 * A BTL component that does nothing but the project's open-time compatibility
 * check, for t-version-mismatch.sh: built with a config header claiming
 * another Open MPI release, it must refuse to open with the readable message.
 */
#include "xbtl_config.h"

#include "opal_config.h"
#include "opal/mca/btl/btl.h"

#include "xbtl_compat.h"

static int xbcheck_open(void)
{
    return xbtl_component_check("btl", "xbcheck");
}

static mca_btl_base_module_t **xbcheck_init(int *num_btls, bool progress_threads, bool mpi_threads)
{
    *num_btls = 0;
    return NULL;
}

__attribute__((visibility("default")))
mca_btl_base_component_3_0_0_t mca_btl_xbcheck_component = {
    .btl_version = {
        MCA_BTL_DEFAULT_VERSION("xbcheck"),
        .mca_open_component = xbcheck_open,
    },
    .btl_data = {.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .btl_init = xbcheck_init,
};
