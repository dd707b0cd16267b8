/* memory.c — whether a run fits in what this process may use, checked
 * before kgl train, eval, grad and heads allocate, and the refusal that
 * says what would fit instead; and the report when an allocation fails all
 * the same (data/report/manual.md, "Exit status, limits, interruptions, in
 * full"). The estimate is kgl_memory_needed's (src/model/train.c), the
 * room kgl_memory_available's (src/engine/machine.c). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* "412 MB" below a gigabyte ("41.2 MB" below 100 MB), else "1.3 GB". */
static const char *amount(double bytes, char *buf, size_t cap)
{
    if (bytes < 1e8) snprintf(buf, cap, "%.1f MB", bytes / 1e6);
    else if (bytes < 0.95e9) snprintf(buf, cap, "%.0f MB", bytes / 1e6);
    else snprintf(buf, cap, "%.1f GB", bytes / 1e9);
    return buf;
}

/* What this process may use: resident (the least of the limits but the
   address space's, kgl_memory_available), and mapped (ulimit -v's). */
typedef struct memory_room {
    double resident, address_space;
    const char *limit; /* the one that binds, NULL: the machine's memory */
} memory_room;

static bool fits(const kgl_memory_run *r, size_t value_bytes, const memory_room *room)
{
    kgl_memory_need need;
    kgl_memory_needed(r, value_bytes, &need);
    return need.resident <= room->resident && need.address_space <= room->address_space;
}

/* What would fit in `have`, each change alone: the largest width, batch
   and ensemble that do, float32 and the neighbourhood context when their
   estimates do; written to `s` as "--dim 256, --batch 512 or --precision
   f32 (...)". Returns how many. */
static int what_fits(const kgl_memory_run *r, const memory_room *have, char *s, size_t cap)
{
    char found[5][160];
    int n = 0;
    kgl_memory_run t = *r;
    /* widths the model accepts: multiples of --heads (even for the complex readout) */
    for (t.cfg.dim = r->cfg.dim - 1; t.cfg.dim >= 1; t.cfg.dim--)
        if (!kgl_config_error(&t.cfg) && fits(&t, sizeof(kgl_real), have)) {
            snprintf(found[n++], sizeof found[0], "--dim %d", t.cfg.dim);
            break;
        }
    t = *r;
    long examples = r->cfg.reciprocal ? 2 * r->n_train : r->n_train;
    long lo = 0, hi = r->tc.batch < examples ? r->tc.batch : examples; /* lo fits (0: none found), hi does not */
    while (hi - lo > 1) {
        t.tc.batch = (int)((lo + hi) / 2);
        if (fits(&t, sizeof(kgl_real), have)) lo = t.tc.batch;
        else hi = t.tc.batch;
    }
    if (lo > 0) snprintf(found[n++], sizeof found[0], "--batch %ld", lo);
    t = *r;
    for (t.members = r->members - 1; t.members >= 1; t.members--)
        if (fits(&t, sizeof(kgl_real), have)) {
            snprintf(found[n++], sizeof found[0], "--ensemble %d", t.members);
            break;
        }
    if (sizeof(kgl_real) == 8 && fits(r, 4, have))
        snprintf(found[n++], sizeof found[0], "--precision f32 (every value in 4 bytes, not 8)");
    t = *r;
    t.cfg.context = KGL_CONTEXT_GRAPH;
    if (r->cfg.context == KGL_CONTEXT_FULL && fits(&t, sizeof(kgl_real), have))
        snprintf(found[n++], sizeof found[0], "--context graph (each entity attends over its neighbourhood in the "
                                               "training graph, not over every entity: nothing of size n x n)");
    size_t used = 0;
    s[0] = 0;
    for (int k = 0; k < n && used < cap; k++)
        used += (size_t)snprintf(s + used, cap - used, "%s%s", k == 0 ? "" : k + 1 < n ? ", " : " or ", found[k]);
    return n;
}

bool memory_fits(const char *cmd, const kgl_memory_run *r, bool say)
{
    kgl_memory_need need;
    kgl_memory_needed(r, sizeof(kgl_real), &need);
    memory_room room;
    room.resident = kgl_memory_available(&room.limit);
    room.address_space = kgl_memory_override() > 0 ? INFINITY : kgl_memory_rlimit_headroom();
    /* the one said: the estimate and the room that refuse it, or the resident ones */
    double shown = need.resident, have = room.resident;
    const char *limit = room.limit;
    if (need.address_space > room.address_space && need.resident <= room.resident)
        shown = need.address_space, have = room.address_space, limit = "its address-space limit (ulimit -v)";
    char of[64] = "", a[32], b[32], c[32];
    if (r->members > 1) snprintf(of, sizeof of, " for %d models", r->members);
    if (fits(r, sizeof(kgl_real), &room)) {
        if (say && shown >= MEMORY_SAY_FROM) {
            fprintf(stderr, "kgl %s: this run needs about %s%s (an estimate, a little above what it uses)", cmd,
                    amount(shown, a, sizeof a), of);
            if (isfinite(have))
                fprintf(stderr, " of the %s available%s%s", amount(have, b, sizeof b), limit ? " under " : "",
                        limit ? limit : "");
            fputc('\n', stderr);
        }
        return true;
    }
    char who[160];
    if (limit) snprintf(who, sizeof who, "this process has %s available under %s", amount(have, b, sizeof b), limit);
    else snprintf(who, sizeof who, "this machine has %s available", amount(have, b, sizeof b));
    char parts[160];
    int k = snprintf(parts, sizeof parts, "parameters and optimiser state %s", amount(need.parameters, c, sizeof c));
    if (r->cfg.context == KGL_CONTEXT_FULL)
        snprintf(parts + k, sizeof parts - (size_t)k, ", attention %s for %d entities and %d heads",
                 amount(need.attention, a, sizeof a), r->cfg.n_entities, r->cfg.heads);
    char hint[1024] = "";
    const char *lead = "free memory or raise the limit";
    if (r->options && what_fits(r, &room, hint, sizeof hint) > 0) lead = "it fits with ";
    else if (r->options) lead = "nothing smaller in --dim, --batch or --ensemble fits: free memory or raise the limit";
    fprintf(stderr, "kgl %s: this run needs about %s%s (%s), %s; %s%s\n", cmd, amount(shown, a, sizeof a), of, parts,
            who, lead, hint);
    return false;
}

/* ---- when an allocation fails all the same ----------------------------------- */

void out_of_memory(const char *what, size_t bytes)
{
    /* members train on threads of their own: one reports, the others wait
       for the exit */
    static atomic_flag reporting = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&reporting))
        for (;;) pause();
    kgl_tmp_remove_all();
    fprintf(stderr,
            "kgl: out of memory: %s (%zu bytes); the run needs more memory than this process may use (free memory, "
            "ulimit -v, a container's limit): try a smaller --dim, --ffn, --heads or --batch\n",
            what, bytes);
    exit(EXIT_USAGE);
}
