/* cmd_heads.c — `kgl heads`: what each attention head of a saved model looks
 * at, measured against the training triples, and pictures of it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"

static const char help[] =
    "usage: kgl heads --checkpoint F [--train F] [--relations A,B] [--svg DIR] [--json]\n\n"
    "For every head h and relation r of the training triples:\n"
    "  spec[h][r]       mean over entities i with r-tails of the attention head h,\n"
    "                   standing at i, puts on i's r-tails (MODEL.md)\n"
    "  baseline[r]      the same for uniform attention: mean |tails_r(i)| / n\n"
    "  argmax precision how often head h's most-attended entity is a true r-tail\n"
    "Then each entity's top-3 attended entities per head, and head ablation: the\n"
    "drop in train MRR (both directions) when one head's output is zeroed.\n"
    "With --svg DIR it writes DIR/head<h>.svg (the n x n attention of head h, the\n"
    "true tails of its best relation outlined), DIR/heads.svg (all heads on one\n"
    "colour scale) and DIR/spec.svg (the specialisation matrix).\n"
    EXIT_TABLE;

typedef struct heads_report {
    int H, n, m;
    double *spec, *precision, *baseline; /* [H m], [H m], [m] */
    int *with_tails;                     /* [m] entities with r-tails */
    double base_mrr, *ablated_mrr;       /* [H] */
} heads_report;

static bool is_tail(const kgl_tails *tl, int r, int i, int j)
{
    size_t key = (size_t)r * tl->n_entities + i;
    for (int k = tl->offsets[key]; k < tl->offsets[key + 1]; k++)
        if (tl->tails[k] == j) return true;
    return false;
}

static int argmax_row(const double *a, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (a[j] > a[best]) best = j;
    return best;
}

static void measure(const kgl_tails *tl, kgl_tensor *const *attn, heads_report *rep)
{
    int n = rep->n, m = rep->m;
    kgl_specialisation(tl, rep->H, attn, rep->spec);
    for (int r = 0; r < m; r++) {
        int count = 0;
        double frac = 0;
        for (int i = 0; i < n; i++) {
            size_t key = (size_t)r * n + i;
            int k = tl->offsets[key + 1] - tl->offsets[key];
            if (k) count++, frac += (double)k / n;
        }
        rep->with_tails[r] = count;
        rep->baseline[r] = count ? frac / count : NAN;
        for (int h = 0; h < rep->H; h++) {
            int hits = 0;
            for (int i = 0; i < n; i++) {
                size_t key = (size_t)r * n + i;
                if (tl->offsets[key] == tl->offsets[key + 1]) continue;
                hits += is_tail(tl, r, i, argmax_row(attn[h]->data + (size_t)i * n, n));
            }
            rep->precision[h * m + r] = count ? (double)hits / count : NAN;
        }
    }
}

/* The three most-attended entities of row i (ties: lower id first). */
static void top3(const double *a, int n, int *idx)
{
    for (int k = 0; k < 3; k++) idx[k] = -1;
    for (int j = 0; j < n; j++)
        for (int k = 0; k < 3 && k < n; k++)
            if (idx[k] < 0 || a[j] > a[idx[k]]) {
                for (int q = 2; q > k; q--) idx[q] = idx[q - 1];
                idx[k] = j;
                break;
            }
}

static double train_mrr(kgl_model *m, const data_view *v, kgl_eval *ev)
{
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(m, &t, &f);
    kgl_evaluate(m, f.context, &v->ds, v->split[0], v->n[0], ev);
    kgl_tape_free(&t);
    return ev->both.mrr;
}

static bool write_svgs(const char *dir, const data_view *v, kgl_tensor *const *attn, const kgl_tails *tl,
                       const heads_report *rep, char *err, size_t cap)
{
    int n = rep->n, m = rep->m, H = rep->H;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, cap, "%s: cannot create the folder: %s", dir, strerror(errno));
        return false;
    }
    const char *const *names = (const char *const *)v->ds.entity_names;
    kgl_heatmap *panels = calloc((size_t)H, sizeof *panels);
    unsigned char *outline = calloc((size_t)H * n * n, 1);
    char(*titles)[256] = calloc((size_t)H, sizeof *titles);
    char(*labels)[256] = calloc((size_t)H, sizeof *labels);
    char path[4096];
    bool ok = true;
    for (int h = 0; h < H && ok; h++) {
        /* the head's best relation: the highest spec among the trained ones */
        int best = -1;
        for (int r = 0; r < m; r++)
            if (v->use_relation[r] && !isnan(rep->spec[h * m + r]) && (best < 0 || rep->spec[h * m + r] > rep->spec[h * m + best]))
                best = r;
        unsigned char *o = outline + (size_t)h * n * n;
        if (best >= 0)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) o[(size_t)i * n + j] = is_tail(tl, best, i, j);
        snprintf(titles[h], sizeof titles[h], "head %d: attention A[i, j]%s%s (spec %.2f)", h, best >= 0 ? ", best relation " : "",
                 best >= 0 ? v->ds.relation_names[best] : "", best >= 0 ? rep->spec[h * m + best] : NAN);
        snprintf(labels[h], sizeof labels[h], "true tail (%s)", best >= 0 ? v->ds.relation_names[best] : "none");
        kgl_heatmap *p = &panels[h];
        p->title = titles[h];
        p->rows = p->cols = n;
        p->values = attn[h]->data;
        p->row_labels = p->col_labels = names;
        p->row_axis = "query entity i";
        p->col_axis = "attended entity j";
        p->vmin = 0;
        p->vmax = 1;
        p->outline = best >= 0 ? o : NULL;
        p->outline_label = labels[h];
        p->value_label = "attention weight";
        p->annotate = n <= 16;
        snprintf(path, sizeof path, "%s/head%d.svg", dir, h);
        ok = kgl_svg_heatmap(path, p, err, cap);
    }
    if (ok) {
        snprintf(path, sizeof path, "%s/heads.svg", dir);
        ok = kgl_svg_heatmap_grid(path, "attention of every head (one colour scale)", panels, H, H < 3 ? H : 3, err, cap);
    }
    if (ok) {
        /* the specialisation matrix: heads x trained relations */
        int used = 0;
        for (int r = 0; r < m; r++) used += v->use_relation[r];
        double *vals = malloc((size_t)H * used * sizeof(double));
        const char **cols = malloc((size_t)used * sizeof *cols);
        char(*rows)[32] = malloc((size_t)H * sizeof *rows);
        const char **row_labels = malloc((size_t)H * sizeof *row_labels);
        for (int h = 0; h < H; h++) {
            snprintf(rows[h], sizeof rows[h], "head %d", h);
            row_labels[h] = rows[h];
            int c = 0;
            for (int r = 0; r < m; r++)
                if (v->use_relation[r]) {
                    cols[c] = v->ds.relation_names[r];
                    vals[h * used + c++] = rep->spec[h * m + r];
                }
        }
        kgl_heatmap sp = {0};
        sp.title = "specialisation spec[h][r]: attention mass on the true r-tails";
        sp.rows = H;
        sp.cols = used;
        sp.values = vals;
        sp.row_labels = row_labels;
        sp.col_labels = cols;
        sp.row_axis = "head";
        sp.col_axis = "relation";
        sp.vmin = 0;
        sp.vmax = 1;
        sp.value_label = "spec";
        sp.annotate = true;
        snprintf(path, sizeof path, "%s/spec.svg", dir);
        ok = kgl_svg_heatmap(path, &sp, err, cap);
        free(vals);
        free(cols);
        free(rows);
        free(row_labels);
    }
    free(panels);
    free(outline);
    free(titles);
    free(labels);
    return ok;
}

int cmd_heads(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "heads", argc, argv);
    data_args d = {0};
    const char *ckpt = NULL, *svg_dir = NULL;
    bool json = false;
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &d, &ckpt, &json)) >= 0) {
            if (st) return st;
        } else if (cli_is(&a, "--svg")) {
            if (!(svg_dir = cli_value(&a))) return EXIT_USAGE;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!ckpt) return cli_usage_error(&a, "--checkpoint is required");
    if (svg_dir && !cli_output_dir_ok("heads", "--svg", svg_dir)) return EXIT_OUTPUT;
    data_view v;
    kgl_model m;
    kgl_checkpoint ck;
    if ((st = open_model("heads", &d, ckpt, &v, &m, &ck))) return st;
    heads_report rep = {m.cfg.heads, v.ds.n_entities, v.ds.n_relations, NULL, NULL, NULL, NULL, 0, NULL};
    int H = rep.H, n = rep.n, nr = rep.m;
    rep.spec = malloc((size_t)H * nr * sizeof(double));
    rep.precision = malloc((size_t)H * nr * sizeof(double));
    rep.baseline = malloc((size_t)nr * sizeof(double));
    rep.with_tails = malloc((size_t)nr * sizeof(int));
    rep.ablated_mrr = malloc((size_t)H * sizeof(double));
    kgl_tails tl;
    kgl_tails_build(&tl, n, nr, v.split[0], v.n[0]);
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(&m, &t, &f);
    measure(&tl, f.attn, &rep);

    kgl_eval ev;
    kgl_eval_init(&ev, n, nr);
    rep.base_mrr = train_mrr(&m, &v, &ev);
    for (int h = 0; h < H; h++) {
        m.ablate[h] = true;
        rep.ablated_mrr[h] = train_mrr(&m, &v, &ev);
        m.ablate[h] = false;
    }

    char **names = v.ds.entity_names;
    if (json) {
        printf("{\"step\":%ld,\"heads\":%d,\"relations\":{", ck.st.step, H);
        bool first = true;
        for (int r = 0; r < nr; r++) {
            if (!v.use_relation[r] || !rep.with_tails[r]) continue;
            printf("%s", first ? "" : ",");
            first = false;
            kgl_json_string(stdout, v.ds.relation_names[r]);
            printf(":{\"entities\":%d,\"baseline\":", rep.with_tails[r]);
            kgl_json_number(stdout, rep.baseline[r]);
            printf(",\"spec\":[");
            for (int h = 0; h < H; h++) {
                printf("%s", h ? "," : "");
                kgl_json_number(stdout, rep.spec[h * nr + r]);
            }
            printf("],\"argmax_precision\":[");
            for (int h = 0; h < H; h++) {
                printf("%s", h ? "," : "");
                kgl_json_number(stdout, rep.precision[h * nr + r]);
            }
            printf("]}");
        }
        printf("},\"top3\":[");
        for (int h = 0; h < H; h++) {
            printf("%s{", h ? "," : "");
            for (int i = 0; i < n; i++) {
                int idx[3];
                const double *row = f.attn[h]->data + (size_t)i * n;
                top3(row, n, idx);
                printf("%s", i ? "," : "");
                kgl_json_string(stdout, names[i]);
                printf(":[");
                for (int k = 0; k < 3 && idx[k] >= 0; k++) {
                    printf("%s[", k ? "," : "");
                    kgl_json_string(stdout, names[idx[k]]);
                    putchar(',');
                    kgl_json_number(stdout, row[idx[k]]);
                    putchar(']');
                }
                putchar(']');
            }
            putchar('}');
        }
        printf("],\"ablation\":{\"mrr\":");
        kgl_json_number(stdout, rep.base_mrr);
        printf(",\"heads\":[");
        for (int h = 0; h < H; h++) {
            printf("%s{\"head\":%d,\"mrr\":", h ? "," : "", h);
            kgl_json_number(stdout, rep.ablated_mrr[h]);
            printf(",\"drop\":");
            kgl_json_number(stdout, rep.base_mrr - rep.ablated_mrr[h]);
            putchar('}');
        }
        printf("]}}\n");
    } else {
        int w = 8;
        for (int r = 0; r < nr; r++)
            if (v.use_relation[r] && (int)strlen(v.ds.relation_names[r]) > w) w = (int)strlen(v.ds.relation_names[r]);
        if (w > 32) w = 32;
        printf("%s: step %ld, %d heads, d_model %d; %d training triples\n\n", ckpt, ck.st.step, H, m.cfg.dim, v.n[0]);
        printf("specialisation: attention mass head h, at entity i, puts on i's true r-tails\n"
               "(mean over the entities with r-tails); baseline = the same for uniform attention;\n"
               "precision = how often the head's most-attended entity is a true r-tail\n\n");
        printf("%-*s %8s %8s", w, "relation", "entities", "baseline");
        for (int h = 0; h < H; h++) printf("  spec h%-2d", h);
        for (int h = 0; h < H; h++) printf("  prec h%-2d", h);
        printf("\n");
        for (int r = 0; r < nr; r++) {
            if (!v.use_relation[r] || !rep.with_tails[r]) continue;
            printf("%-*.*s %8d %8.3f", w, w, v.ds.relation_names[r], rep.with_tails[r], rep.baseline[r]);
            for (int h = 0; h < H; h++) printf("  %8.3f", rep.spec[h * nr + r]);
            for (int h = 0; h < H; h++) printf("  %8.3f", rep.precision[h * nr + r]);
            printf("\n");
        }
        int nw = 5;
        for (int i = 0; i < n; i++)
            if ((int)strlen(names[i]) > nw) nw = (int)strlen(names[i]);
        if (nw > 24) nw = 24;
        for (int h = 0; h < H; h++) {
            printf("\nhead %d: each entity's top-3 attended entities\n", h);
            for (int i = 0; i < n; i++) {
                int idx[3];
                const double *row = f.attn[h]->data + (size_t)i * n;
                top3(row, n, idx);
                printf("  %-*.*s ->", nw, nw, names[i]);
                for (int k = 0; k < 3 && idx[k] >= 0; k++)
                    printf("%s %s %.3f", k ? "," : "", names[idx[k]], row[idx[k]]);
                printf("\n");
            }
        }
        printf("\nhead ablation: train MRR (both directions) with every head %.4f\n%-6s %12s %8s\n", rep.base_mrr,
               "head", "MRR without", "drop");
        for (int h = 0; h < H; h++)
            printf("%-6d %12.4f %8.4f\n", h, rep.ablated_mrr[h], rep.base_mrr - rep.ablated_mrr[h]);
    }
    if (svg_dir) {
        char err[1024];
        if (!write_svgs(svg_dir, &v, f.attn, &tl, &rep, err, sizeof err)) {
            fprintf(stderr, "kgl heads: %s\n", err);
            st = EXIT_OUTPUT;
        } else if (!json) {
            printf("\npictures: %s/head0.svg … head%d.svg, %s/heads.svg, %s/spec.svg\n", svg_dir, H - 1, svg_dir,
                   svg_dir);
        }
    }
    kgl_eval_free(&ev);
    kgl_tape_free(&t);
    kgl_tails_free(&tl);
    free(rep.spec);
    free(rep.precision);
    free(rep.baseline);
    free(rep.with_tails);
    free(rep.ablated_mrr);
    kgl_model_free(&m);
    kgl_checkpoint_close(&ck);
    data_free(&v);
    return st;
}
