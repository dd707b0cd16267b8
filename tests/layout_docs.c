/* layout_docs.c — the documentation stays navigable.
 *
 * README.md is the front door (what kgl is, the walkthrough, the commands,
 * the formats, the specification, a summary of results) and links the
 * reports in data/report/. These tests hold it to that: the README stays
 * short and has a table of contents, every relative link of every Markdown
 * file under the repository (README.md and data/<dir>/<file>.md) reaches a
 * file, and a link with #anchor into a Markdown file reaches a heading of it,
 * named as GitHub names it. And what the documents tell pandas to run reads
 * kgl's numbers back exactly. */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "test.h"

static char out[1 << 14], err[1 << 14];

/* The line budget: ~500 lines of front door, and room for a short addition. */
#define README_MAX_LINES 550

/* GitHub's anchor of a heading: lower case, spaces to '-', every other
 * character that is not a letter, digit, '-' or '_' dropped (all our
 * headings are ASCII; a byte above 127 is kept, as GitHub keeps letters). */
static void anchor_of(const char *heading, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < cap; i++) {
        unsigned char c = (unsigned char)heading[i];
        if (c == ' ')
            out[n++] = '-';
        else if (isalnum(c) || c == '-' || c == '_' || c >= 128)
            out[n++] = (char)tolower(c);
    }
    out[n] = '\0';
}

/* Whether `text` (a Markdown file) has a heading whose anchor is `anchor`;
 * the k-th repeat of a heading is anchored "-k", as GitHub does. */
static bool has_anchor(const char *text, const char *anchor)
{
    char seen[256][160];
    int n_seen = 0;
    bool fenced = false;
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= 3 && strncmp(p, "```", 3) == 0) fenced = !fenced;
        if (!fenced && len > 0 && *p == '#') {
            size_t h = 0;
            while (h < len && p[h] == '#') h++;
            while (h < len && p[h] == ' ') h++;
            char a[160];
            anchor_of(p + h, len - h, a, sizeof a);
            int repeats = 0;
            for (int k = 0; k < n_seen; k++) repeats += strcmp(seen[k], a) == 0;
            if (n_seen < 256) snprintf(seen[n_seen++], sizeof seen[0], "%s", a);
            char numbered[180];
            if (repeats > 0) snprintf(numbered, sizeof numbered, "%s-%d", a, repeats);
            if (strcmp(repeats > 0 ? numbered : a, anchor) == 0) return true;
        }
        if (!end) break;
        p = end + 1;
    }
    return false;
}

/* Checks every relative link `](target)` of the Markdown file `path`, outside
 * fenced blocks and code spans: the target file exists (relative to the
 * file's folder), and `#anchor` (alone: in this file) is one of the target
 * Markdown file's headings. Prints each broken link; returns how many. */
static int broken_links(const char *path)
{
    char *text = test_slurp(path, NULL);
    if (!text) {
        printf("    %s: cannot be read\n", path);
        return 1;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    int broken = 0, line = 1;
    bool line_start = true, fenced = false;
    for (const char *p = text; *p; p++) {
        if (line_start && strncmp(p + strspn(p, " "), "```", 3) == 0) fenced = !fenced;
        line_start = *p == '\n';
        if (*p == '\n') {
            line++;
            continue;
        }
        if (fenced) continue;
        if (*p == '`') { /* a code span: to the next run of as many backticks in its paragraph */
            size_t ticks = strspn(p, "`");
            const char *q = p + ticks, *blank = strstr(p, "\n\n");
            while ((q = strchr(q, '`')) != NULL && strspn(q, "`") != ticks) q += strspn(q, "`");
            if (!q || (blank && q > blank)) {
                p += ticks - 1;
                continue;
            }
            for (const char *r = p; r < q; r++) line += *r == '\n';
            p = q + ticks - 1;
            continue;
        }
        if (p[0] != ']' || p[1] != '(') continue;
        const char *t = p + 2;
        size_t len = strcspn(t, ") \n");
        char target[1024];
        snprintf(target, sizeof target, "%.*s", (int)len, t);
        if (strncmp(target, "http://", 7) == 0 || strncmp(target, "https://", 8) == 0 ||
            strncmp(target, "mailto:", 7) == 0)
            continue;
        char *hash = strchr(target, '#');
        const char *anchor = hash ? hash + 1 : NULL;
        if (hash) *hash = '\0';
        char file[2100];
        if (target[0])
            snprintf(file, sizeof file, "%s%s", dir, target);
        else
            snprintf(file, sizeof file, "%s", path);
        struct stat st;
        const char *why = NULL;
        if (stat(file, &st) != 0)
            why = "no such file";
        else if (anchor && strlen(file) > 3 && strcmp(file + strlen(file) - 3, ".md") == 0) {
            char *md = test_slurp(file, NULL);
            if (!md || !has_anchor(md, anchor)) why = "no such heading";
            free(md);
        }
        if (why) {
            printf("    %s:%d: link to '%.*s': %s\n", path, line, (int)len, t, why);
            broken++;
        }
    }
    free(text);
    return broken;
}

/* The Markdown files of the repository: README.md and data/<dir>/<file>.md. */
static int markdown_files(char paths[][300], int cap)
{
    int n = 0;
    snprintf(paths[n++], 300, "README.md");
    DIR *data = opendir("data");
    if (!data) return n;
    struct dirent *d;
    while ((d = readdir(data)) != NULL) {
        if (d->d_name[0] == '.') continue;
        char sub[300];
        snprintf(sub, sizeof sub, "data/%s", d->d_name);
        DIR *s = opendir(sub);
        if (!s) continue;
        struct dirent *f;
        while ((f = readdir(s)) != NULL) {
            size_t len = strlen(f->d_name);
            if (len > 3 && strcmp(f->d_name + len - 3, ".md") == 0 && n < cap)
                snprintf(paths[n++], 300, "%.150s/%.140s", sub, f->d_name);
        }
        closedir(s);
    }
    closedir(data);
    return n;
}

TEST(readme_is_a_short_front_door_with_contents)
{
    char *readme = test_slurp("README.md", NULL);
    if (!CHECK(readme != NULL)) return;
    int lines = test_count(readme, "\n");
    if (!CHECK(lines <= README_MAX_LINES))
        printf("    README.md has %d lines, more than %d: move research notes and detail to data/report/\n", lines,
               README_MAX_LINES);
    /* a table of contents near the top links every top-level section */
    const char *contents = strstr(readme, "**Contents**");
    CHECK(contents != NULL && test_count(readme, "\n") - test_count(contents, "\n") < 40);
    bool fenced = false;
    for (const char *p = readme; contents && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= 3 && strncmp(p, "```", 3) == 0) fenced = !fenced;
        if (!fenced && len > 3 && strncmp(p, "## ", 3) == 0) {
            char link[200] = "(#";
            anchor_of(p + 3, len - 3, link + 2, sizeof link - 3);
            strcat(link, ")");
            const char *toc_end = strstr(contents, "\n\n");
            const char *at = strstr(contents, link);
            bool listed = at && toc_end && at < toc_end;
            if (!listed) printf("    the contents do not link '%.*s' %s\n", (int)len, p, link);
            CHECK(listed);
        }
        if (!end) break;
        p = end + 1;
    }
    free(readme);
}

TEST(markdown_links_reach_files_and_headings)
{
    static char paths[64][300];
    int n = markdown_files(paths, 64);
    bool has_report = false;
    for (int k = 0; k < n; k++) {
        has_report = has_report || strncmp(paths[k], "data/report/", 12) == 0;
        CHECK(broken_links(paths[k]) == 0);
    }
    CHECK(has_report); /* the reports are found, so they are checked */
}

/* The checker itself: it finds a missing file and a missing heading, and
 * passes good links, numbered repeats of a heading and links in code. */
TEST(markdown_link_checker_finds_broken_links)
{
    const char *other = "# Other\n\n## The model, exactly\n\n## Notes\n\n## Notes\n";
    write_tmp(T, 0, "other.md", other, strlen(other));
    const char *good = "# Good\n\n## A `kgl` heading: yes\n\n"
                       "[a](other.md) [b](other.md#the-model-exactly) [c](#a-kgl-heading-yes)\n"
                       "[d](other.md#notes-1) ![e](other.md) [f](https://example.org/nothing)\n"
                       "`[g](missing.md)` and\n```\n[h](missing.md)\n```\n";
    const char *path = write_tmp(T, 1, "good.md", good, strlen(good));
    CHECK(broken_links(path) == 0);
    const char *bad = "# Bad\n\n[a](missing.md)\n[b](other.md#the-model)\n[c](#nowhere) [d](other.md#notes-2)\n";
    path = write_tmp(T, 2, "bad.md", bad, strlen(bad));
    printf("    (four broken links expected below)\n");
    CHECK(broken_links(path) == 4);
}

/* pandas' default CSV parser does not read a %.17g number back to the same
 * double; float_precision="round_trip" does. Every pd.read_csv the
 * documents show asks for it. */
TEST(docs_read_csv_calls_read_doubles_exactly)
{
    static char paths[64][300];
    int n = markdown_files(paths, 64), calls = 0;
    for (int k = 0; k < n; k++) {
        char *text = test_slurp(paths[k], NULL);
        if (!CHECK(text != NULL)) continue;
        for (const char *p = strstr(text, "pd.read_csv("); p; p = strstr(p + 1, "pd.read_csv(")) {
            const char *close = strchr(p, ')');
            size_t len = close ? (size_t)(close - p) : strlen(p);
            char call[600];
            snprintf(call, sizeof call, "%.*s", (int)len, p);
            bool exact = strstr(call, "float_precision=\"round_trip\"") != NULL;
            if (!exact) printf("    %s: %s) lacks float_precision=\"round_trip\"\n", paths[k], call);
            CHECK(exact);
            calls++;
        }
        free(text);
    }
    CHECK(calls >= 3); /* the walkthrough, the log, the ranks, export, saturation */
}

/* The claim itself, where pandas is installed: a training log read with
 * float_precision="round_trip" gives every number as Python's float() of
 * its text (the exact double), and the default parser does not. */
TEST(pandas_round_trip_reads_the_log_exactly)
{
    /* the first python3 that has pandas (a pyenv's may not; the system's may) */
    if (run_sh(T, "for p in python3 /usr/bin/python3; do $p -c 'import pandas' 2>/dev/null && echo $p && exit 0; done; "
                  "exit 1", out, sizeof out, err, sizeof err) != 0) {
        test_skip(T, "pandas is not installed");
        return;
    }
    char python[256];
    snprintf(python, sizeof python, "%.*s", (int)strcspn(out, "\n"), out);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "train --dim 16 --heads 2 --steps 60 --log-every 1 --log '%s/log.csv' --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd,
             "%s -c '\n"
             "import csv, pandas as pd\n"
             "rows = list(csv.reader(open(\"%s/log.csv\")))\n"
             "for fp in (None, \"round_trip\"):\n"
             "    df = pd.read_csv(\"%s/log.csv\", float_precision=fp)\n"
             "    n = sum(1 for i, r in enumerate(rows[1:]) for j, c in enumerate(rows[0])\n"
             "            if r[j] != \"\" and df[c].dtype.kind == \"f\" and float(r[j]) != df[c][i])\n"
             "    print(fp, n)\n'",
             python, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    int wrong_default = -1, wrong_round_trip = -1;
    CHECK(sscanf(out, "None %d\nround_trip %d", &wrong_default, &wrong_round_trip) == 2);
    if (wrong_round_trip != 0 || wrong_default <= 0) printf("    %s%s", out, err);
    CHECK(wrong_round_trip == 0);
    CHECK(wrong_default > 0); /* else the documents' warning is stale */
}

/* tests/mutate.py --check (CI runs it) refuses a mutation whose `tests:`
 * names no test: the runner exits 1 on such a filter before running
 * anything, which the mutation run used to count as a kill. A mutation that
 * names a real test (here: this one) passes the same check. */
TEST(mutate_check_refuses_a_tests_filter_that_names_no_test)
{
    char out[4096], err[2048];
    if (run_sh(T, "command -v python3", out, sizeof out, err, sizeof err) != 0) {
        test_skip(T, "python3 is not installed");
        return;
    }
    const char *entry = "id: probe\nfile: tests/layout_docs.c\nfind: mutate_check_refuses\nreplace: x\nbreaks: nothing\n"
                        "tests: %s\n";
    char text[512], cmd[1024];
    snprintf(text, sizeof text, entry, "mutate_check_refuses_a_tests_filter");
    const char *good = write_tmp(T, 0, "good.txt", text, strlen(text));
    snprintf(cmd, sizeof cmd, "python3 tests/mutate.py --check --list '%s'", good);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("    %s%s", out, err);
    CHECK(strstr(out, "1 of 1 mutations apply") != NULL);

    snprintf(text, sizeof text, entry, "mutate_check_refuses_a_tests_filter no_test_is_named_so");
    const char *bad = write_tmp(T, 1, "bad.txt", text, strlen(text));
    snprintf(cmd, sizeof cmd, "python3 tests/mutate.py --check --list '%s'", bad);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 1);
    CHECK(strstr(out, "stale: probe: no test name contains 'no_test_is_named_so'") != NULL);
    CHECK(strstr(out, "0 of 1 mutations apply") != NULL);
}
