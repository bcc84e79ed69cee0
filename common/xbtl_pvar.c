/* xbtl_pvar.h: counters as MPI_T performance variables. */
#include "xbtl_config.h"

#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/base/mca_base_pvar.h"

#include "xbtl_pvar.h"

/* One pvar read: sum everything, hand out this pvar's entry.  Summing all of
 * them for one is cheap (a few dozen additions per endpoint) and keeps the
 * component's side to a single function. */
static int read_one(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void) obj;
    const struct xbtl_pvar_slot *slot = pvar->ctx;
    uint64_t all[XBTL_PVAR_MAX];
    slot->set->read(all);
    *(unsigned long *) value = (unsigned long) all[slot->index];
    return OPAL_SUCCESS;
}

unsigned xbtl_pvar_register_counters(xbtl_pvar_set_t *set,
                                     const struct mca_base_component_2_1_0_t *component,
                                     const xbtl_counter_def_t *defs, unsigned n,
                                     xbtl_counters_read_fn read)
{
    unsigned registered = 0;
    if (n > XBTL_PVAR_MAX) {
        n = XBTL_PVAR_MAX;
    }
    set->defs = defs;
    set->n = n;
    set->read = read;
    for (unsigned i = 0; i < n; i++) {
        set->slot[i].set = set;
        set->slot[i].index = i;
        int rc = mca_base_component_pvar_register(
            component, defs[i].name, defs[i].desc, OPAL_INFO_LVL_4,
            defs[i].level ? MCA_BASE_PVAR_CLASS_LEVEL : MCA_BASE_PVAR_CLASS_COUNTER,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, read_one, NULL, NULL,
            &set->slot[i]);
        registered += rc >= 0;
    }
    return registered;
}
