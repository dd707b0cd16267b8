/* cmd_demo.c — `kgl demo`: the chapter on attention as relevance-based
 * reasoning, re-derived section by section by the engine (src/studies/demo.c does
 * the computing, src/studies/demo_text.c and demo_json.c the printing; this
 * file parses the options, loads the world and the memo, and calls them).
 * Every section ends in a check line; exit 1 if any check fails, 2 on a
 * usage or input error. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kgl.h"

static const char help[] =
    "usage: kgl demo [SECTION | all] [--seed N] [--entity NAME] [--types FILE] [--memo FILE] [--json]\n\n"
    "Re-derives the chapter on attention as relevance-based reasoning (and the\n"
    "companion articles' experiments) with kgl's own ops: scores by matmul_nt,\n"
    "scaling by scale, attention rows by softmax_rows. Each section ends with a\n"
    "check line computed from its numbers. Without SECTION (or with 'all') it runs\n"
    "all nine:\n\n"
    "  attention    one query row of the academic world, traced end to end\n"
    "  variance     Var(q.k) = dk, and the saturation 1/sqrt(dk) prevents\n"
    "  jacobian     the softmax Jacobian against finite differences; freezing\n"
    "  lookup       attention as a soft dictionary lookup\n"
    "  multihead    two heads, concatenated and projected: the shapes\n"
    "  maxweight    the largest of 8 weights as d grows, with and without 1/sqrt(d)\n"
    "  mask         bidirectional and causal attention on a toy sentence\n"
    "  permutation  without a mask, attention is permutation-equivariant\n"
    "  memo         the self-attention article's worked example (a Korean memo)\n\n"
    "  --seed N       seed of every random draw (default 1); each section seeds its own\n"
    "  --entity NAME  the query of 'attention' and 'multihead' (default bob, or the\n"
    "                 first entity of a --types file without bob)\n"
    "  --types FILE   entity<TAB>type file of the academic world (default: the copy of\n"
    "                 data/academic.types.tsv built into kgl)\n"
    "  --memo FILE    the memo CSV (default: the built-in copy of data/safety_memo.csv)\n"
    "  --json         print {\"seed\":N,\"sections\":[{\"name\":...,\"pass\":...},...],\"pass\":...}\n"
    "exit status: 0 every check passes, 1 a check failed, 2 usage or input error\n";

int cmd_demo(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "demo", argc, argv);
    a.help = help;
    kgl_demo_input c = {.seed = 1};
    bool json = false;
    const char *which = NULL, *entity = NULL, *types_path = NULL, *memo_path = NULL;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--seed")) {
            if (!cli_u64(&a, &c.seed)) return EXIT_USAGE;
        } else if (cli_is(&a, "--json")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            json = true;
        } else if (cli_is(&a, "--entity")) {
            if (!(entity = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--types")) {
            if (!(types_path = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--memo")) {
            if (!(memo_path = cli_value(&a))) return EXIT_USAGE;
        } else if (a.opt[0] != '-' && !which) {
            which = a.opt;
            if (strcmp(which, "all") != 0 && kgl_demo_section_find(which) < 0)
                return cli_usage_error(&a,
                                       "no section is called '%s' (attention, variance, jacobian, lookup, "
                                       "multihead, maxweight, mask, permutation, memo, all)",
                                       which);
        } else {
            return cli_unknown(&a);
        }
    }
    if (which && strcmp(which, "all") == 0) which = NULL;

    char err[1024];
    kgl_types ty;
    kgl_source tsrc = {types_path ? types_path : "data/academic.types.tsv (built in)",
                       types_path ? NULL : kgl_academic_types_tsv, types_path ? 0 : kgl_academic_types_tsv_len};
    if (!kgl_types_load(&ty, &tsrc, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return EXIT_USAGE;
    }
    kgl_demo_world world;
    if (!kgl_demo_world_init(&world, &ty, tsrc.path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        kgl_types_free(&ty);
        return EXIT_USAGE;
    }
    c.world = &world;
    c.types_name = tsrc.path;
    /* the default query is bob, or the first entity of a world without him */
    c.query = kgl_demo_world_find(&world, entity ? entity : "bob");
    if (c.query < 0 && !entity) c.query = 0;
    if (c.query < 0) {
        cli_usage_error(&a, "--entity '%s' is not an entity of %s", entity, tsrc.path);
        kgl_types_free(&ty);
        return EXIT_USAGE;
    }
    kgl_memo memo;
    kgl_source msrc = {memo_path ? memo_path : "data/safety_memo.csv (built in)", memo_path ? NULL : kgl_safety_memo_csv,
                       memo_path ? 0 : kgl_safety_memo_csv_len};
    if (!kgl_memo_load(&memo, &msrc, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        kgl_types_free(&ty);
        return EXIT_USAGE;
    }
    c.memo = &memo;
    c.memo_name = msrc.path;

    bool all_pass = true;
    int ran = 0, failed = 0;
    kgl_json_writer out;
    kgl_json_writer_init(&out, stdout);
    if (json) {
        kgl_json_begin_object(&out);
        kgl_json_key(&out, "seed");
        kgl_json_put_uint(&out, c.seed);
        kgl_json_key(&out, "sections");
        kgl_json_begin_array(&out);
    } else {
        printf("kgl demo, seed %llu: the chapter on attention as relevance-based reasoning, re-derived by kgl's ops\n",
               (unsigned long long)c.seed);
    }
    for (int s = 0; s < KGL_DEMO_SECTIONS; s++) {
        if (which && strcmp(which, kgl_demo_sections[s].name) != 0) continue;
        bool pass = json ? kgl_demo_section_json(&out, s, &c) : kgl_demo_section_write(stdout, s, &c);
        ran++;
        if (!pass) failed++, all_pass = false;
    }
    if (json) {
        kgl_json_end_array(&out);
        kgl_json_field_bool(&out, "pass", all_pass);
        kgl_json_end_object(&out);
        kgl_json_newline(&out);
        kgl_json_writer_finish(&out);
    } else {
        printf("\ndemo: %d section%s, %d passed, %d failed: %s\n", ran, ran == 1 ? "" : "s", ran - failed, failed,
               all_pass ? "PASS" : "FAIL");
    }
    kgl_memo_free(&memo);
    kgl_types_free(&ty);
    return all_pass ? 0 : 1;
}
