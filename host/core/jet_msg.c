/* The host's message and the handles the daemon lends for it: jet_msg.h. */
#include "jet_msg.h"
#include "host_strict.h"
#include "log.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* Strict mode (host_strict.h): the mock host's checks.  The daemon never sets
 * a jet_msg's strict pointer, so every host call pays one predictable branch
 * and nothing else. */
#define MSG_STRICT_OK(m, fn) \
    (G_LIKELY((m)->strict == NULL) || (m)->strict->call((m)->strict, (m), (fn)))

void jet_msg_reset_verdict(jet_msg *m)
{
    m->reason[0] = '\0';
    m->has_reason = FALSE;
    m->reason_too_long = FALSE;
    m->delay_ms = 0;
    m->has_delay = FALSE;
    /* Not freed: a copy (the mock's lent one) shares the original's. */
    memset(&m->publishes, 0, sizeof m->publishes);
}

/* --- lent handles (jet_msg.h) ------------------------------------------------
 *
 * A handle is region + slot * span + (tick mod ticks) * 8: the address alone
 * says which slot and which lend, so a kept handle is told from the current
 * one even after its slot is lent again (until the tick wraps, after `ticks`
 * more lends on that worker: millions on a 64-bit host).  The range is
 * reserved PROT_NONE and never mapped: no handle is ever a real object, and
 * a plugin dereferencing one faults at once instead of reading a message. */

#define SLOTS JET_MSG_HANDLE_SLOTS
#define HANDLE_ALIGN 8u

struct JetMsgPin {
    guint64 state;     /* atomic: (tick << 1) | 1 while lent */
    gint pins;         /* atomic: host calls running through a handle of it */
    jet_msg *msg;      /* atomic; read only by a call pinned on a valid handle */
    /* Under owner_lock: */
    gboolean taken;    /* a thread lends with it */
    JetMsgOwner owner;
    guint64 logged;    /* 1 + the tick last logged as stale; 0: none */
};
typedef struct JetMsgPin Slot;

static Slot slots[SLOTS];
static GMutex owner_lock;
static uintptr_t region;   /* 0: not reserved; handles are then the messages */
static uintptr_t span;     /* bytes of the range per slot */

static void reserve_region(void)
{
    static gsize once;
    if (!g_once_init_enter(&once))
        return;
    /* Address space only (nothing is ever mapped there); smaller when a
     * limit on it (RLIMIT_AS) refuses the first. */
    for (unsigned shift = sizeof(void *) >= 8 ? 34 : 26; shift >= 20; shift--) {
        size_t size = (size_t)1 << shift;
        void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            region = (uintptr_t)p;
            span = size / SLOTS;
            break;
        }
    }
    if (region == 0)
        jet_log(JET_LOG_WARNING, NULL, "handles", "no address range for message handles: a plugin "
                "keeping a jet_msg after handle() goes undetected");
    g_once_init_leave(&once, 1);
}

static inline guint64 ticks_per_slot(void)
{
    return span / HANDLE_ALIGN;
}

/* Which slot and tick a handle names; FALSE for anything else (a jet_msg
 * itself: the mock host's, a test's, NULL). */
static inline gboolean decode(const jet_msg *h, Slot **s, guint64 *tick)
{
    uintptr_t a = (uintptr_t)h;
    uintptr_t base = __atomic_load_n(&region, __ATOMIC_ACQUIRE);
    if (base == 0 || a < base || a - base >= span * SLOTS)
        return FALSE;
    uintptr_t off = a - base;
    *s = &slots[off / span];
    *tick = (off % span) / HANDLE_ALIGN;
    return TRUE;
}

static void slot_free(Slot *s)
{
    g_mutex_lock(&owner_lock);
    s->taken = FALSE;
    memset(&s->owner, 0, sizeof s->owner);
    g_mutex_unlock(&owner_lock);
}

static void slots_release(gpointer p)
{
    GPtrArray *mine = p;
    for (guint i = 0; i < mine->len; i++)
        slot_free(g_ptr_array_index(mine, i));
    g_ptr_array_free(mine, TRUE);
}

/* Each lending thread keeps its slots until it exits: one for handle(),
 * as many as its largest handle_batch() for batches. */
static GPrivate thread_slots = G_PRIVATE_INIT(slots_release);

static Slot *slot_claim(guint nth, const JetMsgOwner *owner)
{
    GPtrArray *mine = g_private_get(&thread_slots);
    if (mine == NULL) {
        mine = g_ptr_array_new();
        g_private_set(&thread_slots, mine);
    }
    if (nth < mine->len)
        return g_ptr_array_index(mine, nth);
    Slot *s = NULL;
    g_mutex_lock(&owner_lock);
    for (guint i = 0; i < SLOTS && mine->len <= nth; i++) {
        if (!slots[i].taken) {
            s = &slots[i];
            s->taken = TRUE;
            /* Its owner in the same step: a late call through an old handle
             * of it never finds a former owner that may be gone. */
            if (owner != NULL)
                s->owner = *owner;
            else
                memset(&s->owner, 0, sizeof s->owner);
            g_ptr_array_add(mine, s);
        }
    }
    g_mutex_unlock(&owner_lock);
    if (nth < mine->len)
        return g_ptr_array_index(mine, nth);
    static gsize said;
    if (g_once_init_enter(&said)) {
        jet_log(JET_LOG_WARNING, NULL, "handles", "all %u message handles are lent (workers times batch_max, over "
                "every binding): further messages are lent as they are, and a plugin keeping one past its call goes "
                "undetected", SLOTS);
        g_once_init_leave(&said, 1);
    }
    return NULL;
}

jet_msg *jet_msg_lend(jet_msg *m, const JetMsgOwner *owner)
{
    return jet_msg_lend_nth(m, owner, 0);
}

jet_msg *jet_msg_lend_nth(jet_msg *m, const JetMsgOwner *owner, guint nth)
{
    reserve_region();
    if (region == 0)
        return m;
    Slot *s = slot_claim(nth, owner);
    if (s == NULL)
        return m;
    if (owner != NULL && memcmp(&s->owner, owner, sizeof *owner) != 0) {
        g_mutex_lock(&owner_lock);
        s->owner = *owner;
        g_mutex_unlock(&owner_lock);
    }
    guint64 tick = (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) >> 1) + 1;
    __atomic_store_n(&s->msg, m, __ATOMIC_RELAXED);
    __atomic_store_n(&s->state, (tick << 1) | 1, __ATOMIC_SEQ_CST);
    uintptr_t h = region + (uintptr_t)(s - slots) * span + (uintptr_t)(tick % ticks_per_slot()) * HANDLE_ALIGN;
    return (jet_msg *)h;
}

void jet_msg_unlend(jet_msg *handle)
{
    Slot *s;
    guint64 tick;
    if (!decode(handle, &s, &tick))
        return;
    jet_msg_end_lend(handle);
    /* A call that pinned before the store above may still be reading the
     * message; one after it sees the lend over and leaves the message alone.
     * Waiting is rare (a plugin's own thread calling at this instant). */
    while (__atomic_load_n(&s->pins, __ATOMIC_SEQ_CST) != 0)
        g_thread_yield();
    __atomic_store_n(&s->msg, NULL, __ATOMIC_RELAXED);
}

void jet_msg_keep(jet_msg *handle)
{
    Slot *s;
    guint64 tick;
    if (!decode(handle, &s, &tick))
        return;
    GPtrArray *mine = g_private_get(&thread_slots);
    if (mine != NULL)
        g_ptr_array_remove(mine, s);   /* still taken: jet_msg_unlend_kept() frees it */
}

void jet_msg_end_lend(jet_msg *handle)
{
    Slot *s;
    guint64 tick;
    if (!decode(handle, &s, &tick))
        return;
    guint64 st = __atomic_load_n(&s->state, __ATOMIC_SEQ_CST);
    __atomic_store_n(&s->state, st & ~(guint64)1, __ATOMIC_SEQ_CST);
}

void jet_msg_unlend_kept(jet_msg *handle)
{
    Slot *s;
    guint64 tick;
    if (!decode(handle, &s, &tick))
        return;
    jet_msg_unlend(handle);
    /* Free, but still its owner's until lent again or the owner is
     * forgotten: a completion that comes later is refused and counted. */
    g_mutex_lock(&owner_lock);
    s->taken = FALSE;
    g_mutex_unlock(&owner_lock);
}

void jet_msg_forget_owner(gpointer data)
{
    g_mutex_lock(&owner_lock);
    for (guint i = 0; i < SLOTS; i++)
        if (slots[i].owner.data == data)
            memset(&slots[i].owner, 0, sizeof slots[i].owner);
    g_mutex_unlock(&owner_lock);
}

guint64 jet_msg_lent_seq(const jet_msg *m)
{
    Slot *s;
    guint64 tick;
    if (decode(m, &s, &tick)) {
        const jet_msg *real = __atomic_load_n(&s->msg, __ATOMIC_RELAXED);
        return real != NULL ? real->stream_seq : 0;
    }
    return m != NULL ? m->stream_seq : 0;
}

/* A call through a handle whose handle() has returned: refused, counted, and
 * logged once per handle. */
static void stale_call(Slot *s, guint64 tick, const char *fn)
{
    g_mutex_lock(&owner_lock);
    JetMsgOwner o = s->owner;
    gboolean first = s->logged != tick + 1;
    s->logged = tick + 1;
    if (first && strcmp(fn, "msg_complete") == 0)
        jet_log(JET_LOG_ERROR, o.binding, "completion-refused",
                "plugin %s called msg_complete() on a jet_msg no longer pending (completed already): refused "
                "(docs/async.md)",
                o.plugin != NULL ? o.plugin : "(unknown)");
    else if (first)
        jet_log(JET_LOG_ERROR, o.binding, "stale-handle",
                "plugin %s called %s() on a jet_msg after its handle() returned: refused (a plugin "
                "error; the handle is borrowed for the duration of handle() only: copy what you keep)",
                o.plugin != NULL ? o.plugin : "(unknown)", fn);
    if (o.stale != NULL)
        o.stale(o.data, fn);
    g_mutex_unlock(&owner_lock);
}

jet_msg *jet__msg_enter(const jet_msg *h, const char *fn, JetMsgPin **pinned)
{
    Slot *s;
    guint64 tick;
    *pinned = NULL;
    if (h == NULL)
        return NULL;
    if (G_LIKELY(decode(h, &s, &tick))) {
        __atomic_add_fetch(&s->pins, 1, __ATOMIC_SEQ_CST);
        guint64 st = __atomic_load_n(&s->state, __ATOMIC_SEQ_CST);
        if (G_UNLIKELY(!(st & 1) || (st >> 1) % ticks_per_slot() != tick)) {
            __atomic_sub_fetch(&s->pins, 1, __ATOMIC_SEQ_CST);
            stale_call(s, tick, fn);
            return NULL;
        }
        *pinned = s;
        h = __atomic_load_n(&s->msg, __ATOMIC_RELAXED);
    }
    jet_msg *m = (jet_msg *)h;
    if (!MSG_STRICT_OK(m, fn)) {
        if (*pinned != NULL)
            __atomic_sub_fetch(&(*pinned)->pins, 1, __ATOMIC_SEQ_CST);
        *pinned = NULL;
        return NULL;
    }
    return m;
}

void jet__msg_leave(JetMsgPin *pinned)
{
    if (pinned != NULL)
        __atomic_sub_fetch(&pinned->pins, 1, __ATOMIC_SEQ_CST);
}
