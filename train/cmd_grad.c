/* cmd_grad.c — `kgl grad`: the full-batch loss and the gradient of every
 * parameter at a checkpoint, for inspection and for checking against other
 * frameworks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl grad --checkpoint F --out G.safetensors [--train F] [--relations A,B]\n"
    "                [--supervise-heads R=H,...] [--aux-weight L] [--member K] [--json]\n\n"
    "(--member K: the K-th model F lists, of an ensemble F is member 0 of; one\n"
    "model of an ensemble is named on the first line, and in --json.)\n"
    "Computes the loss over all training examples in one batch (file\n"
    "order, forward examples then their reciprocals) at the checkpoint's parameters,\n"
    "and the gradient of every parameter. Writes the gradients to G (safetensors,\n"
    "F64, each under its parameter's name; the losses are in the metadata) and\n"
    "prints the loss (or, with --json, {\"loss\",\"main_loss\",\"aux_loss\",\n"
    "\"examples\",\"grad_norm\":{NAME:norm}}). Head supervision defaults to the\n"
    "checkpoint's.\n"
    EXIT_TABLE;

int cmd_grad(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "grad", argc, argv);
    a.help = help;
    data_args d = {0};
    const char *ckpt = NULL, *out = NULL, *supervise = NULL;
    long member = -1; /* --member K: one model of an ensemble */
    double aux_weight = NAN;
    bool json = false;
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &d, &ckpt, &member, &json)) >= 0) {
            if (st) return st;
        } else if (cli_is(&a, "--out")) {
            if (!(out = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--supervise-heads")) {
            if (!(supervise = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--aux-weight")) {
            if (!cli_double(&a, 0, 1e6, &aux_weight)) return EXIT_USAGE;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!ckpt) return cli_usage_error(&a, "--checkpoint is required");
    if (!out) return cli_usage_error(&a, "--out is required");
    if (!cli_output_ok("grad", "--out", out)) return EXIT_USAGE;
    data_view v;
    kgl_model m;
    kgl_checkpoint ck;
    static model_choice chosen; /* which model of its ensemble (8 KB: one per process) */
    if ((st = open_model("grad", &d, ckpt, member, &chosen, &v, &m, &ck))) return st;
    char *models[1] = {chosen.path};
    const cli_file output = {"--out", out, true, NULL};
    if (!outputs_distinct("grad", &d, ckpt, models, 1, &output, 1)) {
        kgl_model_free(&m);
        kgl_checkpoint_close(&ck);
        data_free(&v);
        return EXIT_USAGE;
    }
    ckpt = chosen.path;
    if (!supervise && ck.st.supervise[0]) supervise = ck.st.supervise;
    if (isnan(aux_weight)) aux_weight = ck.st.aux_weight;
    int n_rel = v.ds.n_relations, *head_of = NULL;
    if (supervise) {
        head_of = kgl_xmalloc((size_t)n_rel * sizeof(int));
        if (!parse_supervision("grad", supervise, &v.ds, m.cfg.heads, head_of)) {
            st = EXIT_USAGE;
            goto done;
        }
    }
    /* the full batch, as kgl train forms it */
    int n_tr = v.n[0], n_ex = m.cfg.reciprocal ? 2 * n_tr : n_tr;
    int *ex = kgl_xmalloc(3 * (size_t)n_ex * sizeof(int));
    int *eh = ex, *er = ex + n_ex, *et = ex + 2 * n_ex;
    for (int k = 0; k < n_tr; k++) {
        const kgl_triple *tr = &v.split[0][k];
        eh[k] = tr->head, er[k] = tr->rel, et[k] = tr->tail;
        if (m.cfg.reciprocal) eh[n_tr + k] = tr->tail, er[n_tr + k] = n_rel + tr->rel, et[n_tr + k] = tr->head;
    }
    kgl_batch b = {n_ex, eh, er, et, NULL};
    kgl_supervision sup = {head_of, aux_weight};
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_params_zero_grad(&m.params);
    kgl_forward f;
    kgl_model_loss(&m, &t, &b, head_of ? &sup : NULL, &f);
    double loss = f.loss->data[0], main_loss = f.main_loss->data[0];
    double aux = f.aux_loss ? f.aux_loss->data[0] : NAN;
    if (!isfinite(loss)) {
        fprintf(stderr, "kgl grad: the loss is %g at this checkpoint\n", loss);
        st = 1;
    } else {
        kgl_backward(&t, f.loss);
        /* gradients under the parameters' own names, shaped as in the checkpoint */
        kgl_st_entry *e = kgl_xcalloc((size_t)m.params.n, sizeof *e);
        for (int k = 0; k < m.params.n; k++) {
            kgl_param *p = &m.params.p[k];
            e[k].name = p->name;
            e[k].data = p->t.grad;
            e[k].ndim = p->vector ? 1 : 2;
            e[k].shape[0] = p->vector ? p->t.cols : p->t.rows;
            e[k].shape[1] = p->t.cols;
        }
        char l[64], ml[64], al[64], step[32], nex[32], err[1024];
        snprintf(l, sizeof l, "%.17g", loss);
        snprintf(ml, sizeof ml, "%.17g", main_loss);
        snprintf(al, sizeof al, "%.17g", aux);
        snprintf(step, sizeof step, "%ld", ck.st.step);
        snprintf(nex, sizeof nex, "%d", n_ex);
        const char *meta[] = {"format", "kgl-grad/1", "loss", l, "main_loss", ml, "aux_loss", f.aux_loss ? al : "",
                              "step", step, "examples", nex, "checkpoint", ckpt};
        if (!kgl_st_write(out, e, m.params.n, meta, (int)(sizeof meta / sizeof meta[0]) / 2, err, sizeof err)) {
            fprintf(stderr, "kgl grad: %s\n", err);
            st = EXIT_OUTPUT;
        } else if (json) {
            printf("{");
            json_model_choice(&chosen);
            printf("\"loss\":");
            kgl_json_number(stdout, loss);
            printf(",\"main_loss\":");
            kgl_json_number(stdout, main_loss);
            printf(",\"aux_loss\":");
            kgl_json_number(stdout, aux);
            printf(",\"examples\":%d,\"grad_norm\":{", n_ex);
            for (int k = 0; k < m.params.n; k++) {
                double s = 0;
                for (size_t i = 0; i < kgl_numel(&m.params.p[k].t); i++) s += m.params.p[k].t.grad[i] * m.params.p[k].t.grad[i];
                printf("%s", k ? "," : "");
                kgl_json_string(stdout, m.params.p[k].name);
                putchar(':');
                kgl_json_number(stdout, sqrt(s));
            }
            printf("}}\n");
        } else {
            print_model_choice(&chosen, "gradients of",
                               "Each model of an ensemble is trained on its own loss, so each has its own gradient.");
            printf("loss %.17g (main %.17g", loss, main_loss);
            if (f.aux_loss) printf(", aux %.17g", aux);
            printf(") over %d examples; gradients of %d parameters written to %s\n", n_ex, m.params.n, out);
        }
        free(e);
    }
    kgl_tape_free(&t);
    free(ex);
done:
    free(head_of);
    kgl_model_free(&m);
    kgl_checkpoint_close(&ck);
    data_free(&v);
    return st;
}
