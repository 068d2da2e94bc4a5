/* The daemon's heap (heap.h). */
#include "heap.h"

#if defined(HAVE_MALLOC_H)
#include <malloc.h>
#endif

/* glibc's largest mmap threshold on 64-bit systems. */
#define MMAP_THRESHOLD (32 * 1024 * 1024)

void jet_heap_tune(void)
{
#if defined(HAVE_MALLOPT) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    /* Setting them fixes both: glibc's own adjustment raises the mmap
     * threshold to the largest block freed, but trims the heap whenever
     * its free top passes twice that, which a batch of such blocks does. */
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

#if defined(HAVE_MALLOC_TRIM)
static gboolean trim(gpointer unused)
{
    (void)unused;
    malloc_trim(0);
    return G_SOURCE_CONTINUE;
}
#endif

guint jet_heap_trim_start(guint interval_s)
{
#if defined(HAVE_MALLOC_TRIM)
    return g_timeout_add_seconds(interval_s, trim, NULL);
#else
    (void)interval_s;
    return 0;
#endif
}
