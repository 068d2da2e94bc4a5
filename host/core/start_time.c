#include "start_time.h"

#define NS_PER_S G_GINT64_CONSTANT(1000000000)

gint64 jet_start_time_whole_second(gint64 ns)
{
    if (ns <= 0)
        return 0;
    return ns - ns % NS_PER_S;
}

gboolean jet_start_time_before(gint64 start_ns, gint64 stored_ns)
{
    return start_ns > 0 && stored_ns < start_ns;
}
