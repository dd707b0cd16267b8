/* studies_demo_text.c — `kgl demo`'s sections printed by the library
 * (kgl_demo_section_write, kgl_demo_section_json) on a memory stream: each
 * section's heading and check line, and a number of each that must be
 * there, formatted (or read back) here from the section's own result. */
#include <stdlib.h>

#include "test.h"

/* The academic world, the embedded memo and the input of every section (seed 1, query bob). */
typedef struct demo_fixture {
    kgl_types ty;
    kgl_demo_world world;
    kgl_memo memo;
    kgl_demo_input in;
} demo_fixture;

static bool fixture_open(test_ctx *T, demo_fixture *x)
{
    char e[512];
    kgl_source types = {"academic.types.tsv", kgl_academic_types_tsv, kgl_academic_types_tsv_len};
    kgl_source memo = {"safety_memo.csv", kgl_safety_memo_csv, kgl_safety_memo_csv_len};
    if (!CHECK(kgl_types_load(&x->ty, &types, e, sizeof e))) return false;
    if (!CHECK(kgl_demo_world_init(&x->world, &x->ty, types.path, e, sizeof e))) return false;
    if (!CHECK(kgl_memo_load(&x->memo, &memo, e, sizeof e))) return false;
    x->in = (kgl_demo_input){.seed = 1,
                             .world = &x->world,
                             .types_name = types.path,
                             .query = kgl_demo_world_find(&x->world, "bob"),
                             .memo = &x->memo,
                             .memo_name = memo.path};
    return CHECK(x->in.query == 1);
}

static void fixture_close(demo_fixture *x)
{
    kgl_memo_free(&x->memo);
    kgl_types_free(&x->ty);
}

/* Section s printed (or, json, written as its object) into a string (free
   it); *pass what the call returned. */
static char *section_text(int s, const kgl_demo_input *in, bool json, bool *pass)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    if (json) {
        kgl_json_writer w;
        kgl_json_writer_init(&w, f);
        *pass = kgl_demo_section_json(&w, s, in);
        kgl_json_writer_finish(&w);
    } else {
        *pass = kgl_demo_section_write(f, s, in);
    }
    fclose(f);
    return text;
}

TEST(demo_sections_by_name)
{
    static const char *const names[KGL_DEMO_SECTIONS] = {"attention", "variance",  "jacobian",    "lookup", "multihead",
                                                          "maxweight", "mask",      "permutation", "memo"};
    for (int s = 0; s < KGL_DEMO_SECTIONS; s++) {
        CHECK(strcmp(kgl_demo_sections[s].name, names[s]) == 0 && kgl_demo_sections[s].title[0] != 0);
        CHECK(kgl_demo_section_find(names[s]) == s);
    }
    CHECK(kgl_demo_section_find("all") == -1 && kgl_demo_section_find("look") == -1);
}

/* Every section's text: "\n[k] name: title\n" first, the check line last
   (ending in PASS), and one of its numbers as its table prints it. */
TEST(demo_print_section_is_the_sections_numbers)
{
    demo_fixture x;
    if (!fixture_open(T, &x)) return;
    const kgl_demo_input *in = &x.in;
    char want[KGL_DEMO_SECTIONS][256];
    kgl_demo_attention at;
    kgl_demo_attention_run(in->world, in->query, in->seed, &at);
    snprintf(want[0], sizeof want[0], "query bob: scores q·k against all 13 keys");
    snprintf(want[0] + strlen(want[0]), sizeof want[0] - strlen(want[0]), "|  %7.4f   (itself)\n|\n    top %d: %s %.4f,",
             at.weight[in->query], at.n_top, x.world.entity[at.top[0]], at.weight[at.top[0]]);
    kgl_demo_variance va;
    kgl_demo_variance_run(in->seed, &va);
    snprintf(want[1], sizeof want[1], "      %5d  %10.3f  %7.4f  ", va.dk[2], va.var[2], va.ratio[2]);
    kgl_demo_jacobian ja;
    kgl_demo_jacobian_run(in->seed, &ja);
    snprintf(want[2], sizeof want[2], "    J = diag(p) − p pᵀ:\n      %9.5f%9.5f", ja.J[0], ja.J[1]);
    kgl_demo_lookup lo;
    kgl_demo_lookup_run(in->seed, &lo);
    snprintf(want[3], sizeof want[3], "  %9.6f  %12.6f  ", lo.p2[1], lo.p2_exact[1]);
    kgl_demo_multihead mh;
    kgl_demo_multihead_run(in->world, in->query, in->seed, &mh);
    snprintf(want[4], sizeof want[4], "bob's top-1 key: head 1 %s (%.4f), head 2 %s (%.4f)\n",
             x.world.entity[mh.top[0]], mh.top_weight[0], x.world.entity[mh.top[1]], mh.top_weight[1]);
    kgl_demo_maxweight mw;
    kgl_demo_maxweight_run(in->seed, &mw);
    snprintf(want[5], sizeof want[5], "      %4d  %8.4f  %13.4f\n", mw.d[0], mw.unscaled[0], mw.scaled[0]);
    kgl_demo_mask ma;
    kgl_demo_mask_run(&ma);
    snprintf(want[6], sizeof want[6], "%8.3f  %8.3f\n", ma.max_w[1][0], ma.max_w_unscaled[1][0]);
    kgl_demo_permutation pe;
    kgl_demo_permutation_run(in->world, in->seed, &pe);
    snprintf(want[7], sizeof want[7], "      no mask      %.2e   equivariant", pe.free_err);
    kgl_demo_memo me;
    kgl_demo_memo_run(in->memo, &me);
    snprintf(want[8], sizeof want[8], "} %.3f\n", me.g[0].step_weight);

    for (int s = 0; s < KGL_DEMO_SECTIONS; s++) {
        bool pass = false;
        char *text = section_text(s, in, false, &pass);
        if (!CHECK(text)) continue;
        char head[160];
        snprintf(head, sizeof head, "\n[%d] %s: %s\n", s + 1, kgl_demo_sections[s].name, kgl_demo_sections[s].title);
        CHECK(pass && strncmp(text, head, strlen(head)) == 0);
        const char *check = strstr(text, "\n    check: ");
        size_t n = strlen(text);
        CHECK(check && n > 6 && strcmp(text + n - 6, " PASS\n") == 0 && strstr(check + 1, "\n    check:") == NULL);
        /* the wanted number(s): pieces split at '|' each in the text, in order */
        const char *at = text;
        for (char *piece = want[s], *bar; at && piece; piece = bar ? bar + 1 : NULL) {
            bar = strchr(piece, '|');
            if (bar) *bar = 0;
            at = strstr(at, piece);
        }
        if (!CHECK(at != NULL)) fprintf(stderr, "    section %s lacks '%s'\n", kgl_demo_sections[s].name, want[s]);
        free(text);
    }
    fixture_close(&x);
}

/* A memo whose numbers are not the article's: the section prints FAIL and returns false. */
TEST(demo_print_section_failed_check)
{
    demo_fixture x;
    if (!fixture_open(T, &x)) return;
    static const char other[] = "document_id,target_token,candidate_token,candidate_role,evidence_pack,evidence_cap,"
                                "evidence_action,score\nmemo_cap_missing,그것,배터리팩,equipment,0.9,0.1,0.0,0.2\n";
    kgl_source src = {"other.csv", other, sizeof other - 1};
    kgl_memo memo;
    char e[512];
    if (CHECK(kgl_memo_load(&memo, &src, e, sizeof e))) {
        kgl_demo_input in = x.in;
        in.memo = &memo, in.memo_name = "other.csv";
        bool pass = true;
        char *text = section_text(8, &in, false, &pass);
        CHECK(!pass && text && strstr(text, "    from other.csv; vectors are") != NULL);
        CHECK(text && strlen(text) > 6 && strcmp(text + strlen(text) - 6, " FAIL\n") == 0);
        free(text);
        text = section_text(8, &in, true, &pass);
        CHECK(!pass && text && strstr(text, ",\"pass\":false}") != NULL);
        free(text);
        kgl_memo_free(&memo);
    }
    fixture_close(&x);
}

/* A number of a parsed JSON object (NaN when absent or not a number, so a
   comparison with it fails). */
static double field(const kgl_json *obj, const char *key)
{
    const kgl_json *v = kgl_json_get(obj, key);
    return v && v->type == KGL_JSON_NUMBER ? v->num : NAN;
}

/* Every section's object: its name, pass true, and numbers that are the
   section's result to the bit (the writer's 17 digits read back). */
TEST(demo_json_section_is_the_sections_numbers)
{
    demo_fixture x;
    if (!fixture_open(T, &x)) return;
    const kgl_demo_input *in = &x.in;
    for (int s = 0; s < KGL_DEMO_SECTIONS; s++) {
        bool pass = false;
        char *text = section_text(s, in, true, &pass);
        if (!CHECK(text)) continue;
        kgl_json_doc doc;
        char e[256];
        if (!CHECK(kgl_json_parse(text, strlen(text), &doc, e, sizeof e))) {
            free(text);
            continue;
        }
        const kgl_json *name = kgl_json_get(doc.root, "name"), *ok = kgl_json_get(doc.root, "pass");
        CHECK(name && name->type == KGL_JSON_STRING && strcmp(name->str, kgl_demo_sections[s].name) == 0);
        CHECK(pass && ok && ok->type == KGL_JSON_TRUE);
        if (s == 0) {
            kgl_demo_attention r;
            kgl_demo_attention_run(in->world, in->query, in->seed, &r);
            const kgl_json *keys = kgl_json_get(doc.root, "keys");
            CHECK(keys && keys->type == KGL_JSON_ARRAY && keys->len == 13);
            CHECK(keys && keys->len == 13 && field(&keys->child[4], "weight") == r.weight[4]);
            CHECK(field(doc.root, "max_row_sum_err") == r.max_row_sum_err);
        } else if (s == 3) {
            kgl_demo_lookup r;
            kgl_demo_lookup_run(in->seed, &r);
            const kgl_json *q = kgl_json_get(doc.root, "queries");
            CHECK(q && q->type == KGL_JSON_ARRAY && q->len == 2 && field(&q->child[1], "p_slot2") == r.p2[1]);
        } else if (s == 8) {
            kgl_demo_memo r;
            kgl_demo_memo_run(in->memo, &r);
            const kgl_json *t = kgl_json_get(doc.root, "targets");
            CHECK(t && t->type == KGL_JSON_ARRAY && t->len == (size_t)x.memo.n_groups);
            CHECK(t && t->len > 0 && field(&t->child[0], "missing_step_weight") == r.g[0].step_weight);
            CHECK(field(doc.root, "article_values") == r.article_values && r.article_values == 34);
        }
        kgl_json_free(&doc);
        free(text);
    }
    fixture_close(&x);
}
