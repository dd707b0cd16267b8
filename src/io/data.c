/* data.c — triples files and entity-type files (README, "The model, exactly").
 *
 * Every file goes through the line reader of text.c, which already rejects a
 * NUL byte, invalid UTF-8 and a line over KGL_LINE_MAX, skips blank and '#'
 * lines and drops a trailing \r. This file checks the fields, gives names ids
 * and builds the filter index of the evaluation protocol.
 *
 * Loading is two passes. While reading, names get temporary ids in order of
 * first appearance (stb_ds string maps) and a per-file hash set of triples
 * drops repeats. Once every file is read, the names are sorted by byte order
 * (strcmp), a name's final id is its rank, and the triples are renumbered. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/io.h"
#include "engine/internal.h"

/* stb_ds's hm* macros spell GNU `typeof`, which gcc does not accept under
 * -std=c11; __typeof__ is the same operator under every standard. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(typeof)
#define typeof __typeof__
#endif
#include "stb_ds.h"

static bool open_source(kgl_text *t, const kgl_source *s, char *err, size_t err_cap)
{
    if (s->text) {
        kgl_text_from_memory(t, s->path ? s->path : "(memory)", s->text, s->len);
        return true;
    }
    if (!s->path) kgl_die("data: a source has neither a path nor text");
    return kgl_text_open(t, s->path, err, err_cap);
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

static bool all_whitespace(const char *s)
{
    for (; *s; s++)
        if (!is_blank(*s)) return false;
    return true;
}

/* Whether each of the n fields (those kept of a line) is whitespace only. */
static bool blank_line(char *const *f, int n)
{
    for (int k = 0; k < n; k++)
        if (!all_whitespace(f[k])) return false;
    return true;
}

/* "expected 3 tab-separated fields (head, relation, tail), found 2", with a
 * hint when the line is whitespace, or its one field holds spaces, or it
 * holds commas (a CSV file). */
static void field_count_error(const kgl_text *t, int want, const char *names, char *const *f, int found, int kept,
                              char *err, size_t err_cap)
{
    const char *hint = "";
    bool commas = false;
    for (int k = 0; k < kept; k++) commas = commas || strchr(f[k], ',');
    if (blank_line(f, kept))
        hint = " (the line is only whitespace)";
    else if (commas)
        hint = " (fields are separated by tabs, not commas: is it a CSV file?)";
    else if (found == 1 && strchr(f[0], ' '))
        hint = " (fields are separated by tabs, not spaces)";
    snprintf(err, err_cap, "%s:%d: expected %d tab-separated fields (%s), found %d%s", t->name, t->lineno, want,
             names, found, hint);
}

/* Names are never trimmed, so "Paris " beside "Paris" would be a second
 * entity, silently: a field that is empty, or starts or ends with
 * whitespace, is refused. */
static bool check_fields(const kgl_text *t, char *const *f, int n, const char *const *field_name, char *err,
                         size_t err_cap)
{
    if (blank_line(f, n)) {
        snprintf(err, err_cap, "%s:%d: the line is only whitespace (an empty line is skipped; this one is not empty)",
                 t->name, t->lineno);
        return false;
    }
    for (int k = 0; k < n; k++) {
        size_t len = strlen(f[k]);
        if (len == 0) {
            snprintf(err, err_cap, "%s:%d: empty %s field", t->name, t->lineno, field_name[k]);
            return false;
        }
        if (all_whitespace(f[k])) {
            snprintf(err, err_cap, "%s:%d: the %s '%s' is only whitespace", t->name, t->lineno, field_name[k], f[k]);
            return false;
        }
        bool starts = is_blank(f[k][0]);
        char c = starts ? f[k][0] : f[k][len - 1];
        if (starts || is_blank(c)) {
            const char *what = c == ' '    ? "a space"
                               : c == '\t' ? "a tab"
                               : c == '\r' ? "a carriage return"
                                           : "whitespace";
            size_t a = 0, b = len;
            while (is_blank(f[k][a])) a++;
            while (is_blank(f[k][b - 1])) b--;
            snprintf(err, err_cap, "%s:%d: the %s '%s' %s with %s; names are never trimmed, so '%s' and '%.*s' "
                     "would be two names: remove the whitespace", t->name, t->lineno, field_name[k], f[k],
                     starts ? "starts" : "ends", what, f[k], (int)(b - a), f[k] + a);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------- header -- */

/* A header line is skipped with a warning rather than refused: writing
   column names is what pandas and most exporters do, so refusing would make
   every such file a chore, while a genuine first triple made only of column
   words ("head", "relation", "tail" as names) is rare and is not silently
   lost: the caller prints the line it skipped, file:line, even with
   --quiet. A line in which any field is an ordinary name is data. */
static const char *const triple_columns[] = {"head",   "relation", "tail", "subject", "predicate",     "object",
                                             "source", "target",   "h",    "r",       "t",             "s",
                                             "p",      "o",        "rel",  "relation_type", "from",    "to",
                                             "src",    "dst"};
static const char *const type_columns[] = {"entity", "type", "name", "class", "category", "label", "node"};

static bool is_column_word(const char *field, const char *const *words, size_t n_words)
{
    for (size_t k = 0; k < n_words; k++) {
        const char *a = field, *b = words[k];
        while (*a && *b && (*a == *b || (*a >= 'A' && *a <= 'Z' && *a - 'A' + 'a' == *b))) a++, b++;
        if (!*a && !*b) return true;
    }
    return false;
}

bool kgl_is_header_line(char *const *fields, int n)
{
    const char *const *words = n == 3 ? triple_columns : type_columns;
    size_t n_words = n == 3 ? sizeof triple_columns / sizeof *triple_columns : sizeof type_columns / sizeof *type_columns;
    if (n != 2 && n != 3) return false;
    for (int k = 0; k < n; k++)
        if (!is_column_word(fields[k], words, n_words)) return false;
    return true;
}

/* ------------------------------------------------------------- triples -- */

bool kgl_inverse_name(const char *name)
{
    size_t n = strlen(name), k = strlen(KGL_INVERSE_SUFFIX);
    return n >= k && strcmp(name + n - k, KGL_INVERSE_SUFFIX) == 0;
}

typedef struct name_entry {
    char *key;
    int value; /* temporary id: order of first appearance */
} name_entry;

typedef struct triple_entry {
    kgl_triple key; /* temporary ids */
    int value;      /* line of its first occurrence */
} triple_entry;

static int intern(name_entry **map, const char *name)
{
    ptrdiff_t i = shgeti(*map, name);
    if (i >= 0) return (*map)[i].value;
    int id = (int)shlen(*map);
    shput(*map, name, id);
    return id;
}

/* Reads one file: its unique triples (temporary ids) are appended to *raw. */
static bool read_triples(const kgl_source *src, name_entry **ents, name_entry **rels, kgl_split *sp,
                         kgl_triple **raw, int **lines, char *err, size_t err_cap)
{
    static const char *const field_name[3] = {"head", "relation", "tail"};
    kgl_text t;
    if (!open_source(&t, src, err, err_cap)) return false;
    sp->path = kgl_strdup(t.name);
    triple_entry *seen = NULL;
    bool ok = false;
    char *f[3];
    int nf, rc;
    while ((rc = kgl_text_next(&t, '\t', f, 3, &nf, err, err_cap)) == 1) {
        if (nf != 3) {
            field_count_error(&t, 3, "head, relation, tail", f, nf, nf < 3 ? nf : 3, err, err_cap);
            goto done;
        }
        if (!check_fields(&t, f, 3, field_name, err, err_cap)) goto done;
        if (kgl_inverse_name(f[1])) {
            snprintf(err, err_cap, "%s:%d: the relation '%s' ends with '" KGL_INVERSE_SUFFIX "', which names the "
                     "inverse of a relation (kgl export, kgl heads --query): rename it", t.name, t.lineno, f[1]);
            goto done;
        }
        if (arrlen(*raw) == 0 && sp->n_duplicates == 0 && !sp->header_line && kgl_is_header_line(f, 3)) {
            sp->header_line = t.lineno;
            sp->header = kgl_join(f, 3, '\t');
            continue;
        }
        kgl_triple tr;
        tr.head = intern(ents, f[0]);
        tr.rel = intern(rels, f[1]);
        tr.tail = intern(ents, f[2]);
        ptrdiff_t i = hmgeti(seen, tr);
        if (i >= 0) {
            if (sp->n_duplicates++ == 0) sp->first_duplicate_line = t.lineno;
            continue;
        }
        hmput(seen, tr, t.lineno);
        arrput(*raw, tr);
        arrput(*lines, t.lineno);
    }
    if (rc < 0) goto done;
    if (arrlen(*raw) == 0) {
        if (sp->header_line)
            snprintf(err, err_cap, "%s: no triples (line %d, the only one, was taken as column names)", t.name,
                     sp->header_line);
        else
            snprintf(err, err_cap, "%s: no triples", t.name);
        goto done;
    }
    ok = true;
done:
    hmfree(seen);
    kgl_text_close(&t);
    return ok;
}

static int cmp_name_entry(const void *a, const void *b)
{
    return strcmp(((const name_entry *)a)->key, ((const name_entry *)b)->key);
}

/* Sorts the names of `map` by byte order: fills names[id] (owned copies) and
 * final[temporary id] = id. */
static char **assign_ids(const name_entry *map, int **final)
{
    int n = (int)shlen(map);
    name_entry *sorted = kgl_xmalloc((size_t)n * sizeof *sorted);
    memcpy(sorted, map, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_name_entry);
    char **names = kgl_xmalloc((size_t)n * sizeof *names);
    *final = kgl_xmalloc((size_t)n * sizeof **final);
    for (int id = 0; id < n; id++) {
        names[id] = kgl_strdup(sorted[id].key);
        (*final)[sorted[id].value] = id;
    }
    free(sorted);
    return names;
}

/* The CSR filter index: key (e, r) = e * 2m + r; for each triple (h, r, t)
 * of any split, t is known for (h, r) and h for (t, m + r). Counting sort by
 * key, then each key's entities are sorted and repeats (a triple in two
 * splits) dropped. */
static void build_known(kgl_dataset *ds)
{
    const int m2 = 2 * ds->n_relations;
    const size_t n_keys = (size_t)ds->n_entities * (size_t)m2;
    size_t total = 0;
    for (int s = 0; s < ds->n_splits; s++) total += 2 * (size_t)ds->splits[s].n;
    int *count = kgl_xcalloc_for(n_keys + 1, sizeof *count, "the filter index");
    int *all = kgl_xmalloc(total * sizeof *all);
    for (int s = 0; s < ds->n_splits; s++) {
        const kgl_split *sp = &ds->splits[s];
        for (int i = 0; i < sp->n; i++) {
            count[(size_t)sp->triples[i].head * m2 + sp->triples[i].rel + 1]++;
            count[(size_t)sp->triples[i].tail * m2 + ds->n_relations + sp->triples[i].rel + 1]++;
        }
    }
    for (size_t k = 0; k < n_keys; k++) count[k + 1] += count[k]; /* count[k] = start of key k */
    int *fill = kgl_xmalloc(n_keys * sizeof *fill);
    memcpy(fill, count, n_keys * sizeof *fill);
    for (int s = 0; s < ds->n_splits; s++) {
        const kgl_split *sp = &ds->splits[s];
        for (int i = 0; i < sp->n; i++) {
            const kgl_triple *tr = &sp->triples[i];
            all[fill[(size_t)tr->head * m2 + tr->rel]++] = tr->tail;
            all[fill[(size_t)tr->tail * m2 + ds->n_relations + tr->rel]++] = tr->head;
        }
    }
    free(fill);
    /* sort each key's entities and compact them, dropping repeats */
    int *off = count; /* reused in place: off[k] becomes the compacted start */
    int out = 0, start = 0;
    for (size_t k = 0; k < n_keys; k++) {
        int end = off[k + 1];
        if (end - start > 1) qsort(all + start, (size_t)(end - start), sizeof *all, kgl_cmp_int);
        off[k] = out;
        for (int j = start; j < end; j++) /* out <= j: never overwrites what is still to be read */
            if (j == start || all[j] != all[out - 1]) all[out++] = all[j];
        start = end;
    }
    off[n_keys] = out;
    ds->known_offsets = off;
    ds->known = all;
}

/* Marks `id` as met in split `s` (stamp[id] == s + 1); true the first time. */
static bool first_meeting(int *stamp, int id, int s)
{
    if (stamp[id] == s + 1) return false;
    stamp[id] = s + 1;
    return true;
}

/* The hygiene counts of every split after the first against the first
   (train), on the temporary ids (shared by all files): triples also in
   train, and triples naming an entity or relation train never names, with
   the first few such names (temporary ids; renumbered by the caller). */
static void compare_with_train(kgl_dataset *ds, kgl_triple *const *raw, int *const *lines, int n_src, size_t n,
                               size_t m)
{
    if (n_src < 2) return;
    bool *ent_in_train = kgl_xcalloc((size_t)n, sizeof *ent_in_train), *rel_in_train = kgl_xcalloc((size_t)m, 1);
    int *ent_stamp = kgl_xcalloc((size_t)n, sizeof *ent_stamp), *rel_stamp = kgl_xcalloc((size_t)m, sizeof *rel_stamp);
    triple_entry *train = NULL;
    for (ptrdiff_t i = 0; i < arrlen(raw[0]); i++) {
        const kgl_triple tr = raw[0][i];
        ent_in_train[tr.head] = ent_in_train[tr.tail] = rel_in_train[tr.rel] = true;
        hmput(train, tr, 0);
    }
    for (int s = 1; s < n_src; s++) {
        kgl_split *sp = &ds->splits[s];
        for (ptrdiff_t i = 0; i < arrlen(raw[s]); i++) {
            const kgl_triple tr = raw[s][i];
            ptrdiff_t at = hmgeti(train, tr);
            if (at >= 0 && sp->n_in_train++ == 0) sp->first_in_train_line = lines[s][i];
            const int ends[2] = {tr.head, tr.tail};
            bool unseen = false;
            for (int e = 0; e < 2; e++) {
                if (ent_in_train[ends[e]]) continue;
                unseen = true;
                if (first_meeting(ent_stamp, ends[e], s) && sp->n_unseen_entities++ < KGL_UNSEEN_SHOWN)
                    sp->unseen_entity[sp->n_unseen_entities - 1] = ends[e];
            }
            if (!rel_in_train[tr.rel]) {
                unseen = true;
                if (first_meeting(rel_stamp, tr.rel, s) && sp->n_unseen_relations++ < KGL_UNSEEN_SHOWN)
                    sp->unseen_relation[sp->n_unseen_relations - 1] = tr.rel;
            }
            if (unseen && sp->n_unseen++ == 0) sp->first_unseen_line = lines[s][i];
        }
    }
    hmfree(train);
    free(ent_in_train);
    free(rel_in_train);
    free(ent_stamp);
    free(rel_stamp);
}

bool kgl_dataset_load(kgl_dataset *ds, const kgl_source *src, int n_src, char *err, size_t err_cap)
{
    memset(ds, 0, sizeof *ds);
    if (n_src < 1) {
        snprintf(err, err_cap, "no triples files to load");
        return false;
    }
    if (n_src > KGL_MAX_SPLITS) {
        snprintf(err, err_cap, "%d triples files given; at most %d can be loaded together", n_src, KGL_MAX_SPLITS);
        return false;
    }
    name_entry *ents = NULL, *rels = NULL;
    /* The maps keep their own copies of the names, one malloc each
       (sh_new_strdup): stb_ds's string arena (sh_new_arena) writes past its
       blocks' declared `char storage[8]`, which clang's UBSan rightly reports
       as an out-of-bounds index on every triples file (issue 13, defect 4). */
    sh_new_strdup(ents);
    sh_new_strdup(rels);
    kgl_triple *raw[KGL_MAX_SPLITS] = {0};
    int *lines[KGL_MAX_SPLITS] = {0};
    int *ent_id = NULL, *rel_id = NULL;
    size_t n, m, total = 0;
    bool ok = false;

    for (int s = 0; s < n_src; s++) {
        ds->n_splits = s + 1;
        if (!read_triples(&src[s], &ents, &rels, &ds->splits[s], &raw[s], &lines[s], err, err_cap)) goto done;
    }
    /* n·2m + 1 offsets must be addressable and every count must fit an int */
    n = (size_t)shlen(ents);
    m = (size_t)shlen(rels);
    for (int s = 0; s < n_src; s++) total += (size_t)arrlen(raw[s]);
    if (n > (size_t)INT32_MAX || m > (size_t)INT32_MAX / 2 || total > (size_t)INT32_MAX / 2 ||
        n * 2 * m >= SIZE_MAX / sizeof(int)) {
        snprintf(err, err_cap, "%s: too large: %zu entities, %zu relations, %zu triples", ds->splits[0].path, n, m,
                 total);
        goto done;
    }
    compare_with_train(ds, raw, lines, n_src, n, m);
    ds->n_entities = (int)n;
    ds->n_relations = (int)m;
    ds->entity_names = assign_ids(ents, &ent_id);
    ds->relation_names = assign_ids(rels, &rel_id);
    for (int s = 0; s < n_src; s++) {
        kgl_split *sp = &ds->splits[s];
        sp->n = (int)arrlen(raw[s]);
        sp->triples = kgl_xmalloc((size_t)sp->n * sizeof *sp->triples);
        for (int i = 0; i < sp->n; i++) {
            sp->triples[i].head = ent_id[raw[s][i].head];
            sp->triples[i].rel = rel_id[raw[s][i].rel];
            sp->triples[i].tail = ent_id[raw[s][i].tail];
        }
        for (int k = 0; k < sp->n_unseen_entities && k < KGL_UNSEEN_SHOWN; k++)
            sp->unseen_entity[k] = ent_id[sp->unseen_entity[k]];
        for (int k = 0; k < sp->n_unseen_relations && k < KGL_UNSEEN_SHOWN; k++)
            sp->unseen_relation[k] = rel_id[sp->unseen_relation[k]];
    }
    build_known(ds);
    ok = true;
done:
    for (int s = 0; s < KGL_MAX_SPLITS; s++) {
        arrfree(raw[s]);
        arrfree(lines[s]);
    }
    shfree(ents);
    shfree(rels);
    free(ent_id);
    free(rel_id);
    if (!ok) kgl_dataset_free(ds);
    return ok;
}

/* "'a', 'b', 'c'" (and ", ..." when there are more than were kept). */
static void write_names(FILE *f, char *const *names, const int *ids, int n)
{
    for (int k = 0; k < n && k < KGL_UNSEEN_SHOWN; k++) fprintf(f, "%s'%s'", k ? ", " : "", names[ids[k]]);
    if (n > KGL_UNSEEN_SHOWN) fprintf(f, ", ...");
}

void kgl_dataset_write_warnings(FILE *f, const kgl_dataset *ds)
{
    const char *train = ds->splits[0].path;
    for (int s = 0; s < ds->n_splits; s++) {
        const kgl_split *sp = &ds->splits[s];
        if (sp->header_line)
            fprintf(f,
                    "%s:%d: skipped as a header: \"%s\" (every field is a column name; if it is a triple, move it "
                    "below another line)\n",
                    sp->path, sp->header_line, sp->header);
        if (sp->n_duplicates)
            fprintf(f, "%s: %d duplicate triple%s counted once (first at line %d)\n", sp->path, sp->n_duplicates,
                    sp->n_duplicates == 1 ? "" : "s", sp->first_duplicate_line);
        if (sp->n_in_train)
            fprintf(f,
                    "%s:%d: %d of its %d triples %s also in %s; %s ranked like the others, so these metrics include "
                    "triples the model was trained on\n",
                    sp->path, sp->first_in_train_line, sp->n_in_train, sp->n, sp->n_in_train == 1 ? "is" : "are", train,
                    sp->n_in_train == 1 ? "it is" : "they are");
        if (sp->n_unseen) {
            fprintf(f, "%s:%d: %d of its %d triples name%s what %s never names:", sp->path, sp->first_unseen_line,
                    sp->n_unseen, sp->n, sp->n_unseen == 1 ? "s" : "", train);
            if (sp->n_unseen_entities) {
                fprintf(f, " %d entit%s (", sp->n_unseen_entities, sp->n_unseen_entities == 1 ? "y" : "ies");
                write_names(f, ds->entity_names, sp->unseen_entity, sp->n_unseen_entities);
                fprintf(f, ")%s", sp->n_unseen_relations ? "," : "");
            }
            if (sp->n_unseen_relations) {
                fprintf(f, " %d relation%s (", sp->n_unseen_relations, sp->n_unseen_relations == 1 ? "" : "s");
                write_names(f, ds->relation_names, sp->unseen_relation, sp->n_unseen_relations);
                fprintf(f, ")");
            }
            fprintf(f, ". They are ranked like the others, among all %d entities, but ", ds->n_entities);
            if (sp->n_unseen_entities)
                fprintf(f, "an entity only here was trained only as a wrong answer and as context (never as a "
                                "query or a right answer), so it tends to rank low%s",
                        sp->n_unseen_relations ? ", and " : "");
            if (sp->n_unseen_relations)
                fprintf(f, "a relation only here keeps the random vector it was initialised with (only "
                                "--weight-decay changes it), so its triples are ranked near chance");
            fprintf(f, "\n");
        }
    }
}

void kgl_dataset_free(kgl_dataset *ds)
{
    if (ds->entity_names)
        for (int i = 0; i < ds->n_entities; i++) free(ds->entity_names[i]);
    if (ds->relation_names)
        for (int i = 0; i < ds->n_relations; i++) free(ds->relation_names[i]);
    free(ds->entity_names);
    free(ds->relation_names);
    for (int s = 0; s < KGL_MAX_SPLITS; s++) {
        free(ds->splits[s].path);
        free(ds->splits[s].triples);
        free(ds->splits[s].header);
    }
    free(ds->known_offsets);
    free(ds->known);
    memset(ds, 0, sizeof *ds);
}

static int cmp_key_name(const void *key, const void *elem)
{
    return strcmp((const char *)key, *(char *const *)elem);
}

/* Names are sorted by strcmp, so a binary search finds one. */
static int find_name(char *const *names, int n, const char *name)
{
    if (!names || n <= 0) return -1;
    char *const *p = bsearch(name, names, (size_t)n, sizeof *names, cmp_key_name);
    return p ? (int)(p - names) : -1;
}

int kgl_dataset_entity_id(const kgl_dataset *ds, const char *name)
{
    return find_name(ds->entity_names, ds->n_entities, name);
}

int kgl_dataset_relation_id(const kgl_dataset *ds, const char *name)
{
    return find_name(ds->relation_names, ds->n_relations, name);
}

const int *kgl_dataset_known(const kgl_dataset *ds, int head, int rel, int *count)
{
    if (head < 0 || head >= ds->n_entities || rel < 0 || rel >= 2 * ds->n_relations)
        kgl_die("dataset_known: (entity %d, relation %d) out of range (%d entities, %d relations and inverses)", head,
                rel, ds->n_entities, 2 * ds->n_relations);
    size_t key = (size_t)head * (size_t)(2 * ds->n_relations) + (size_t)rel;
    int a = ds->known_offsets[key];
    *count = ds->known_offsets[key + 1] - a;
    return ds->known + a;
}

bool kgl_dataset_is_known(const kgl_dataset *ds, int head, int rel, int tail)
{
    int n;
    const int *sorted = kgl_dataset_known(ds, head, rel, &n);
    int lo = 0, hi = n; /* the first answer at or after tail, by bisection */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (sorted[mid] < tail) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && sorted[lo] == tail;
}

/* --------------------------------------------------------------- types -- */

typedef struct line_entry {
    char *key;  /* entity name, pointing into the text buffer */
    int value;  /* its line */
} line_entry;

bool kgl_types_load(kgl_types *ty, const kgl_source *src, char *err, size_t err_cap)
{
    static const char *const field_name[2] = {"entity", "type"};
    memset(ty, 0, sizeof *ty);
    kgl_text t;
    if (!open_source(&t, src, err, err_cap)) return false;
    line_entry *seen = NULL; /* keys are borrowed from t, which outlives the map */
    char **ent = NULL, **typ = NULL; /* stb arrays of owned copies */
    bool ok = false;
    char *f[2];
    int nf, rc;
    while ((rc = kgl_text_next(&t, '\t', f, 2, &nf, err, err_cap)) == 1) {
        if (nf != 2) {
            field_count_error(&t, 2, "entity, type", f, nf, nf < 2 ? nf : 2, err, err_cap);
            goto done;
        }
        if (!check_fields(&t, f, 2, field_name, err, err_cap)) goto done;
        if (arrlen(ent) == 0 && !ty->header_line && kgl_is_header_line(f, 2)) {
            ty->header_line = t.lineno; /* column names, as in a triples file */
            continue;
        }
        ptrdiff_t i = shgeti(seen, f[0]);
        if (i >= 0) {
            snprintf(err, err_cap, "%s:%d: entity \"%s\" is listed twice (first on line %d)", t.name, t.lineno, f[0],
                     seen[i].value);
            goto done;
        }
        shput(seen, f[0], t.lineno);
        arrput(ent, kgl_strdup(f[0]));
        arrput(typ, kgl_strdup(f[1]));
    }
    if (rc < 0) goto done;
    if (arrlen(ent) == 0) {
        snprintf(err, err_cap, "%s: no entities", t.name);
        goto done;
    }
    ty->n = (int)arrlen(ent);
    ty->entity = kgl_xmalloc((size_t)ty->n * sizeof *ty->entity);
    ty->type = kgl_xmalloc((size_t)ty->n * sizeof *ty->type);
    memcpy(ty->entity, ent, (size_t)ty->n * sizeof *ty->entity);
    memcpy(ty->type, typ, (size_t)ty->n * sizeof *ty->type);
    ok = true;
done:
    if (!ok) {
        for (ptrdiff_t i = 0; i < arrlen(ent); i++) free(ent[i]);
        for (ptrdiff_t i = 0; i < arrlen(typ); i++) free(typ[i]);
    }
    arrfree(ent);
    arrfree(typ);
    shfree(seen);
    kgl_text_close(&t);
    return ok;
}

void kgl_types_free(kgl_types *ty)
{
    for (int i = 0; i < ty->n; i++) {
        free(ty->entity[i]);
        free(ty->type[i]);
    }
    free(ty->entity);
    free(ty->type);
    memset(ty, 0, sizeof *ty);
}

void kgl_dataset_unknown_relation(const kgl_dataset *ds, const char *option, const char *name, char *err,
                                  size_t cap)
{
    char hint[600] = "", near[512], list[2048] = "";
    const char *const *names = (const char *const *)ds->relation_names;
    int k_near = kgl_near_matches(name, names, ds->n_relations, 3, near, sizeof near);
    if (k_near) snprintf(hint, sizeof hint, "; did you mean %s%s?", k_near > 1 ? "one of " : "", near);
    if (ds->n_relations <= 30) { /* the list only when it is short enough to read */
        size_t used = (size_t)snprintf(list, sizeof list, " (they have:");
        for (int k = 0; k < ds->n_relations && used < sizeof list; k++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s %s", k ? "," : "", names[k]);
        if (used < sizeof list) snprintf(list + used, sizeof list - used, ")");
    }
    snprintf(err, cap, "%s: no relation '%s' in the triples%s%s%s", option, name, hint, list,
             name[0] == '=' && strcmp(option, "--relations") == 0
                 ? "; --relations takes relation names, never a formula (it chooses the triples the formulas count)"
                 : "");
}

bool kgl_dataset_choose_relations(const kgl_dataset *ds, const char *list, bool *use, char *err, size_t cap)
{
    for (int r = 0; r < ds->n_relations; r++) use[r] = list == NULL;
    if (!list) return true;
    char *copy = kgl_strdup(list), *at;
    bool ok = true;
    int chosen = 0;
    for (char *tok = strtok_r(copy, ",", &at); tok && ok; tok = strtok_r(NULL, ",", &at)) {
        int r = kgl_dataset_relation_id(ds, tok);
        if (r < 0) {
            kgl_dataset_unknown_relation(ds, "--relations", tok, err, cap);
            ok = false;
        } else {
            chosen += !use[r];
            use[r] = true;
        }
    }
    free(copy);
    if (ok && chosen == 0) {
        snprintf(err, cap, "--relations: the list is empty");
        ok = false;
    }
    return ok;
}
