/* Per-key lanes (lanes.h, docs/lanes.md). */
#include "lanes.h"
#include "hdr_block.h"

#include <string.h>

typedef enum {
    E_WAITING,    /* in its lane, not its turn yet */
    E_READY,      /* its turn: in the ready queue */
    E_BUSY,       /* taken, not settled */
    E_OUT,        /* given back to the server: holds its lane until it comes back */
    E_GHOST,      /* an unknown sequence, resolved to this lane: holds it like OUT */
    E_SETTLED,    /* settled here inside a recovery range: never unknown again */
} EntryState;

typedef struct Lane Lane;

typedef struct {
    guint64 seq;
    EntryState state;
    Lane *lane;            /* NULL for E_SETTLED */
    gpointer item;         /* WAITING, READY, BUSY */
    gpointer again;        /* BUSY: a redelivery of the same sequence, run after it */
    gint64 due_us;         /* OUT */
    GList *link;           /* its node in lane->entries */
} Entry;

struct Lane {
    GBytes *key;           /* NULL: the keyless lane */
    GQueue entries;        /* Entry*, by sequence; the head decides */
    gboolean blocked;      /* in JetLanes.blocked: its head waits for an unknown below it */
    guint n_waiting;       /* its E_WAITING entries */
    guint held;            /* what it adds to JetLanes.n_held: n_waiting when its head is away */
    guint busy;            /* entries in a handler: one at a time, so the head waits for them */
};

typedef struct {
    guint64 lo, hi;        /* inclusive */
} Range;

struct JetLanes {
    GHashTable *lanes;     /* GBytes key -> Lane* */
    Lane *keyless;
    GTree *entries;        /* guint64* seq -> Entry* (the key points into the entry) */
    GQueue ready;          /* Entry* */
    GArray *ranges;        /* Range, ascending, disjoint: unknown, not yet resolved */
    GHashTable *blocked;   /* Lane* set: heads waiting on an unknown */
    guint64 last_first;    /* the highest sequence seen as a first delivery */
    gboolean gap_open;
    guint64 gap_from;      /* gap_open: unknown past this, up to the next first delivery */
    guint n_waiting, n_busy, n_out, n_ghost;
    guint n_held;          /* waiting in lanes whose head is OUT or GHOST */
};

static gint seq_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
    (void)unused;
    guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

static void lane_free(gpointer p)
{
    Lane *ln = p;
    if (ln->key != NULL)
        g_bytes_unref(ln->key);
    g_queue_clear(&ln->entries);
    g_free(ln);
}

JetLanes *jet_lanes_new(void)
{
    JetLanes *l = g_new0(JetLanes, 1);
    l->lanes = g_hash_table_new_full(g_bytes_hash, g_bytes_equal, NULL, lane_free);
    l->entries = g_tree_new_full(seq_cmp, NULL, NULL, g_free);
    g_queue_init(&l->ready);
    l->ranges = g_array_new(FALSE, FALSE, sizeof(Range));
    l->blocked = g_hash_table_new(g_direct_hash, g_direct_equal);
    return l;
}

void jet_lanes_free(JetLanes *l)
{
    if (l == NULL)
        return;
    g_hash_table_unref(l->blocked);
    g_tree_unref(l->entries);
    g_hash_table_unref(l->lanes);
    if (l->keyless != NULL)
        lane_free(l->keyless);
    g_queue_clear(&l->ready);
    g_array_unref(l->ranges);
    g_free(l);
}

/* --- the unknown --------------------------------------------------------- */

static Entry *find(const JetLanes *l, guint64 seq)
{
    return g_tree_lookup(l->entries, &seq);
}

/* Drops known sequences off the front of the ranges: a sequence this run
 * has seen needs no reading. */
static void ranges_skip_known(JetLanes *l)
{
    while (l->ranges->len > 0) {
        Range *r = &g_array_index(l->ranges, Range, 0);
        while (r->lo <= r->hi && find(l, r->lo) != NULL)
            r->lo++;
        if (r->lo <= r->hi)
            return;
        g_array_remove_index(l->ranges, 0);
    }
}

/* The lowest sequence that may be an unsettled message of any key:
 * everything below it is known.  G_MAXUINT64: none. */
static guint64 frontier(JetLanes *l)
{
    ranges_skip_known(l);
    guint64 f = G_MAXUINT64;
    if (l->ranges->len > 0)
        f = g_array_index(l->ranges, Range, 0).lo;
    if (l->gap_open)
        f = MIN(f, l->gap_from + 1);
    return f;
}

static gboolean in_ranges(const JetLanes *l, guint64 seq)
{
    for (guint i = 0; i < l->ranges->len; i++) {
        const Range *r = &g_array_index(l->ranges, Range, i);
        if (seq >= r->lo && seq <= r->hi)
            return TRUE;
    }
    return FALSE;
}

/* Adds (lo, hi] to the unknown, keeping the ranges ascending and disjoint. */
static void ranges_add(JetLanes *l, guint64 lo, guint64 hi)
{
    if (hi <= lo)
        return;
    Range add = { lo + 1, hi };
    guint i = 0;
    while (i < l->ranges->len && g_array_index(l->ranges, Range, i).hi + 1 < add.lo)
        i++;
    /* Merge every range that touches or overlaps. */
    while (i < l->ranges->len) {
        Range *r = &g_array_index(l->ranges, Range, i);
        if (r->lo > add.hi + 1)
            break;
        add.lo = MIN(add.lo, r->lo);
        add.hi = MAX(add.hi, r->hi);
        g_array_remove_index(l->ranges, i);
    }
    g_array_insert_val(l->ranges, i, add);
}

/* --- lanes ----------------------------------------------------------------- */

static Lane *lane_for(JetLanes *l, const char *key, gsize len)
{
    if (key == NULL) {
        if (l->keyless == NULL)
            l->keyless = g_new0(Lane, 1);
        return l->keyless;
    }
    GBytes *k = g_bytes_new(key, len);
    Lane *ln = g_hash_table_lookup(l->lanes, k);
    if (ln == NULL) {
        ln = g_new0(Lane, 1);
        ln->key = k;
        g_hash_table_insert(l->lanes, k, ln);
    } else {
        g_bytes_unref(k);
    }
    return ln;
}

/* A lane with nothing left in it goes (the keyless one stays). */
static void lane_maybe_drop(JetLanes *l, Lane *ln)
{
    if (ln->entries.length > 0 || ln == l->keyless)
        return;
    if (ln->blocked)
        g_hash_table_remove(l->blocked, ln);
    g_hash_table_remove(l->lanes, ln->key);
}

static void set_state(JetLanes *l, Entry *e, EntryState to);

/* Inserts e by sequence: from the tail, where new sequences go. */
static void lane_insert(JetLanes *l, Lane *ln, Entry *e)
{
    e->lane = ln;
    if (e->state == E_WAITING)
        ln->n_waiting++;   /* set before it had a lane */
    GList *n = ln->entries.tail;
    while (n != NULL && ((Entry *)n->data)->seq > e->seq)
        n = n->prev;
    if (n == NULL) {
        g_queue_push_head(&ln->entries, e);
        e->link = ln->entries.head;
    } else {
        g_queue_insert_after(&ln->entries, n, e);
        e->link = n->next;
    }
    /* Below a head that had its turn but was not taken (a redelivery after
     * a lost ack): that head waits again, the earlier message goes first. */
    Entry *next = e->link->next != NULL ? e->link->next->data : NULL;
    if (e->link == ln->entries.head && next != NULL && next->state == E_READY) {
        g_queue_remove(&l->ready, next);
        set_state(l, next, E_WAITING);
    }
}

/* A lane's share of the held count, after anything in it changed. */
static void lane_recount(JetLanes *l, Lane *ln)
{
    if (ln == NULL)
        return;
    const Entry *head = g_queue_peek_head(&ln->entries);
    guint now = head != NULL && (head->state == E_OUT || head->state == E_GHOST) ? ln->n_waiting : 0;
    l->n_held = l->n_held - ln->held + now;
    ln->held = now;
}

static void set_state(JetLanes *l, Entry *e, EntryState to)
{
    if (e->lane != NULL && e->state == E_WAITING)
        e->lane->n_waiting--;
    if (e->lane != NULL && to == E_WAITING)
        e->lane->n_waiting++;
    switch (e->state) {
    case E_WAITING: l->n_waiting--; break;
    case E_BUSY: l->n_busy--; e->lane->busy--; break;
    case E_OUT: l->n_out--; break;
    case E_GHOST: l->n_ghost--; break;
    case E_READY:
    case E_SETTLED: break;
    }
    e->state = to;
    switch (to) {
    case E_WAITING: l->n_waiting++; break;
    case E_BUSY: l->n_busy++; e->lane->busy++; break;
    case E_OUT: l->n_out++; break;
    case E_GHOST: l->n_ghost++; break;
    case E_READY:
    case E_SETTLED: break;
    }
}

/* The lane's head gets its turn when it is a delivery in hand and nothing
 * below it may be an unsettled message of its key. */
static void lane_turn(JetLanes *l, Lane *ln)
{
    Entry *head = g_queue_peek_head(&ln->entries);
    if (head == NULL || head->state != E_WAITING) {
        if (ln->blocked) {
            ln->blocked = FALSE;
            g_hash_table_remove(l->blocked, ln);
        }
        return;
    }
    if (head->seq >= frontier(l)) {
        if (!ln->blocked) {
            ln->blocked = TRUE;
            g_hash_table_add(l->blocked, ln);
        }
        return;
    }
    if (ln->blocked) {
        ln->blocked = FALSE;
        g_hash_table_remove(l->blocked, ln);
    }
    /* A later message of the lane is in a handler (it had its turn before
     * this earlier one came back): one at a time, so this one waits for
     * its settlement. */
    if (ln->busy > 0)
        return;
    set_state(l, head, E_READY);
    g_queue_push_tail(&l->ready, head);
}

static void lane_update(JetLanes *l, Lane *ln)
{
    lane_turn(l, ln);
    lane_recount(l, ln);
}

static gint head_cmp(gconstpointer a, gconstpointer b)
{
    const Entry *x = g_queue_peek_head((GQueue *)&((const Lane *)a)->entries);
    const Entry *y = g_queue_peek_head((GQueue *)&((const Lane *)b)->entries);
    if (x == NULL || y == NULL)
        return (x != NULL) - (y != NULL);
    return x->seq < y->seq ? -1 : x->seq > y->seq ? 1 : 0;
}

/* The frontier moved up: every blocked lane looks again, in stream order
 * of their heads (not the hash table's, which follows addresses), so
 * lanes freed together are handed out in the order their messages came. */
static void unblock(JetLanes *l)
{
    if (g_hash_table_size(l->blocked) == 0)
        return;
    GList *lanes = g_list_sort(g_hash_table_get_keys(l->blocked), head_cmp);
    for (GList *n = lanes; n != NULL; n = n->next)
        lane_update(l, n->data);
    g_list_free(lanes);
}

static void entry_remove(JetLanes *l, Entry *e)
{
    Lane *ln = e->lane;
    if (ln != NULL) {
        g_queue_delete_link(&ln->entries, e->link);
        e->link = NULL;
    }
    set_state(l, e, E_SETTLED);
    guint64 seq = e->seq;
    g_tree_remove(l->entries, &seq);   /* frees e */
    if (ln != NULL) {
        lane_update(l, ln);
        lane_maybe_drop(l, ln);
    }
}

/* --- deliveries ------------------------------------------------------------ */

gpointer jet_lanes_offer(JetLanes *l, const char *key, gsize len, guint64 seq, gboolean first, gpointer item)
{
    guint64 was = frontier(l);
    if (first) {
        if (l->gap_open) {
            /* The lost delivery, if it was a first one, lies in between. */
            l->gap_open = FALSE;
            ranges_add(l, l->gap_from, seq - 1);
        }
        l->last_first = MAX(l->last_first, seq);
    } else if (l->gap_open && seq > l->gap_from) {
        /* A redelivery past every first delivery seen: it was a first
         * delivery, lost.  Others may be lost below it (unknown now) and
         * past it (the gap stays open there); waiting for the next first
         * delivery instead would hold it forever on an idle stream. */
        ranges_add(l, l->gap_from, seq - 1);
        l->gap_from = seq;
        l->last_first = MAX(l->last_first, seq);
    }
    Entry *e = find(l, seq);
    gpointer replaced = NULL;
    if (e == NULL) {
        e = g_new0(Entry, 1);
        e->seq = seq;
        e->state = E_SETTLED;
        g_tree_insert(l->entries, &e->seq, e);
        set_state(l, e, E_WAITING);
        e->item = item;
        lane_insert(l, lane_for(l, key, len), e);
    } else {
        switch (e->state) {
        case E_WAITING:
        case E_READY:
            replaced = e->item;
            e->item = item;
            break;
        case E_BUSY:
            if (e->again != NULL)
                replaced = e->again;
            e->again = item;
            return replaced;
        case E_OUT:
        case E_GHOST:
            set_state(l, e, E_WAITING);
            e->item = item;
            break;
        case E_SETTLED:
            /* Settled here, and the server sent it again (an ack that did
             * not arrive): it goes through its lane once more. */
            set_state(l, e, E_WAITING);
            e->item = item;
            lane_insert(l, lane_for(l, key, len), e);
            break;
        }
    }
    lane_update(l, e->lane);
    /* Known now: the frontier may have moved past it (only then can a
     * blocked lane go on, so the common case walks nothing). */
    if (frontier(l) != was)
        unblock(l);
    return replaced;
}

gpointer jet_lanes_take(JetLanes *l, guint64 *seq)
{
    Entry *e = g_queue_pop_head(&l->ready);
    if (e == NULL)
        return NULL;
    set_state(l, e, E_BUSY);
    if (seq != NULL)
        *seq = e->seq;
    return e->item;
}

gpointer jet_lanes_peek(JetLanes *l)
{
    Entry *e = g_queue_peek_head(&l->ready);
    return e != NULL ? e->item : NULL;
}

void jet_lanes_settled(JetLanes *l, gpointer item, guint64 seq, JetLaneSettled how, gint64 due_us)
{
    Entry *e = find(l, seq);
    if (e == NULL || e->state != E_BUSY || e->item != item)
        return;
    e->item = NULL;
    if (e->again != NULL) {
        /* Sent again while it ran: that delivery is the lane's head now. */
        e->item = e->again;
        e->again = NULL;
        set_state(l, e, E_WAITING);
        lane_update(l, e->lane);
        return;
    }
    if (how == JET_LANE_OUT) {
        set_state(l, e, E_OUT);
        e->due_us = due_us;
        /* An earlier message behind it may have waited for it to leave the handler. */
        lane_update(l, e->lane);
        return;
    }
    if (in_ranges(l, seq)) {
        /* Inside a recovery range: remembered as settled until the floor
         * passes it, so it is never read back as an unknown. */
        Lane *ln = e->lane;
        set_state(l, e, E_SETTLED);
        g_queue_delete_link(&ln->entries, e->link);
        e->link = NULL;
        e->lane = NULL;
        lane_update(l, ln);
        lane_maybe_drop(l, ln);
        return;
    }
    entry_remove(l, e);
}

/* --- recovery -------------------------------------------------------------- */

void jet_lanes_recover(JetLanes *l, guint64 floor, guint64 delivered)
{
    ranges_add(l, floor, delivered);
    l->last_first = MAX(l->last_first, delivered);
    unblock(l);
}

void jet_lanes_gap(JetLanes *l)
{
    if (!l->gap_open) {
        l->gap_open = TRUE;
        l->gap_from = l->last_first;
    }
    /* Heads past it are held back now (lane_update looks at the frontier). */
}

gboolean jet_lanes_next_unresolved(JetLanes *l, guint64 *seq)
{
    if (g_hash_table_size(l->blocked) == 0)
        return FALSE;
    ranges_skip_known(l);
    if (l->ranges->len == 0)
        return FALSE;
    *seq = g_array_index(l->ranges, Range, 0).lo;
    return TRUE;
}

void jet_lanes_resolve(JetLanes *l, guint64 seq, gboolean pending, const char *key, gsize len)
{
    ranges_skip_known(l);
    if (l->ranges->len == 0)
        return;
    Range *r = &g_array_index(l->ranges, Range, 0);
    if (r->lo != seq)
        return;   /* only the lowest is read, in order */
    r->lo++;
    if (r->lo > r->hi)
        g_array_remove_index(l->ranges, 0);
    if (pending) {
        Entry *e = g_new0(Entry, 1);
        e->seq = seq;
        e->state = E_SETTLED;
        g_tree_insert(l->entries, &e->seq, e);
        set_state(l, e, E_GHOST);
        lane_insert(l, lane_for(l, key, len), e);
        lane_update(l, e->lane);
    }
    unblock(l);
}

typedef struct {
    guint64 floor;
    GPtrArray *gone;
} Passed;

static gboolean collect_passed(gpointer key, gpointer value, gpointer data)
{
    Passed *p = data;
    Entry *e = value;
    if (*(guint64 *)key > p->floor)
        return TRUE;
    if (e->state == E_OUT || e->state == E_GHOST || e->state == E_SETTLED)
        g_ptr_array_add(p->gone, e);
    return FALSE;
}

void jet_lanes_floor(JetLanes *l, guint64 floor)
{
    /* The unknown at or below the floor is settled, whoever settled it. */
    while (l->ranges->len > 0) {
        Range *r = &g_array_index(l->ranges, Range, 0);
        if (r->lo > floor)
            break;
        if (r->hi <= floor) {
            g_array_remove_index(l->ranges, 0);
        } else {
            r->lo = floor + 1;
            break;
        }
    }
    if (l->gap_open && l->gap_from < floor)
        l->gap_from = floor;
    Passed p = { floor, g_ptr_array_new() };
    g_tree_foreach(l->entries, collect_passed, &p);
    for (guint i = 0; i < p.gone->len; i++)
        entry_remove(l, g_ptr_array_index(p.gone, i));
    g_ptr_array_unref(p.gone);
    unblock(l);
}

/* --- counts ----------------------------------------------------------------- */

void jet_lanes_counts(const JetLanes *l, JetLaneCounts *out)
{
    memset(out, 0, sizeof *out);
    out->lanes = g_hash_table_size(l->lanes) + (l->keyless != NULL && l->keyless->entries.length > 0 ? 1 : 0);
    out->ready = l->ready.length;
    out->busy = l->n_busy;
    out->waiting = l->n_waiting;
    out->held = l->n_held;
    out->out = l->n_out;
    out->unknown_heads = l->n_ghost;
    out->blocked_on_unknown = g_hash_table_size(l->blocked) > 0;
}

static guint lane_due(const Lane *ln, gint64 now_us)
{
    const Entry *head = g_queue_peek_head((GQueue *)&ln->entries);
    if (head == NULL)
        return 0;
    return head->state == E_GHOST || (head->state == E_OUT && head->due_us <= now_us) ? 1 : 0;
}

guint jet_lanes_due(const JetLanes *l, gint64 now_us)
{
    if (l->n_out == 0 && l->n_ghost == 0)
        return 0;
    guint n = l->keyless != NULL ? lane_due(l->keyless, now_us) : 0;
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, l->lanes);
    while (g_hash_table_iter_next(&it, NULL, &v))
        n += lane_due(v, now_us);
    return n;
}

gboolean jet_lanes_describe(const JetLanes *l, guint64 seq, char **key, const char **state, guint *behind)
{
    const Entry *e = find(l, seq);
    if (e == NULL || e->lane == NULL)
        return FALSE;
    static const char *const names[] = {
        [E_WAITING] = "waiting", [E_READY] = "ready", [E_BUSY] = "in a handler",
        [E_OUT] = "given back to the server", [E_GHOST] = "unacked by an earlier run",
        [E_SETTLED] = "settled",
    };
    if (e->lane->key == NULL) {
        *key = g_strdup("(no key)");
    } else {
        gsize n;
        const char *k = g_bytes_get_data(e->lane->key, &n);
        *key = jet_hdr_escape(k, n, 64);
    }
    *state = names[e->state];
    guint n = 0;
    for (GList *x = e->link != NULL ? e->link->next : NULL; x != NULL; x = x->next)
        n++;
    *behind = n;
    return TRUE;
}

gpointer jet_lanes_pop_waiting(JetLanes *l, guint64 *seq)
{
    Entry *e = g_queue_pop_head(&l->ready);
    if (e == NULL) {
        /* A waiting one: the highest first, so no lane is emptied from the
         * front while it still holds others. */
        GList *lanes = g_hash_table_get_values(l->lanes);
        if (l->keyless != NULL)
            lanes = g_list_prepend(lanes, l->keyless);
        for (GList *n = lanes; n != NULL && e == NULL; n = n->next) {
            Lane *ln = n->data;
            for (GList *x = ln->entries.tail; x != NULL && e == NULL; x = x->prev)
                if (((Entry *)x->data)->state == E_WAITING)
                    e = x->data;
        }
        g_list_free(lanes);
        if (e == NULL)
            return NULL;
    }
    gpointer item = e->item;
    if (seq != NULL)
        *seq = e->seq;
    e->item = NULL;
    /* Given back: it holds its lane as any release does. */
    set_state(l, e, E_OUT);
    e->due_us = 0;
    /* Its lane no longer waits on an unknown for it. */
    lane_update(l, e->lane);
    return item;
}
