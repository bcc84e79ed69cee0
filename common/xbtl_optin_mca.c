/* Open MPI side of xbtl_optin.h: read the job's selection from the MCA
 * variable system (command line, environment and parameter files alike). */
#include "xbtl_config.h"

#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

#include "xbtl_optin.h"

bool xbtl_component_named(const char *framework, const char *component)
{
    /* the framework registers its selection as project "opal", type FRAMEWORK,
     * no component and no name: the variable called just "btl" */
    int index = mca_base_var_find("opal", framework, NULL, NULL);
    if (index < 0) {
        return false;
    }
    const char **value = NULL;
    if (mca_base_var_get_value(index, &value, NULL, NULL) != OPAL_SUCCESS || value == NULL) {
        return false;
    }
    return xbtl_list_includes(*value, component);
}

bool xbtl_component_allowed(const char *project, const char *framework, const char *component)
{
    int index = mca_base_var_find(project, framework, NULL, NULL);
    const char **value = NULL;
    if (index < 0 || mca_base_var_get_value(index, &value, NULL, NULL) != OPAL_SUCCESS
        || value == NULL) {
        return xbtl_list_allows(NULL, component);
    }
    return xbtl_list_allows(*value, component);
}

bool xbtl_component_wanted(const char *framework, const char *component, bool site_default,
                           int output)
{
    if (xbtl_component_named(framework, component) || site_default) {
        return true;
    }
    opal_output_verbose(10, output,
                        "%s:%s: not named in this job's %s list: not used (name it, e.g. "
                        "--mca %s self,%s, or set %s_%s_site_default = 1 for the whole site)",
                        framework, component, framework, framework, component, framework,
                        component);
    return false;
}
