/* The daemon's heap (heap.h). */
#include "heap.h"

#if defined(HAVE_MALLOC_H)
#include <malloc.h>
#endif
#include <string.h>

/* glibc's largest mmap threshold on 64-bit systems, and on 32-bit ones. */
#define MMAP_THRESHOLD (32 * 1024 * 1024)
#define MMAP_THRESHOLD_32 (512 * 1024)

void jet_heap_tune(void)
{
#if defined(HAVE_MALLOPT) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    /* An operator's own malloc tunables win. */
    const char *tunables = g_getenv("GLIBC_TUNABLES");
    if (tunables != NULL && strstr(tunables, "glibc.malloc.") != NULL)
        return;
    /* Setting either fixes both: glibc's own adjustment raises the mmap
     * threshold to the largest block freed, but trims the heap whenever
     * its free top passes twice that, which a batch of such blocks does.
     * So the trim threshold is set only once the mmap one took: alone it
     * would pin the mmap threshold at its 128 KiB start. */
    if (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 || mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_32) == 1)
        mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

#if defined(HAVE_MALLOC_H) && defined(HAVE_MALLOC_TRIM)
static gboolean trim(gpointer unused)
{
    (void)unused;
    malloc_trim(0);
    return G_SOURCE_CONTINUE;
}
#endif

guint jet_heap_trim_start(guint interval_s)
{
#if defined(HAVE_MALLOC_H) && defined(HAVE_MALLOC_TRIM)
    return g_timeout_add_seconds(interval_s, trim, NULL);
#else
    (void)interval_s;
    return 0;
#endif
}
