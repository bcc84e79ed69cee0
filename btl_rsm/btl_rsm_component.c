/*
 * btl rsm: the component.  This first version only proves that an out-of-tree
 * component builds, installs into Open MPI's component directory and loads
 * into an unmodified stack; it offers no module yet, so ob1 never selects it.
 * The Sun-MPI postbox protocol replaces this file's init (issue 3).
 */
#include "xbtl_config.h"

#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/base/btl_base_error.h"
#include "opal/util/output.h"

#include "xbtl_compat.h"

static int rsm_component_open(void);
static mca_btl_base_module_t **rsm_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads);

__attribute__((visibility("default")))
mca_btl_base_component_3_0_0_t mca_btl_rsm_component = {
    .btl_version = {
        MCA_BTL_DEFAULT_VERSION("rsm"),
        .mca_open_component = rsm_component_open,
    },
    .btl_data = {
        .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
    },
    .btl_init = rsm_component_init,
};

static int rsm_component_open(void)
{
    return xbtl_component_check("btl", "rsm");
}

static mca_btl_base_module_t **rsm_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads)
{
    BTL_VERBOSE(("rsm: loaded; no module is offered by this build"));
    *num_btls = 0;
    return NULL;
}
