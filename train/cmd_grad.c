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

/* What the command line asks for. */
typedef struct grad_options {
    data_args d;
    const char *ckpt, *out, *supervise;
    long member;       /* --member K: one model of an ensemble */
    double aux_weight; /* NAN until given: then the checkpoint's */
    bool json;
} grad_options;

/* Returns -1 to go on, or an exit status (0 after --help). */
static int parse_options(int argc, char **argv, grad_options *o)
{
    cli_args a;
    cli_init(&a, "grad", argc, argv);
    a.help = help;
    *o = (grad_options){.member = -1, .aux_weight = NAN};
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &o->d, &o->ckpt, &o->member, &o->json)) >= 0) {
            if (st) return st;
        } else if (cli_is(&a, "--out")) {
            if (!(o->out = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--supervise-heads")) {
            if (!(o->supervise = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--aux-weight")) {
            if (!cli_double(&a, 0, 1e6, &o->aux_weight)) return EXIT_USAGE;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!o->ckpt) return cli_usage_error(&a, "--checkpoint is required");
    if (!o->out) return cli_usage_error(&a, "--out is required");
    if (!cli_output_ok("grad", "--out", o->out)) return EXIT_USAGE;
    return -1;
}

/* The triples and the model chosen (open_model), with --out a file of its
   own; then o->ckpt names the model's file, and the head supervision and
   its weight default to the checkpoint's. 0, or an exit status after
   reporting (nothing left open). */
static int open_model_for_grad(grad_options *o, kgl_model_choice *chosen, data_view *v, kgl_model *m, kgl_checkpoint *ck)
{
    int st;
    if ((st = open_model("grad", &o->d, o->ckpt, o->member, chosen, v, m, ck))) return st;
    char *models[1] = {chosen->path};
    const cli_file output = {"--out", o->out, true, NULL};
    if (!outputs_distinct("grad", &o->d, o->ckpt, models, 1, &output, 1)) {
        kgl_model_free(m);
        kgl_checkpoint_close(ck);
        data_free(v);
        return EXIT_USAGE;
    }
    o->ckpt = chosen->path;
    if (!o->supervise && ck->st.supervise[0]) o->supervise = ck->st.supervise;
    if (isnan(o->aux_weight)) o->aux_weight = ck->st.aux_weight;
    return 0;
}

static void print_json(const kgl_model_choice *chosen, const kgl_params *params, const kgl_gradient_losses *l)
{
    kgl_json_writer w;
    kgl_json_writer_init(&w, stdout);
    kgl_json_begin_object(&w);
    json_model_choice(&w, chosen);
    kgl_json_field_number(&w, "loss", l->loss);
    kgl_json_field_number(&w, "main_loss", l->main_loss);
    kgl_json_field_number(&w, "aux_loss", l->aux);
    kgl_json_field_int(&w, "examples", l->examples);
    kgl_json_key(&w, "grad_norm");
    kgl_json_begin_object(&w);
    for (int k = 0; k < params->n; k++) kgl_json_field_number(&w, params->p[k].name, kgl_param_grad_norm(&params->p[k]));
    kgl_json_end_object(&w);
    kgl_json_end_object(&w);
    kgl_json_newline(&w);
    kgl_json_writer_finish(&w);
}

static void print_text(const kgl_model_choice *chosen, const kgl_params *params, const kgl_gradient_losses *l, const char *out)
{
    kgl_model_choice_write(stdout, chosen, "gradients of",
                       "Each model of an ensemble is trained on its own loss, so each has its own gradient.");
    printf("loss %.17g (main %.17g", l->loss, l->main_loss);
    if (l->has_aux) printf(", aux %.17g", l->aux);
    printf(") over %d examples; gradients of %d parameters written to %s\n", l->examples, params->n, out);
}

/* The loss over the full batch and every parameter's gradient
   (kgl_full_batch_gradient), written to --out and printed. 0, or an exit
   status after reporting. */
static int compute_gradients(const grad_options *o, const kgl_model_choice *chosen, const data_view *v, kgl_model *m,
                             const kgl_checkpoint *ck, const int *head_of)
{
    kgl_supervision sup = {head_of, o->aux_weight};
    kgl_gradient_losses l;
    char err[1024];
    if (!kgl_full_batch_gradient(m, v->split[0], v->n[0], v->ds.n_relations, head_of ? &sup : NULL, &l)) {
        fprintf(stderr, "kgl grad: the loss is %g at this checkpoint\n", l.loss);
        return 1;
    }
    if (!kgl_gradients_write(o->out, o->ckpt, ck->st.step, &m->params, &l, err, sizeof err)) {
        fprintf(stderr, "kgl grad: %s\n", err);
        return EXIT_OUTPUT;
    }
    if (o->json) print_json(chosen, &m->params, &l);
    else print_text(chosen, &m->params, &l, o->out);
    return 0;
}

int cmd_grad(int argc, char **argv)
{
    grad_options o;
    int st = parse_options(argc, argv, &o);
    if (st >= 0) return st;
    data_view v;
    kgl_model m;
    kgl_checkpoint ck;
    static kgl_model_choice chosen; /* which model of its ensemble (8 KB: one per process) */
    if ((st = open_model_for_grad(&o, &chosen, &v, &m, &ck))) return st;
    int *head_of = NULL;
    if (o.supervise) {
        head_of = kgl_xmalloc((size_t)v.ds.n_relations * sizeof(int));
        if (!parse_supervision("grad", o.supervise, &v.ds, m.cfg.heads, head_of)) st = EXIT_USAGE;
    }
    if (!st) st = compute_gradients(&o, &chosen, &v, &m, &ck, head_of);
    free(head_of);
    kgl_model_free(&m);
    kgl_checkpoint_close(&ck);
    data_free(&v);
    return st;
}
