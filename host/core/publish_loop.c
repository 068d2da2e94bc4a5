/* Loops through bindings' publishes (publish_loop.h). */
#include "publish_loop.h"

#include "subject_overlap.h"

#include <string.h>

void jet_publish_loop_free(JetPublishLoop *l)
{
    if (l == NULL)
        return;
    g_free(l->binding);
    g_free(l->message);
    g_free(l);
}

/* A stream's subjects: the server's for a stream it has (an existing stream
 * is never reshaped, docs/configuration.md "subjects"), else those a
 * managed binding of the config creates it with; NULL when neither. */
static char **stream_subjects(const JetConfig *cfg, const char *stream, JetStreamSubjectsFn server, void *data)
{
    char **s = server != NULL ? server(stream, data) : NULL;
    if (s != NULL)
        return s;
    for (guint i = 0; i < cfg->bindings->len; i++) {
        const JetBindingConfig *b = g_ptr_array_index(cfg->bindings, i);
        if (b->manage == JET_MANAGE_CREATE && b->subjects != NULL && g_strcmp0(b->stream, stream) == 0)
            return g_strdupv(b->subjects);
    }
    return NULL;
}

/* The shipped forward plugin, by the name the binding gives it: "forward",
 * or a path to forward.so (docs/plugins.md, "forward"). */
static gboolean is_forward_plugin(const char *plugin)
{
    g_autofree char *base = g_path_get_basename(plugin);
    return strcmp(base, "forward") == 0 || strcmp(base, "forward.so") == 0;
}

/* The forward plugin's template as a pattern: a token {token:N} fills is
 * one token (`*`); {subject} and {header:NAME} may fill several (a header
 * value may hold dots), so from their token on anything follows (`>`). */
static char *template_pattern(const char *tmpl)
{
    g_auto(GStrv) tokens = g_strsplit(tmpl, ".", -1);
    g_autoptr(GString) out = g_string_new(NULL);
    for (gsize i = 0; tokens[i] != NULL; i++) {
        const char *t = tokens[i];
        if (i > 0)
            g_string_append_c(out, '.');
        if (strstr(t, "{subject}") != NULL || strstr(t, "{header:") != NULL) {
            g_string_append_c(out, '>');
            break;
        }
        g_string_append(out, strstr(t, "{token:") != NULL ? "*" : t);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

char **jet_publish_targets(const JetConfig *cfg, const JetBindingConfig *b, JetStreamSubjectsFn server, void *data)
{
    GPtrArray *out = g_ptr_array_new();
    const char *tmpl = is_forward_plugin(b->plugin) ? g_hash_table_lookup(b->options, "subject") : NULL;
    if (tmpl != NULL && *tmpl != '\0')
        g_ptr_array_add(out, template_pattern(tmpl));
    for (gsize i = 0; b->publish_streams != NULL && b->publish_streams[i] != NULL; i++) {
        g_auto(GStrv) subjects = stream_subjects(cfg, b->publish_streams[i], server, data);
        for (gsize k = 0; subjects != NULL && subjects[k] != NULL; k++)
            g_ptr_array_add(out, g_strdup(subjects[k]));
    }
    g_ptr_array_add(out, NULL);
    return (char **)g_ptr_array_free(out, FALSE);
}

/* One binding as the check sees it. */
typedef struct {
    const JetBindingConfig *b;
    char **targets;        /* what it publishes to */
    char **consumed;       /* its stream's subjects; NULL: not known */
} Node;

/* Why `from` feeds `to`: the first target of from that to's stream
 * captures and to's filter lets through, or NULL. */
static char *edge(const Node *from, const Node *to)
{
    if (to->consumed == NULL)
        return NULL;
    const char *filter = to->b->filter_subject;
    g_autofree char *subjects = g_strjoinv(", ", to->consumed);
    for (gsize t = 0; from->targets[t] != NULL; t++)
        for (gsize s = 0; to->consumed[s] != NULL; s++)
            if (jet_subject_overlaps(from->targets[t], to->consumed[s]) &&
                (filter == NULL || jet_subject_overlaps(from->targets[t], filter)))
                return g_strdup_printf("binding %s publishes %s into stream %s (subjects %s), which binding %s "
                                       "consumes", from->b->name, from->targets[t], to->b->stream,
                                       subjects, to->b->name);
    return NULL;
}

/* The shortest cycle from i back to i through bindings after i alone (so
 * each cycle is found once, from its first binding), as the bindings in
 * order, or NULL. */
static GArray *shortest_cycle(char **edges, guint n, guint i)
{
    g_autofree gint *prev = g_new(gint, n);
    for (guint k = 0; k < n; k++)
        prev[k] = -1;
    g_autoptr(GArray) queue = g_array_new(FALSE, FALSE, sizeof(guint));
    g_array_append_val(queue, i);
    for (guint q = 0; q < queue->len; q++) {
        guint at = g_array_index(queue, guint, q);
        for (guint to = i; to < n; to++) {
            if (edges[at * n + to] == NULL || (to != i && prev[to] >= 0) || (to == i && at == i))
                continue;
            prev[to] = (gint)at;
            if (to == i) {
                GArray *cycle = g_array_new(FALSE, FALSE, sizeof(guint));
                for (gint k = prev[i]; (guint)k != i; k = prev[k])
                    g_array_prepend_val(cycle, k);
                g_array_prepend_val(cycle, i);
                return cycle;
            }
            g_array_append_val(queue, to);
        }
    }
    return NULL;
}

static JetPublishLoop *loop_new(const Node *nodes, char **edges, guint n, const GArray *cycle)
{
    JetPublishLoop *l = g_new0(JetPublishLoop, 1);
    guint first = g_array_index(cycle, guint, 0);
    l->binding = g_strdup(nodes[first].b->name);
    g_autoptr(GString) m = g_string_new(NULL);
    for (guint k = 0; k < cycle->len; k++) {
        guint from = g_array_index(cycle, guint, k), to = g_array_index(cycle, guint, (k + 1) % cycle->len);
        g_string_append_printf(m, "%s%s", k > 0 ? "; " : "", edges[from * n + to]);
    }
    g_string_append_printf(m, ": %s; break the loop, or set allow_loop = true on %s if it is meant "
                           "(docs/forwarding.md)",
                           cycle->len == 1 ? "every forward comes back to it" : "the forwards go round",
                           cycle->len == 1 ? "it" : "one of them");
    l->message = g_string_free(g_steal_pointer(&m), FALSE);
    return l;
}

GPtrArray *jet_publish_loops(const JetConfig *cfg, JetStreamSubjectsFn server, void *data)
{
    GPtrArray *loops = g_ptr_array_new_with_free_func((GDestroyNotify)jet_publish_loop_free);
    guint n = cfg->bindings->len;
    g_autofree Node *nodes = g_new0(Node, n);
    for (guint i = 0; i < n; i++) {
        nodes[i].b = g_ptr_array_index(cfg->bindings, i);
        nodes[i].targets = jet_publish_targets(cfg, nodes[i].b, server, data);
        nodes[i].consumed = stream_subjects(cfg, nodes[i].b->stream, server, data);
    }
    /* edges[from * n + to]: why from feeds to.  A binding that allows a
     * loop is left out: every loop through it is its operator's intent. */
    g_autofree char **edges = g_new0(char *, (gsize)n * n);
    for (guint from = 0; from < n; from++)
        for (guint to = 0; to < n; to++)
            if (!nodes[from].b->allow_loop && !nodes[to].b->allow_loop)
                edges[from * n + to] = edge(&nodes[from], &nodes[to]);
    for (guint i = 0; i < n; i++) {
        GArray *cycle = NULL;
        if (edges[i * n + i] != NULL) {
            cycle = g_array_new(FALSE, FALSE, sizeof(guint));
            g_array_append_val(cycle, i);
        } else {
            cycle = shortest_cycle(edges, n, i);
        }
        if (cycle != NULL)
            g_ptr_array_add(loops, loop_new(nodes, edges, n, cycle));
        if (cycle != NULL)
            g_array_unref(cycle);
    }
    for (guint k = 0; k < (guint)n * n; k++)
        g_free(edges[k]);
    for (guint i = 0; i < n; i++) {
        g_strfreev(nodes[i].targets);
        g_strfreev(nodes[i].consumed);
    }
    return loops;
}
