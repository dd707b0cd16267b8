/* cmd_predict.c — `kgl predict`: a saved model's top answers to (HEAD, REL, ?)
 * or (?, REL, TAIL), one question on the command line or many from a file,
 * with scores, softmax probabilities and the answers that are already known
 * triples marked (or left out); and a whole triple (HEAD, REL, TAIL) scored:
 * its rank, score and probability in both directions, as kgl eval ranks it.
 * The questions are read by kgl_questions_read and kgl_question_make, the
 * answering is kgl_predict's and kgl_questions_rank's, the JSON
 * kgl_question_json's (the C API); this file parses and prints. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl predict --checkpoint F --head NAME --relation REL [options]\n"
    "       kgl predict --checkpoint F --relation REL --tail NAME [options]\n"
    "       kgl predict --checkpoint F --head NAME --relation REL --tail NAME [options]\n"
    "       kgl predict --checkpoint F --queries FILE [options]\n\n"
    "The model's top answers to (NAME, REL, ?) (--head: which tails?) or to\n"
    "(?, REL, NAME) (--tail: which heads?), with each answer's score and its\n"
    "softmax probability over all entities (the model's own distribution,\n"
    "computed before any filtering). Head questions go through the inverse\n"
    "relation REL^-1, as training asks them; a model trained with\n"
    "--no-reciprocal scores each candidate head j by C[j].R[REL].E[NAME], as\n"
    "kgl eval ranks its heads (training never fitted a softmax over heads\n"
    "then, so read those probabilities as a normalised score). The scores are\n"
    "exactly those kgl eval ranks with.\n\n"
    "Output: per question a line naming it, then a table (rank, entity, score,\n"
    "prob, and 'known' yes/no with --no-filter and triples given).\n\n"
    "A whole triple (--head, --relation and --tail, or a queries line without\n"
    "'?') is scored instead: its two questions (HEAD, REL, ?) and (?, REL, TAIL)\n"
    "with the rank the triple's tail and head get, exactly as kgl eval ranks\n"
    "them (filtered: the other known answers left out; with --no-filter or no\n"
    "triples given, among all entities), the answer's score and probability,\n"
    "and the best-scoring other answer (not a known one when filtering).\n\n"
    "  --checkpoint F     the saved model; its entity and relation names are\n"
    "                     the names a question may use. Member 0 of an ensemble\n"
    "                     (kgl train --ensemble), or A,B,..., asks the ensemble:\n"
    "                     prob is the mean of the models' probabilities, score\n"
    "                     its log\n"
    "  --member K         ask model K of the ensemble alone (0: F itself)\n"
    "  --candidate-states L\n"
    "                     score head questions with the candidates' side at\n"
    "                     weight L (kgl train --candidate-states; 0: off)\n"
    "                     instead of the checkpoint's\n"
    "  --head NAME        ask for the tails of NAME under --relation\n"
    "  --tail NAME        ask for the heads of NAME under --relation\n"
    "  --relation REL     the relation asked about\n"
    "  --queries FILE     many questions: one per line, head<TAB>relation<TAB>tail\n"
    "                     with '?' as the head or the tail, or no '?' to score\n"
    "                     the triple (blank lines and lines starting with '#' are\n"
    "                     skipped); '-' reads standard input. A model with an\n"
    "                     entity named '?' refuses a '?' there: ask that on\n"
    "                     the command line (--head and --tail take names only)\n"
    "  --train F, --valid F, --test F\n"
    "                     the known triples (the checkpoint's names must match);\n"
    "                     answers that complete a known triple are marked\n"
    "                     'known', or left out with --filter. Without them\n"
    "                     nothing is known: no answer is marked\n"
    "  --filter           leave the known answers out of the list (the default\n"
    "                     when --train is given; probabilities stay those of the\n"
    "                     whole softmax, so the listed ones need not sum to 1)\n"
    "  --no-filter        list every answer, known ones marked\n"
    "  --top K            answers per question, 1 to the number of entities\n"
    "                     (default 10, or every entity when there are fewer)\n"
    "  --json             one JSON object per question, one per line:\n"
    "                     {\"query\":{\"head\",\"relation\",\"tail\"} (null where '?'),\n"
    "                     \"direction\", \"filter\", \"known_left_out\", \"answers\":\n"
    "                     [{\"rank\",\"entity\",\"score\",\"prob\",\"known\"}]}\n"
    "                     (known_left_out and known are null without triples);\n"
    "                     a triple: {\"query\",\"direction\":\"triple\",\"filter\",\n"
    "                     \"known\",\"tail\"|\"head\":{\"rank\",\"score\",\"prob\",\n"
    "                     \"top_other\",\"top_other_score\"}}\n\n"
    EXIT_TABLE;

/* What the command line asks for. */
typedef struct predict_options {
    data_args d;
    const char *ckpt, *head, *tail, *relation, *queries;
    bool json;
    long top, member;
    double candidate_states; /* < 0: the checkpoint's */
    bool top_given;  /* else 10, or n when there are fewer */
    bool have_known; /* triples given (--train, with --valid, --test) */
    bool filtering;  /* known answers left out */
} predict_options;

/* Returns -1 to go on, or an exit status (0 after --help). */
static int parse_options(int argc, char **argv, predict_options *o)
{
    cli_args a;
    cli_init(&a, "predict", argc, argv);
    a.help = help;
    *o = (predict_options){.member = -1, .candidate_states = -1};
    int filter = -1; /* -1: the default (on exactly when triples are given) */
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &o->d, &o->ckpt, &o->member, &o->json)) >= 0) {
            if (st) return st;
        } else if ((st = candidate_states_option(&a, &o->candidate_states)) >= 0) {
            if (st) return st;
        } else if (cli_is(&a, "--head") || cli_is(&a, "--tail") || cli_is(&a, "--relation") ||
                   cli_is(&a, "--queries")) {
            const char **slot = cli_is(&a, "--head")       ? &o->head
                                : cli_is(&a, "--tail")     ? &o->tail
                                : cli_is(&a, "--relation") ? &o->relation
                                                           : &o->queries;
            if (!(*slot = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--filter") || cli_is(&a, "--no-filter")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            filter = cli_is(&a, "--filter");
        } else if (cli_is(&a, "--top")) {
            /* the range 1..n is checked once the model says what n is */
            const char *val = cli_value(&a);
            if (!val) return EXIT_USAGE;
            char *end;
            errno = 0;
            o->top = strtol(val, &end, 10);
            o->top_given = true;
            if (errno || end == val || *end) return cli_usage_error(&a, "--top expects a whole number, got '%s'", val);
        } else {
            return cli_unknown(&a);
        }
    }
    if (!o->ckpt) return cli_usage_error(&a, "--checkpoint is required");
    if (o->d.relations) return cli_usage_error(&a, "--relations does not apply: a question names its relation");
    if (o->queries && (o->head || o->tail || o->relation))
        return cli_usage_error(&a, "--queries asks its own questions; drop --head, --tail and --relation");
    if (!o->queries) {
        if (!o->head && !o->tail)
            return cli_usage_error(&a, "ask a question: --head NAME --relation REL, --relation REL --tail NAME, "
                                       "--head NAME --relation REL --tail NAME (a triple), or --queries FILE");
        if (!o->relation)
            return cli_usage_error(&a, "--relation is required with %s", o->head && o->tail ? "--head and --tail"
                                                                         : o->head           ? "--head"
                                                                                             : "--tail");
    }
    o->have_known = o->d.train || o->d.valid || o->d.test;
    if (o->have_known && !o->d.train)
        return cli_usage_error(&a, "--valid and --test need --train (the files share the model's names)");
    if (filter == 1 && !o->have_known)
        return cli_usage_error(&a, "--filter needs the known triples: give --train (and --valid, --test)");
    o->filtering = filter == -1 ? o->have_known : filter == 1;
    return -1;
}

/* The questions: --queries FILE's (into *qs, to free), or the command
   line's one (into *one), once --top is checked against the model's
   entities. 0, or an exit status after reporting. */
static int read_questions(const predict_options *o, const kgl_dataset *ds, kgl_question *one, kgl_question **qs, int *n_q)
{
    int n = ds->n_entities;
    if (o->top_given && (o->top < 1 || o->top > n)) {
        fprintf(stderr, "kgl predict: --top %ld is out of range: the model has %d entities, so 1 to %d\n"
                        "Try 'kgl predict --help'.\n", o->top, n, n);
        return EXIT_USAGE;
    }
    char *err = kgl_xmalloc(KGL_QUESTION_ERR_CAP);
    bool ok = o->queries ? kgl_questions_read("predict", o->queries, ds, qs, n_q, err, KGL_QUESTION_ERR_CAP)
                         : kgl_question_make(ds, o->head, o->relation, o->tail, NULL, one, err, KGL_QUESTION_ERR_CAP);
    /* a mistake in a file says its place; one on the command line, its option */
    if (!ok) fprintf(stderr, "%s%s\n", o->queries ? "" : "kgl predict: ", err);
    free(err);
    return ok ? 0 : EXIT_USAGE;
}

/* Before the text answers: which models answer (an ensemble, or one member
   of it). */
static void print_models_asked(const kgl_model_set *ms)
{
    if (ms->n > 1)
        printf("an ensemble of %d models (%s and its members): prob is the mean of their probabilities, "
               "score its log\n\n",
               ms->n, ms->paths[0]);
    else if (ms->choice.members > 1) {
        kgl_model_choice_write(stdout, &ms->choice, "asking",
                           "Its answers are its own; the ensemble's file without --member asks every model.");
        printf("\n");
    }
}

/* A triple's two ranks r (its tail's, its head's), and whether it is a known
   triple, printed; `first`: no blank line before it. */
static void print_scored_triple(const predict_options *o, const kgl_dataset *ds, const kgl_question *q, const kgl_ranked *r,
                                bool first)
{
    /* -1: unknown, no triples given */
    int known = o->have_known ? kgl_dataset_is_known(ds, q->entity, q->relation, q->tail) : -1;
    if (o->json) {
        kgl_json_writer w;
        kgl_json_writer_init(&w, stdout);
        kgl_question_triple_json(&w, ds, q, r, known, o->filtering);
        kgl_json_newline(&w);
        kgl_json_writer_finish(&w);
    } else {
        if (!first) printf("\n");
        kgl_question_triple_write(stdout, ds, q, r, known, o->filtering);
    }
}

/* One question's top k_top answers (into ans), printed; `first`: no blank
   line before it. */
static void answer_question(const predict_options *o, const kgl_dataset *ds, const kgl_model_set *ms, const kgl_question *q,
                            int k_top, kgl_answer *ans, bool first)
{
    int row = q->ask_head ? ds->n_relations + q->relation : q->relation;
    int count = kgl_predict_ensemble(ms->models, (const kgl_real *const *)ms->states, ms->n,
                                     o->have_known ? ds : NULL, q->entity, row, k_top, o->filtering, ans);
    int n_known = 0;
    if (o->have_known) kgl_dataset_known(ds, q->entity, row, &n_known);
    if (o->json) {
        kgl_json_writer w;
        kgl_json_writer_init(&w, stdout);
        kgl_question_json(&w, ds, q, ans, count, o->have_known, o->filtering, o->filtering ? n_known : 0);
        kgl_json_newline(&w);
        kgl_json_writer_finish(&w);
    } else {
        if (!first) printf("\n");
        kgl_question_write(stdout, ds, q, ans, count, k_top, o->have_known, o->filtering, n_known);
    }
}

/* Every question answered and every triple scored, in the order asked. 0,
   or an exit status after reporting. */
static int answer_questions(const predict_options *o, const kgl_dataset *ds, const kgl_model_set *ms, const kgl_question *qs,
                            int n_q)
{
    int n = ds->n_entities, st = 0;
    int k_top = o->top_given ? (int)o->top : (n < 10 ? n : 10);
    kgl_answer *ans = malloc((size_t)k_top * sizeof *ans);
    int n_triples, t_done = 0;
    kgl_ranked *ranked = kgl_questions_rank(ms->models, (const kgl_real *const *)ms->states, ms->n,
                                            o->filtering ? ds : NULL, qs, n_q, &n_triples);
    if (!ans) {
        fprintf(stderr, "kgl predict: out of memory\n");
        st = EXIT_USAGE;
    } else {
        if (!o->json) print_models_asked(ms);
        for (int k = 0; k < n_q; k++) {
            if (qs[k].tail >= 0) { /* a triple */
                const kgl_ranked r[2] = {ranked[t_done], ranked[n_triples + t_done]};
                t_done++;
                print_scored_triple(o, ds, &qs[k], r, k == 0);
            } else {
                answer_question(o, ds, ms, &qs[k], k_top, ans, k == 0);
            }
        }
    }
    free(ans);
    free(ranked);
    return st;
}

int cmd_predict(int argc, char **argv)
{
    predict_options o;
    int st = parse_options(argc, argv, &o);
    if (st >= 0) return st;

    /* The model (or ensemble), and the names questions use: the triples'
       (which the checkpoint must match), or the checkpoint's own. */
    data_view v;
    kgl_dataset names;
    static kgl_model_set ms; /* large; one per process */
    if (o.have_known && (st = data_load("predict", &o.d, &v, false))) return st;
    if ((st = model_set_open("predict", o.ckpt, (int)o.member, o.have_known ? &v : NULL, &names, &ms))) {
        if (o.have_known) data_free(&v);
        return st;
    }
    const kgl_dataset *ds = o.have_known ? &v.ds : &names;
    kgl_question one, *qs = &one;
    int n_q = 1;
    st = set_candidate_states("predict", &ms, o.candidate_states);
    if (!st) st = read_questions(&o, ds, &one, &qs, &n_q);
    if (!st) st = answer_questions(&o, ds, &ms, qs, n_q);
    if (qs != &one) free(qs);
    kgl_model_set_close(&ms);
    if (o.have_known) data_free(&v);
    else kgl_dataset_free(&names);
    return st;
}
