/* cmd_eval.c — `kgl eval`: the filtered metrics for a saved model,
 * and with --ranks every ranked triple as a TSV file for error analysis
 * (its rows kgl_ranks_write's). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static const char help[] =
    "usage: kgl eval --checkpoint F [--train F] [--valid F] [--test F] [--relations A,B] [--json]\n"
    "                [--ranks FILE.tsv] [--member K] [--splits train,valid,test]\n"
    "                [--candidate-states L]\n\n"
    "Ranks every triple of each given split for its tail and its head among all\n"
    "entities, filtering the other known answers (from every file given), with\n"
    "ties ranked as the mean of the optimistic and pessimistic rank. Prints MRR,\n"
    "Hits@1/3/10 and MR (the mean rank) per relation and overall. --train\n"
    "defaults to the embedded academic world; the checkpoint's entities and\n"
    "relations must match the files.\n\n"
    "An ensemble (kgl train --ensemble K saves member 0 as F, listing the others,\n"
    "F.m1 ... in its metadata; or --checkpoint A,B,... names the models) is ranked\n"
    "as kgl train reports it: each candidate by the mean of the models'\n"
    "probabilities (the softmax of each model's scores over all entities); --ranks\n"
    "then writes the log of that probability as the score.\n\n"
    "--ranks FILE.tsv writes every ranked triple twice (direction tail: (h, r, ?)\n"
    "ranks t; head: (?, r, t) ranks h) with its filtered rank (the one the metrics\n"
    "average), the answer's score, and the best-scoring wrong answer (neither the\n"
    "answer nor a known one) with its score; tab-separated with a header line:\n"
    "split head relation tail direction rank score top_wrong top_wrong_score\n"
    "(top_wrong empty when every other entity is a known answer). The file is\n"
    "written whole or not at all (a temporary file, then renamed).\n\n"
    "--splits S,... ranks only the splits named (default: every split given); the\n"
    "others still filter, and --train still gives a graph context its graph: on a\n"
    "graph of real size, --splits valid,test leaves out the minutes of ranking the\n"
    "training triples.\n\n"
    "--member K ranks model K of the ensemble alone (0: F itself; K: the K-th\n"
    "file F lists, or the K-th of A,B,...), as kgl train's line for member K.\n\n"
    "--candidate-states L ranks with the candidates' side of a head question at\n"
    "weight L (kgl train --candidate-states; 0: off) instead of the checkpoint's:\n"
    "it changes ranking only, so a model trained without it can be measured\n"
    "with it (a model that asks the relation, --query-relation).\n\n"
    EXIT_TABLE;

/* Every triple of every split present, ranked, to `path`
   (kgl_ranks_write): written to a temporary file beside it, then renamed
   over it, so a failure leaves no half-written file. Returns false after
   reporting. */
static bool write_ranks(const char *path, const kgl_model_set *ms, const data_view *v, const bool *ranked,
                        eval_progress *ep)
{
    kgl_outfile o;
    char err[4200];
    bool ok = kgl_outfile_open(&o, path, err, sizeof err);
    if (ok) {
        kgl_ranks_write_header(o.f);
        for (int s = 0; s < 3 && ok; s++) {
            if (!ranked[s] || v->n[s] == 0) continue;
            ep->what = v->name[s];
            ok = kgl_ranks_write(o.f, ms->models, (const kgl_real *const *)ms->states, ms->n, &v->ds, v->name[s],
                                 v->split[s], v->n[s], eval_progress_update, ep);
        }
        if (ok) {
            ok = kgl_outfile_commit(&o, err, sizeof err);
        } else {
            kgl_outfile_discard(&o);
            snprintf(err, sizeof err, "%s: out of memory", path);
        }
    }
    if (!ok) fprintf(stderr, "kgl eval: --ranks %s\n", err);
    return ok;
}

int cmd_eval(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "eval", argc, argv);
    a.help = help;
    data_args d = {0};
    const char *ckpt = NULL, *ranks = NULL, *splits = NULL;
    long member = -1;
    bool json = false;
    double candidate_states = -1; /* the checkpoint's */
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &d, &ckpt, &member, &json)) >= 0) {
            if (st) return st;
        } else if ((st = candidate_states_option(&a, &candidate_states)) >= 0) {
            if (st) return st;
        } else if (cli_is(&a, "--ranks")) {
            if (!(ranks = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--splits")) {
            if (!(splits = cli_value(&a))) return EXIT_USAGE;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!ckpt) return cli_usage_error(&a, "--checkpoint is required");
    bool named[3] = {false, false, false};
    if (splits && !cli_splits(&a, splits, named)) return EXIT_USAGE;
    /* before any work: an output that cannot be written is known now */
    if (ranks && !cli_output_ok("eval", "--ranks", ranks)) return EXIT_USAGE;
    data_view v;
    if ((st = data_load("eval", &d, &v, false))) return st;
    bool ranked[3]; /* the splits to rank: those named, else every split given */
    if (!data_splits_chosen("eval", &v, named, ranked)) {
        data_free(&v);
        return EXIT_USAGE;
    }
    static kgl_model_set ms; /* large; one per process */
    if ((st = model_set_open("eval", ckpt, (int)member, &v, NULL, &ms))) {
        data_free(&v);
        return st;
    }
    const cli_file output = {"--ranks", ranks, true, NULL};
    if ((st = set_candidate_states("eval", &ms, candidate_states)) ||
        !outputs_distinct("eval", &d, ckpt, ms.paths, ms.n, &output, 1)) {
        kgl_model_set_close(&ms);
        data_free(&v);
        return st ? st : EXIT_USAGE;
    }
    kgl_eval ev;
    kgl_eval_init(&ev, v.ds.n_entities, v.ds.n_relations);
    /* a graph of real size takes minutes to rank: a progress line (none for quick work) */
    long queries = 0;
    for (int s = 0; s < 3; s++) queries += ranked[s] ? 2L * v.n[s] : 0;
    progress line;
    progress_start(&line, stderr, isatty(STDERR_FILENO), (double)(ranks ? 2 * queries : queries), progress_delay(),
                   now_seconds());
    eval_progress ep = {&line, "kgl eval", NULL, 0};
    ev.progress = eval_progress_update, ev.progress_ctx = &ep;
    kgl_json_writer w;
    kgl_json_writer_init(&w, stdout);
    if (json) {
        kgl_json_begin_object(&w);
        kgl_json_field_int(&w, "step", ms.ck[0].st.step);
        kgl_json_field_int(&w, "ensemble", ms.n);
        kgl_json_key(&w, "metrics");
        kgl_json_begin_object(&w);
    }
    if (ms.n == 1 && !json)
        kgl_model_choice_write(stdout, &ms.choice, "ranking",
                           "Its ranks are its own; the ensemble's file without --member ranks by every model.");
    for (int k = 0; k < ms.n && !json; k++)
        printf("%s: step %ld, d_model %d, %d heads, ffn %d%s%.0d%s\n", ms.paths[k], ms.ck[k].st.step,
               ms.m[k].cfg.dim, ms.m[k].cfg.heads, ms.m[k].cfg.ffn, ms.m[k].cfg.layers > 1 ? ", " : "",
               ms.m[k].cfg.layers > 1 ? ms.m[k].cfg.layers : 0, ms.m[k].cfg.layers > 1 ? " layers" : "");
    if (ms.n > 1 && !json)
        printf("an ensemble of %d models: each candidate ranked by the mean of their probabilities\n", ms.n);
    for (int s = 0; s < 3; s++) {
        if (!ranked[s]) continue;
        ep.what = v.name[s];
        kgl_evaluate_ensemble(ms.models, (const kgl_real *const *)ms.states, ms.n, &v.ds, v.split[s], v.n[s], &ev);
        progress_clear(&line); /* the table may go to the same terminal */
        if (json) {
            kgl_json_key(&w, v.name[s]);
            kgl_json_eval(&w, &v.ds, v.use_relation, &ev);
        } else {
            kgl_metrics_table_write(stdout, v.name[s], v.n[s], &v.ds, v.use_relation, &ev);
        }
    }
    if (json) {
        kgl_json_end_object(&w); /* the metrics */
        kgl_json_end_object(&w);
        kgl_json_newline(&w);
        kgl_json_writer_finish(&w);
    }
    if (ranks && !write_ranks(ranks, &ms, &v, ranked, &ep)) st = EXIT_OUTPUT;
    progress_at at;
    /* on a terminal, whose line was erased for the tables: how long the ranking took, if long enough to say */
    if (line.tty && progress_due(&line, 0, 0, true, now_seconds(), &at)) {
        char times[128];
        progress_times(&at, times, sizeof times);
        progress_print(&line, "kgl eval: ranked %.0f queries, %s", at.done, times);
    }
    progress_stop(&line);
    kgl_eval_free(&ev);
    kgl_model_set_close(&ms);
    data_free(&v);
    return st;
}
