/* cmd_eval.c — `kgl eval`: the filtered metrics of MODEL.md for a saved model. */
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl eval --checkpoint F [--train F] [--valid F] [--test F] [--relations A,B] [--json]\n\n"
    "Ranks every triple of each given split for its tail and its head among all\n"
    "entities, filtering the other known answers (from every file given), with\n"
    "ties ranked as the mean of the optimistic and pessimistic rank. Prints MRR\n"
    "and Hits@1/3/10 per relation and overall. --train defaults to the embedded\n"
    "academic world; the checkpoint's entities and relations must match the files.\n"
    EXIT_TABLE;

int cmd_eval(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "eval", argc, argv);
    data_args d = {0};
    const char *ckpt = NULL;
    bool json = false;
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &d, &ckpt, &json)) >= 0) {
            if (st) return st;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!ckpt) return cli_usage_error(&a, "--checkpoint is required");
    data_view v;
    kgl_model m;
    kgl_checkpoint ck;
    if ((st = open_model("eval", &d, ckpt, &v, &m, &ck))) return st;
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(&m, &t, &f);
    kgl_eval ev;
    kgl_eval_init(&ev, v.ds.n_entities, v.ds.n_relations);
    if (json) printf("{\"step\":%ld,\"metrics\":{", ck.st.step);
    else printf("%s: step %ld, d_model %d, %d heads, ffn %d\n", ckpt, ck.st.step, m.cfg.dim, m.cfg.heads, m.cfg.ffn);
    bool first = true;
    for (int s = 0; s < 3; s++) {
        if (!v.present[s]) continue;
        kgl_evaluate(&m, f.context, &v.ds, v.split[s], v.n[s], &ev);
        if (json) {
            printf("%s\"%s\":", first ? "" : ",", v.name[s]);
            json_metrics(stdout, &v.ds, v.use_relation, &ev);
        } else {
            print_metrics_table(v.name[s], v.n[s], &v.ds, v.use_relation, &ev);
        }
        first = false;
    }
    if (json) printf("}}\n");
    kgl_eval_free(&ev);
    kgl_tape_free(&t);
    kgl_model_free(&m);
    kgl_checkpoint_close(&ck);
    data_free(&v);
    return 0;
}
