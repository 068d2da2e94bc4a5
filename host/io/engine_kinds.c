/* Which driver runs a binding (engine_driver.h): the one place that asks
 * what kind it is. */
#include "engine_driver.h"

const JetDriver *jet__engine_driver(const JetBindingConfig *b)
{
    if (JET_KIND_IS_ORDERED(b->kind))
        return &jet__driver_ordered;   /* a stream read in order, or a KV watch */
    if (b->lane_key.kind != JET_LANE_KEY_OFF)
        return &jet__driver_lanes;
    return &jet__driver_durable;
}
