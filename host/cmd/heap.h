/* How the daemon's heap gives memory back (docs/performance.md, "Large
 * messages and the heap").  Without these, glibc's malloc hands the pages of a
 * batch of large messages back to the kernel as soon as the batch is freed
 * and takes them again, faulting every page, for the next: at 64 KiB and
 * more that was a third of the host's CPU. */
#ifndef JET_HEAP_H
#define JET_HEAP_H

#include <glib.h>

/* Before any thread starts: messages up to 32 MiB come from the heap, and
 * the heap is not trimmed on every free. */
void jet_heap_tune(void);

/* Gives free heap pages back every interval_s seconds from the default
 * main context, so memory a burst of large messages took is returned
 * while the host runs.  Returns the source id (0: nothing to do here). */
guint jet_heap_trim_start(guint interval_s);

#endif
