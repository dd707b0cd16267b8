/* cli_eval_ranks.c — `kgl eval --ranks FILE.tsv`: every ranked triple with
 * its direction, filtered rank, score and top wrong answer. The ranks are
 * the ones the metrics average (MRR recomputed from the file equals kgl
 * eval --json's), kgl predict's head and tail questions rank the answer
 * where the file does, names with quotes survive, an output that cannot
 * be written fails before any work with exit status 2, and one whose writing
 * fails ends with exit status 3. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 17], err[1 << 14];

/* Three test triples the training file does not hold (their entities and
   relations do appear in it). */
static const char test_triples[] = "erin\tauthored\tp1\ndave\taffiliated\tcmu\np1\tcites\tp3\n";

typedef struct rank_row {
    char split[8], head[32], relation[32], tail[32], direction[8], wrong[32];
    double rank, score, wrong_score;
} rank_row;

/* Reads the ranks file: checks the header, splits each line on tabs (9
   fields, none empty but the last two). Returns the number of rows or -1. */
static int read_ranks(test_ctx *T, const char *path, rank_row *rows, int cap)
{
    FILE *f = fopen(path, "r");
    if (!CHECK(f != NULL)) return -1;
    char line[1024];
    int n = 0;
    bool header = fgets(line, sizeof line, f) &&
                  strcmp(line, "split\thead\trelation\ttail\tdirection\trank\tscore\ttop_wrong\ttop_wrong_score\n") == 0;
    CHECK(header);
    bool well_formed = header;
    while (well_formed && n < cap && fgets(line, sizeof line, f)) {
        char *field[10], *p = line;
        int nf = 0;
        line[strcspn(line, "\n")] = 0;
        for (;;) {
            char *tab = strchr(p, '\t');
            if (nf < 10) field[nf] = p;
            nf++;
            if (!tab) break;
            *tab = 0;
            p = tab + 1;
        }
        if (nf != 9) {
            well_formed = false;
            break;
        }
        rank_row *r = &rows[n++];
        snprintf(r->split, sizeof r->split, "%s", field[0]);
        snprintf(r->head, sizeof r->head, "%s", field[1]);
        snprintf(r->relation, sizeof r->relation, "%s", field[2]);
        snprintf(r->tail, sizeof r->tail, "%s", field[3]);
        snprintf(r->direction, sizeof r->direction, "%s", field[4]);
        r->rank = strtod(field[5], NULL);
        r->score = strtod(field[6], NULL);
        snprintf(r->wrong, sizeof r->wrong, "%s", field[7]);
        r->wrong_score = *field[8] ? strtod(field[8], NULL) : NAN;
    }
    fclose(f);
    CHECK(well_formed);
    return well_formed ? n : -1;
}

/* metrics.SPLIT.DIRECTION.METRIC of kgl eval --json */
static double json_metric(const kgl_json *root, const char *split, const char *direction, const char *metric)
{
    const kgl_json *m = kgl_json_get(kgl_json_get(kgl_json_get(kgl_json_get(root, "metrics"), split), direction), metric);
    return m ? m->num : NAN;
}

/* A run asked for --splits test printed `only_json`: its metrics hold test
   and not train, and test's MRR is `all`'s (a run of every split, which
   did rank train): the same ranks, since the training triples still filter. */
static void check_only_test_ranked(test_ctx *T, const kgl_json_doc *all, const char *only_json)
{
    kgl_json_doc only;
    char e[256];
    if (!CHECK(kgl_json_parse(only_json, strlen(only_json), &only, e, sizeof e))) return;
    const kgl_json *m = kgl_json_get(only.root, "metrics");
    CHECK(m && !kgl_json_get(m, "train") && kgl_json_get(m, "test"));
    double a = json_metric(all->root, "test", "both", "mrr"), b = json_metric(only.root, "test", "both", "mrr");
    CHECK(a > 0 && a == b);
    CHECK(json_metric(all->root, "train", "both", "mrr") > 0);
    kgl_json_free(&only);
}

/* A model after 5 steps (ranks spread from 1 to 13): MRR and the mean rank
   recomputed from the file, per split and direction, equal kgl eval
   --json's to 1e-12 (sums of ≤ 42 terms in another order: round-off is
   ~1e-16 of them); every row's rank is a possible realistic rank (a whole
   or half number from 1 to 13). */
TEST(eval_ranks_are_the_metrics_ranks)
{
    char cmd[4096];
    const char *train = write_tmp(T, 0, "academic.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len);
    const char *test = write_tmp(T, 1, "test.tsv", test_triples, sizeof test_triples - 1);
    snprintf(cmd, sizeof cmd, "train --steps 5 --train %s --test %s --save %s/five.st", train, test, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/five.st --train %s --test %s --json --ranks %s/ranks.tsv", T->tmp,
             train, test, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    kgl_json_doc doc;
    char e[256];
    if (!CHECK(kgl_json_parse(out, strlen(out), &doc, e, sizeof e))) return;
    static rank_row rows[256];
    char path[1024];
    snprintf(path, sizeof path, "%s/ranks.tsv", T->tmp);
    int n = read_ranks(T, path, rows, 256);
    CHECK(n == 2 * (21 + 3));
    const char *splits[2] = {"train", "test"}, *dirs[2] = {"tail", "head"};
    for (int s = 0; s < 2; s++) {
        double sum[2] = {0, 0}, ranks[2] = {0, 0};
        int count[2] = {0, 0};
        for (int k = 0; k < n; k++) {
            if (strcmp(rows[k].split, splits[s]) != 0) continue;
            int dir = strcmp(rows[k].direction, "head") == 0;
            sum[dir] += 1 / rows[k].rank;
            ranks[dir] += rows[k].rank;
            count[dir]++;
        }
        CHECK(count[0] == (s ? 3 : 21) && count[1] == count[0]);
        for (int dir = 0; dir < 2; dir++) {
            CHECK_NEAR(sum[dir] / count[dir], json_metric(doc.root, splits[s], dirs[dir], "mrr"), 1e-12);
            CHECK_NEAR(ranks[dir] / count[dir], json_metric(doc.root, splits[s], dirs[dir], "mr"), 1e-12);
        }
        int both = count[0] + count[1];
        CHECK_NEAR((sum[0] + sum[1]) / both, json_metric(doc.root, splits[s], "both", "mrr"), 1e-12);
        CHECK_NEAR((ranks[0] + ranks[1]) / both, json_metric(doc.root, splits[s], "both", "mr"), 1e-12);
    }
    int odd = 0, spread = 0;
    for (int k = 0; k < n; k++) {
        odd += !(rows[k].rank >= 1 && rows[k].rank <= 13 && rows[k].rank * 2 == (int)(rows[k].rank * 2));
        spread += rows[k].rank > 2;
        /* the top wrong answer is never the answer, and a rank above 1 means it outscores it */
        const char *answer = strcmp(rows[k].direction, "tail") == 0 ? rows[k].tail : rows[k].head;
        odd += strcmp(rows[k].wrong, answer) == 0;
        odd += rows[k].rank > 1.5 && !(rows[k].wrong_score > rows[k].score);
    }
    CHECK(odd == 0);
    CHECK(spread >= 5);
    kgl_json_free(&doc);
    /* the file came in whole: no temporary file is left beside it */
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", T->tmp);
    run_sh(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(strcmp(out, "0\n") == 0);
}

/* --splits test ranks the test split alone: its metrics are the bits of the
   run that ranks both, the train split is absent from the JSON and from the
   ranks file, and a split named but not given, or a word that is no split,
   is refused before any work. */
TEST(eval_splits_ranks_only_the_splits_named)
{
    char cmd[4096];
    const char *train = write_tmp(T, 0, "academic.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len);
    const char *test = write_tmp(T, 1, "test.tsv", test_triples, sizeof test_triples - 1);
    snprintf(cmd, sizeof cmd, "train --steps 5 --train %s --test %s --save %s/sp.st", train, test, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    kgl_json_doc all;
    char e[256];
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/sp.st --train %s --test %s --json", T->tmp, train, test);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    if (!CHECK(kgl_json_parse(out, strlen(out), &all, e, sizeof e))) return;
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/sp.st --train %s --test %s --splits test --json --ranks %s/sp.tsv",
             T->tmp, train, test, T->tmp);
    if (CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) check_only_test_ranked(T, &all, out);
    kgl_json_free(&all);
    static rank_row rows[64];
    snprintf(cmd, sizeof cmd, "%s/sp.tsv", T->tmp);
    int n = read_ranks(T, cmd, rows, 64), not_test = 0;
    CHECK(n == 2 * 3);
    for (int k = 0; k < n; k++) not_test += strcmp(rows[k].split, "test") != 0;
    CHECK(not_test == 0);
    static const char *const bad[][2] = {
        {"valid", "--splits names valid, which was not given (--valid F)"},
        {"test,tests", "--splits: 'tests' is not a split (train, valid, test)"},
        {"test,", "--splits: '' is not a split"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        snprintf(cmd, sizeof cmd, "eval --checkpoint %s/sp.st --train %s --test %s --splits '%s'", T->tmp, train, test,
                 bad[k][0]);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strstr(err, bad[k][1]) != NULL)) printf("    stderr: %s\n", err);
    }
}

/* kgl predict asks the same questions: for every row of the ranks file, the
   question (h, r, ?) or (?, r, t) asked of kgl predict (--no-filter, every
   entity) gives the answer the file's score (the same double: both print 17
   digits), the answer's filtered rank read off the list (the unknown
   entries scoring higher, plus half the equal ones) is the file's rank, and
   the first unknown entry is the file's top wrong answer. */
TEST(eval_ranks_agree_with_predict)
{
    char cmd[4096];
    const char *train = write_tmp(T, 0, "academic.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len);
    const char *test = write_tmp(T, 1, "test.tsv", test_triples, sizeof test_triples - 1);
    snprintf(cmd, sizeof cmd, "train --steps 5 --train %s --test %s --save %s/five.st", train, test, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/five.st --train %s --test %s --ranks %s/ranks.tsv", T->tmp, train,
             test, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    static rank_row rows[256];
    char path[1024];
    snprintf(path, sizeof path, "%s/ranks.tsv", T->tmp);
    int n = read_ranks(T, path, rows, 256);
    if (!CHECK(n == 48)) return;
    /* the questions, in the file's order */
    static char queries[1 << 14];
    size_t len = 0;
    for (int k = 0; k < n; k++) {
        bool tail = strcmp(rows[k].direction, "tail") == 0;
        len += (size_t)snprintf(queries + len, sizeof queries - len, "%s\t%s\t%s\n", tail ? rows[k].head : "?",
                                rows[k].relation, tail ? "?" : rows[k].tail);
    }
    const char *qpath = write_tmp(T, 2, "questions.tsv", queries, len);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s/five.st --train %s --test %s --queries %s --no-filter --top 13 --json",
             T->tmp, train, test, qpath);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    int k = 0, bad_score = 0, bad_rank = 0, bad_wrong = 0;
    for (char *line = out, *nl; (nl = strchr(line, '\n')) && k < n; line = nl + 1, k++) {
        kgl_json_doc doc;
        char e[256];
        if (!CHECK(kgl_json_parse(line, (size_t)(nl - line), &doc, e, sizeof e))) return;
        const kgl_json *ans = kgl_json_get(doc.root, "answers");
        const char *answer = strcmp(rows[k].direction, "tail") == 0 ? rows[k].tail : rows[k].head;
        double score = NAN;
        const char *first_unknown = NULL;
        for (size_t a = 0; ans && a < ans->len; a++) {
            const kgl_json *x = &ans->child[a];
            const char *who = kgl_json_get(x, "entity")->str;
            if (strcmp(who, answer) == 0) score = kgl_json_get(x, "score")->num;
            if (!first_unknown && kgl_json_get(x, "known")->type == KGL_JSON_FALSE) first_unknown = who;
        }
        long higher = 0, equal = 0;
        for (size_t a = 0; ans && a < ans->len; a++) {
            const kgl_json *x = &ans->child[a];
            if (kgl_json_get(x, "known")->type != KGL_JSON_FALSE) continue; /* known answers are filtered */
            double s = kgl_json_get(x, "score")->num;
            higher += s > score;
            equal += s == score;
        }
        bad_score += score != rows[k].score;
        bad_rank += 1.0 + (double)higher + (double)equal / 2 != rows[k].rank;
        bad_wrong += !first_unknown || strcmp(first_unknown, rows[k].wrong) != 0;
        kgl_json_free(&doc);
    }
    CHECK(k == n);
    CHECK(bad_score == 0);
    CHECK(bad_rank == 0);
    CHECK(bad_wrong == 0);
}

/* A name with a quote character is written quoted, quotes doubled (what
   pandas' read_csv reads back as the name), so the columns stay in place. */
TEST(eval_ranks_quote_names_with_quotes)
{
    static const char triples[] = "say \"hi\"\tr\tb\nb\tr\tc\n";
    const char *train = write_tmp(T, 0, "q.tsv", triples, sizeof triples - 1);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "train --steps 3 --dim 4 --train %s --save %s/q.st", train, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/q.st --train %s --ranks %s/q_ranks.tsv", T->tmp, train, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "grep -c '^train\t\"say \"\"hi\"\"\"\tr\tb\t' %s/q_ranks.tsv", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0 && strcmp(out, "2\n") == 0);
}

/* An output that cannot be written is refused before the evaluation (exit
   2, a bad argument; nothing on stdout, no file). */
TEST(eval_ranks_unwritable_fails_first)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "train --steps 2 --save %s/two.st", T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/two.st --ranks %s/no/such/folder/r.tsv", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl eval: --ranks ") == err && strstr(err, "does not exist") && !*out);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/two.st --ranks %s", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "is a folder, not a file") != NULL && !*out);
    /* a misspelt --ranks is named */
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/two.st --rank %s/r.tsv", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl eval: unknown option '--rank'; did you mean '--ranks'?\n") == err && !*out);
}

/* A --ranks file that fails while it is written (past a file-size limit of
   one block, 512 or 1024 bytes, as a full disk; the academic world's ranks
   are about 3 KB) is exit 3, "could not write an output" (README, "Exit
   status"), with the reason, and leaves neither the file nor a temporary. */
TEST(eval_ranks_write_failure_is_exit_3)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "train --steps 2 --save %s/two.st", T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd,
             "trap '' XFSZ; ulimit -f 1; '%s' eval --checkpoint '%s/two.st' --train data/academic.tsv --ranks "
             "'%s/r.tsv'",
             T->kgl, T->tmp, T->tmp);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 3 && strstr(err, "kgl eval: --ranks ") && strstr(err, "File too large")))
        printf("    rc %d, stderr: %s\n", rc, err);
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c r.tsv", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 1 && strtol(out, NULL, 10) == 0);
}

/* The row of `rows` for the triple (h, r, t) of `split` in `direction`. */
static const rank_row *find_row(const rank_row *rows, int n, const char *split, const char *h, const char *r,
                                const char *t, const char *direction)
{
    for (int k = 0; k < n; k++)
        if (strcmp(rows[k].split, split) == 0 && strcmp(rows[k].head, h) == 0 && strcmp(rows[k].relation, r) == 0 &&
            strcmp(rows[k].tail, t) == 0 && strcmp(rows[k].direction, direction) == 0)
            return &rows[k];
    return NULL;
}

/* kgl predict given whole triples (queries lines without '?') ranks their
   tails and heads exactly where kgl eval --ranks does (checkpoint ckpt: one
   model or an ensemble), with the same score and top other answer; with
   --no-filter its rank is the raw rank read off the question's full list,
   and its probability is the question's probability of that answer (the
   same doubles: 17 digits). */
static void check_triples_as_ranked(test_ctx *T, const char *ckpt, const char *train, const char *test)
{
    char cmd[4096], path[1024];
    snprintf(path, sizeof path, "%s/ranks.tsv", T->tmp);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s --train %s --test %s --ranks %s", ckpt, train, test, path);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    static rank_row rows[256];
    int n = read_ranks(T, path, rows, 256);
    if (!CHECK(n == 48)) return;
    /* every triple once, then (with --no-filter) its tail question */
    static char triples[1 << 14], both[1 << 14];
    size_t len = 0, len2 = 0;
    for (int k = 0; k < n; k++) {
        if (strcmp(rows[k].direction, "tail") != 0) continue;
        len += (size_t)snprintf(triples + len, sizeof triples - len, "%s\t%s\t%s\n", rows[k].head, rows[k].relation,
                                rows[k].tail);
        len2 += (size_t)snprintf(both + len2, sizeof both - len2, "%s\t%s\t%s\n%s\t%s\t?\n", rows[k].head,
                                 rows[k].relation, rows[k].tail, rows[k].head, rows[k].relation);
    }
    const char *tpath = write_tmp(T, 3, "triples.tsv", triples, len);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --test %s --queries %s --json", ckpt, train, test,
             tpath);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    int lines = 0, bad = 0;
    for (char *line = out, *nl; (nl = strchr(line, '\n')); line = nl + 1, lines++) {
        kgl_json_doc doc;
        char e[256];
        if (!CHECK(kgl_json_parse(line, (size_t)(nl - line), &doc, e, sizeof e))) return;
        const kgl_json *q = kgl_json_get(doc.root, "query");
        const char *h = kgl_json_get(q, "head")->str, *r = kgl_json_get(q, "relation")->str,
                   *t = kgl_json_get(q, "tail")->str;
        const char *split = find_row(rows, n, "test", h, r, t, "tail") ? "test" : "train";
        bad += strcmp(kgl_json_get(doc.root, "direction")->str, "triple") != 0;
        bad += kgl_json_get(doc.root, "known")->type != KGL_JSON_TRUE; /* every triple is in train or test */
        for (int dir = 0; dir < 2; dir++) {
            const kgl_json *got = kgl_json_get(doc.root, dir ? "head" : "tail");
            const rank_row *want = find_row(rows, n, split, h, r, t, dir ? "head" : "tail");
            const kgl_json *other = kgl_json_get(got, "top_other");
            bad += !want || kgl_json_get(got, "rank")->num != want->rank ||
                   kgl_json_get(got, "score")->num != want->score || !other || other->type != KGL_JSON_STRING ||
                   strcmp(other->str, want->wrong) != 0;
        }
        kgl_json_free(&doc);
    }
    CHECK(lines == 24);
    CHECK(bad == 0);

    /* --no-filter: each triple, then its tail question listing every entity */
    const char *bpath = write_tmp(T, 4, "both.tsv", both, len2);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --test %s --queries %s --no-filter --top 13 --json",
             ckpt, train, test, bpath);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    int pairs = 0, bad_prob = 0, bad_rank = 0;
    for (char *line = out, *nl, *nl2; (nl = strchr(line, '\n')) && (nl2 = strchr(nl + 1, '\n')); line = nl2 + 1) {
        kgl_json_doc tri, ques;
        char e[256];
        if (!CHECK(kgl_json_parse(line, (size_t)(nl - line), &tri, e, sizeof e))) return;
        if (!CHECK(kgl_json_parse(nl + 1, (size_t)(nl2 - nl - 1), &ques, e, sizeof e))) {
            kgl_json_free(&tri);
            return;
        }
        const kgl_json *tail = kgl_json_get(tri.root, "tail"), *ans = kgl_json_get(ques.root, "answers");
        const char *t = kgl_json_get(kgl_json_get(tri.root, "query"), "tail")->str;
        double score = kgl_json_get(tail, "score")->num, prob = NAN;
        long higher = 0, equal = 0;
        for (size_t a = 0; ans && a < ans->len; a++) {
            const kgl_json *x = &ans->child[a];
            double s = kgl_json_get(x, "score")->num;
            if (strcmp(kgl_json_get(x, "entity")->str, t) == 0) prob = kgl_json_get(x, "prob")->num;
            else higher += s > score, equal += s == score;
        }
        bad_prob += prob != kgl_json_get(tail, "prob")->num;
        bad_rank += 1.0 + (double)higher + (double)equal / 2 != kgl_json_get(tail, "rank")->num;
        bad_rank += kgl_json_get(tri.root, "filter")->type != KGL_JSON_FALSE;
        pairs++;
        kgl_json_free(&tri);
        kgl_json_free(&ques);
    }
    CHECK(pairs == 24);
    CHECK(bad_prob == 0);
    CHECK(bad_rank == 0);
}

TEST(predict_scores_triples_as_eval_ranks_them)
{
    char cmd[4096], ckpt[1024];
    const char *train = write_tmp(T, 0, "academic.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len);
    const char *test = write_tmp(T, 1, "test.tsv", test_triples, sizeof test_triples - 1);
    snprintf(ckpt, sizeof ckpt, "%s/five.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 5 --train %s --test %s --save %s", train, test, ckpt);
    if (CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) check_triples_as_ranked(T, ckpt, train, test);
    /* an ensemble: ranked on the mean probability, its score the log of it */
    snprintf(ckpt, sizeof ckpt, "%s/ens.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 5 --ensemble 2 --train %s --test %s --save %s --quiet", train, test, ckpt);
    if (CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) check_triples_as_ranked(T, ckpt, train, test);
}

/* kgl train --splits: the final report ranks only the splits named (the
   others still filter; model selection still ranks valid); the same test
   metrics as the full report, bit for bit: the same run, the same ranks. */
TEST(train_splits_reports_only_the_splits_named)
{
    char cmd[4096];
    const char *train = write_tmp(T, 0, "academic.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len);
    const char *test = write_tmp(T, 1, "test.tsv", test_triples, sizeof test_triples - 1);
    kgl_json_doc all;
    char e[256];
    snprintf(cmd, sizeof cmd, "train --steps 5 --train %s --test %s --json", train, test);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    if (!CHECK(kgl_json_parse(out, strlen(out), &all, e, sizeof e))) return;
    /* a recipe's --splits is overridden by the command line's, as other options */
    const char *recipe = write_tmp(T, 2, "r.args", "--splits train\n", 15);
    snprintf(cmd, sizeof cmd, "train --steps 5 --train %s --test %s --recipe %s --splits test --json", train, test,
             recipe);
    if (CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) check_only_test_ranked(T, &all, out);
    kgl_json_free(&all);
    /* --quiet's line names only the splits ranked */
    snprintf(cmd, sizeof cmd, "train --steps 5 --train %s --test %s --splits test --quiet", train, test);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "; test MRR") != NULL && strstr(err, "train MRR") == NULL);
    static const char *const bad[][2] = {
        {"valid", "--splits names valid, which was not given (--valid F)"},
        {"test,tests", "--splits: 'tests' is not a split (train, valid, test)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        snprintf(cmd, sizeof cmd, "train --steps 5 --train %s --test %s --splits '%s'", train, test, bad[k][0]);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
        CHECK(strstr(err, bad[k][1]) != NULL);
    }
}
