/* io_text.c — the line reader every input format goes through. */
#include <stdlib.h>

#include "test.h"

static int next(kgl_text *t, char **f, int *nf, char *err)
{
    return kgl_text_next(t, '\t', f, 4, nf, err, 512);
}

TEST(text_lines_fields_comments_crlf)
{
    const char data[] = "# header\n\na\tb\tc\r\n#x\td\n  \nlast\tline";
    kgl_text t;
    kgl_text_from_memory(&t, "mem.tsv", data, sizeof data - 1);
    char *f[4], err[512];
    int nf;
    CHECK(next(&t, f, &nf, err) == 1);
    CHECK(t.lineno == 3 && nf == 3 && strcmp(f[0], "a") == 0 && strcmp(f[2], "c") == 0); /* \r removed */
    CHECK(next(&t, f, &nf, err) == 1);
    CHECK(t.lineno == 5 && nf == 1 && strcmp(f[0], "  ") == 0); /* whitespace is not blank: the caller rejects it */
    CHECK(next(&t, f, &nf, err) == 1);
    CHECK(t.lineno == 6 && nf == 2 && strcmp(f[1], "line") == 0); /* no final newline */
    CHECK(next(&t, f, &nf, err) == 0);
    kgl_text_close(&t);
}

TEST(text_errors_name_file_and_line)
{
    char *f[4], err[512];
    int nf;
    kgl_text t;
    const char nul[] = "a\tb\tc\nx\ty\0z\n";
    kgl_text_from_memory(&t, "n.tsv", nul, sizeof nul - 1);
    CHECK(next(&t, f, &nf, err) == 1);
    CHECK(next(&t, f, &nf, err) == -1);
    CHECK(strcmp(err, "n.tsv:2: line contains a NUL byte (column 4)") == 0);
    kgl_text_close(&t);

    const char bad[] = "ok\n\xc3\x28\n";
    kgl_text_from_memory(&t, "u.tsv", bad, sizeof bad - 1);
    CHECK(next(&t, f, &nf, err) == 1);
    CHECK(next(&t, f, &nf, err) == -1);
    CHECK(strcmp(err, "u.tsv:2: invalid UTF-8 at byte 1 of the line") == 0);
    kgl_text_close(&t);

    static char longline[KGL_LINE_MAX + 10];
    memset(longline, 'a', sizeof longline);
    kgl_text_from_memory(&t, "l.tsv", longline, sizeof longline);
    CHECK(next(&t, f, &nf, err) == -1);
    CHECK(strstr(err, "l.tsv:1: line is 65546 bytes long; the limit is 65536") != NULL);
    kgl_text_close(&t);

    CHECK(!kgl_text_open(&t, "/nonexistent/dir/x.tsv", err, sizeof err));
    CHECK(strcmp(err, "/nonexistent/dir/x.tsv: cannot open: No such file or directory") == 0);
}

TEST(utf8_validation)
{
    size_t at = 0;
    CHECK(kgl_utf8_valid((const unsigned char *)"\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4", 9, &at)); /* 한국어 */
    CHECK(kgl_utf8_valid((const unsigned char *)"\xf0\x9f\x98\x80", 4, &at));                      /* emoji */
    CHECK(!kgl_utf8_valid((const unsigned char *)"ab\xc0\xaf", 4, &at) && at == 2);                 /* overlong */
    CHECK(!kgl_utf8_valid((const unsigned char *)"\xed\xa0\x80", 3, &at) && at == 0);               /* surrogate */
    CHECK(!kgl_utf8_valid((const unsigned char *)"x\xe2\x82", 3, &at) && at == 1);                  /* truncated */
    CHECK(!kgl_utf8_valid((const unsigned char *)"\xff", 1, &at));
}

/* The one cut of names (issue 46): "%.40s" cut "ab" and twelve 3-byte
   euro signs in the middle of the thirteenth. kgl_utf8_prefix ends between
   two characters, at most max_chars of them and max_bytes bytes. */
TEST(utf8_prefix_cuts_between_characters)
{
    char name[2 + 3 * 45 + 1] = "ab";
    for (int k = 0; k < 45; k++) strcat(name, "\xe2\x82\xac"); /* U+20AC, 3 bytes */
    CHECK(kgl_utf8_chars(name, SIZE_MAX) == 47 && kgl_utf8_chars(name, 40) == 15); /* 2 + 12 whole + 1 begun */
    CHECK(kgl_utf8_prefix(name, 40, SIZE_MAX) == 2 + 3 * 38);
    CHECK(kgl_utf8_prefix(name, SIZE_MAX, 40) == 2 + 3 * 12); /* not 40: that splits the 13th */
    CHECK(kgl_utf8_prefix(name, SIZE_MAX, 41) == 41 && kgl_utf8_prefix(name, SIZE_MAX, 1) == 1);
    CHECK(kgl_utf8_prefix(name, 100, SIZE_MAX) == strlen(name) && kgl_utf8_prefix(name, 0, SIZE_MAX) == 0);
    CHECK(kgl_utf8_prefix("\xf0\x9f\x98\x80x", 1, SIZE_MAX) == 4 && kgl_utf8_prefix("\xf0\x9f\x98\x80x", 9, 3) == 0);
    CHECK(kgl_utf8_prefix("", 5, 5) == 0 && kgl_utf8_chars("", 5) == 0);
}

/* A table cell (kgl_table_cell): a name cut to the column's characters,
   never inside one, and padded by characters on the side the width's sign
   says; kgl_table_width counts characters, not bytes. */
TEST(table_cell_cuts_and_pads_by_characters)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!CHECK(f != NULL)) return;
    kgl_table_cell(f, "\xc3\xa4" "bc", -5); /* "äbc": 3 characters, 4 bytes, then 2 spaces */
    fputc('|', f);
    kgl_table_cell(f, "ab", 4);
    fputc('|', f);
    kgl_table_cell(f, "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", -3); /* "€€€€" cut to "€€€" */
    fputc('|', f);
    fclose(f);
    const char *want = "\xc3\xa4" "bc  |  ab|\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac|";
    if (!CHECK(text && strcmp(text, want) == 0)) printf("    got '%s'\n", text ? text : "");
    free(text);
    CHECK(kgl_table_width("\xc3\xa9\xe2\x82\xacx") == 3 && kgl_table_width("") == 0);
}

/* Near matches: the closest names first, a swap of neighbours counts one
 * edit, case is ignored, nothing far is offered, and the output is cut at a
 * name boundary when the buffer is small. */
TEST(near_matches_closest_first)
{
    const char *names[] = {"advises", "authored", "cites", "affiliated", "about", "advised_by"};
    char out[256];
    CHECK(kgl_near_matches("advsies", names, 6, 3, out, sizeof out) >= 1);
    CHECK(strncmp(out, "'advises'", 9) == 0);
    CHECK(kgl_near_matches("CITES", names, 6, 3, out, sizeof out) == 1);
    CHECK(strcmp(out, "'cites'") == 0);
    CHECK(kgl_near_matches("zzzzzzzz", names, 6, 3, out, sizeof out) == 0);
    CHECK(out[0] == '\0');
    /* containment: "affil" is far by edits (5 deletions) but a prefix */
    CHECK(kgl_near_matches("affil", names, 6, 3, out, sizeof out) == 1);
    CHECK(strcmp(out, "'affiliated'") == 0);
    /* advise: distance 1 to advises, 3 to advised_by (within limit 2? no: 6/3=2) */
    CHECK(kgl_near_matches("advise", names, 6, 2, out, sizeof out) == 2);
    CHECK(strcmp(out, "'advises', 'advised_by'") == 0);
    char small[12];
    CHECK(kgl_near_matches("advise", names, 6, 2, small, sizeof small) == 1);
    CHECK(strcmp(small, "'advises'") == 0);
}

/* A CSV field is quoted only when it holds a special byte, its quotes
   doubled: a relation named `a,"b"` reads back as one field. */
TEST(csv_field_quotes_only_when_needed)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!CHECK(f != NULL)) return;
    kgl_csv_field(f, "plain", ",\"\r\n");
    fputc('|', f);
    kgl_csv_field(f, "a,\"b\"", ",\"\r\n");
    fputc('|', f);
    kgl_csv_field(f, "tab\there", "\"");
    fclose(f);
    if (!CHECK(text && strcmp(text, "plain|\"a,\"\"b\"\"\"|tab\there") == 0)) printf("    %s\n", text ? text : "");
    free(text);
}

/* Columns in a terminal: two for a Hangul syllable or a fullwidth form,
   none for a combining accent, one for the rest (a table of kgl demo's
   memo lines up by them). */
TEST(utf8_columns_count_wide_and_combining_characters)
{
    CHECK(kgl_utf8_columns("") == 0);
    CHECK(kgl_utf8_columns("bob") == 3);
    CHECK(kgl_utf8_columns("\xed\x95\x9c\xea\xb5\xad") == 4);  /* 한국: two Hangul syllables */
    CHECK(kgl_utf8_columns("e\xcc\x81t\xc3\xa9") == 3);        /* e + U+0301, t, é */
    CHECK(kgl_utf8_columns("\xef\xbc\xa1x") == 3);             /* fullwidth A, x */
    CHECK(kgl_utf8_columns("\xe2\x88\x9a") == 1);              /* √ */
}
