/* io_json.c — the JSON parser: values and the tree, every escape, numbers
 * and the exact int64 accessor, nesting, duplicate keys, and error messages
 * that give the byte offset and what was expected. Then the writer: commas,
 * nesting, escapes, numbers (17 digits, null for NaN and infinity), newlines,
 * and a misuse caught. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static bool parse(const char *text, kgl_json_doc *doc, char *err)
{
    return kgl_json_parse(text, strlen(text), doc, err, 256);
}

/* The message for a text that must fail ("" when it parsed). */
static const char *error_of(const char *text, size_t len)
{
    static char err[256];
    kgl_json_doc doc;
    err[0] = 0;
    if (kgl_json_parse(text, len, &doc, err, sizeof err)) {
        kgl_json_free(&doc);
        return "";
    }
    return err;
}
#define ERR(text) error_of(text, sizeof text - 1)

TEST(json_tree_values_keys_offsets)
{
    kgl_json_doc doc;
    char err[256];
    const char *text = " {\"a\": [1, -2.5e3, true, false, null], \"b\": {\"c\": \"d\"}, \"\": {}}\n";
    CHECK(parse(text, &doc, err));
    const kgl_json *r = doc.root;
    CHECK(r->type == KGL_JSON_OBJECT && r->len == 3 && r->offset == 1);
    const kgl_json *a = kgl_json_get(r, "a");
    CHECK(a == &r->child[0] && a->type == KGL_JSON_ARRAY && a->len == 5 && a->offset == 7);
    CHECK(strcmp(a->key, "a") == 0 && a->key_len == 1 && a->key_offset == 2);
    CHECK(a->child[0].type == KGL_JSON_NUMBER && a->child[0].num == 1.0 && strcmp(a->child[0].str, "1") == 0);
    CHECK(a->child[1].num == -2500.0 && strcmp(a->child[1].str, "-2.5e3") == 0 && a->child[1].len == 6);
    CHECK(a->child[1].offset == 11 && a->child[1].key == NULL);
    CHECK(a->child[2].type == KGL_JSON_TRUE && a->child[3].type == KGL_JSON_FALSE && a->child[4].type == KGL_JSON_NULL);
    const kgl_json *c = kgl_json_get(kgl_json_get(r, "b"), "c");
    CHECK(c && c->type == KGL_JSON_STRING && strcmp(c->str, "d") == 0 && c->len == 1);
    const kgl_json *e = kgl_json_get(r, "");
    CHECK(e == &r->child[2] && e->type == KGL_JSON_OBJECT && e->len == 0);
    CHECK(kgl_json_get(r, "z") == NULL && kgl_json_get(a, "a") == NULL && kgl_json_get(NULL, "a") == NULL);
    CHECK(strcmp(kgl_json_type_name(a->type), "a list") == 0);
    CHECK(strcmp(kgl_json_type_name(KGL_JSON_TRUE), "a boolean") == 0);
    kgl_json_free(&doc);
    CHECK(doc.root == NULL);
    kgl_json_free(&doc); /* twice is harmless */

    /* a scalar is a valid document; so is a string with only whitespace around */
    CHECK(parse("\t\r\n 42 \n", &doc, err) && doc.root->type == KGL_JSON_NUMBER && doc.root->num == 42);
    kgl_json_free(&doc);
}

TEST(json_string_escapes_and_utf8)
{
    kgl_json_doc doc;
    char err[256];
    /* every escape; \u with upper and lower hex; a surrogate pair; \u0000 */
    const char *text = "\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u0041\\u00e9\\uD55C \\ud83d\\ude00 \\u0000x \xea\xb5\xad\"";
    CHECK(parse(text, &doc, err));
    const char want[] = "q\" b\\ s/ \b\f\n\r\t A\xc3\xa9\xed\x95\x9c \xf0\x9f\x98\x80 \0x \xea\xb5\xad";
    CHECK(doc.root->type == KGL_JSON_STRING);
    CHECK(doc.root->len == sizeof want - 1 && memcmp(doc.root->str, want, sizeof want) == 0); /* NUL-terminated too */
    kgl_json_free(&doc);
    /* keys are decoded the same way */
    CHECK(parse("{\"\\u0061\\n\": 1}", &doc, err));
    CHECK(doc.root->child[0].key_len == 2 && strcmp(doc.root->child[0].key, "a\n") == 0);
    CHECK(kgl_json_get(doc.root, "a\n") != NULL);
    kgl_json_free(&doc);
}

TEST(json_string_errors)
{
    CHECK(strcmp(ERR("\"a\nb\""), "at byte 2: control character 0x0a in a string (write it as an escape)") == 0);
    CHECK(strcmp(ERR("\"a\tb\""), "at byte 2: control character 0x09 in a string (write it as an escape)") == 0);
    CHECK(strcmp(ERR("[\"x\\ud800\"]"),
                 "at byte 3: unpaired surrogate \\ud800 (expected a low surrogate \\udc00-\\udfff after it)") == 0);
    CHECK(strcmp(ERR("\"\\ud800\\u0041\""),
                 "at byte 1: unpaired surrogate \\ud800 (expected a low surrogate \\udc00-\\udfff after it)") == 0);
    CHECK(strcmp(ERR("\"\\udc00\""),
                 "at byte 1: unpaired surrogate \\udc00 (a low surrogate must follow a high one)") == 0);
    CHECK(strcmp(ERR("\"ab\\x\""), "at byte 3: invalid escape: backslash followed by 'x'") == 0);
    CHECK(strcmp(ERR("\"\\u12g4\""), "at byte 1: expected 4 hex digits after \\u") == 0);
    CHECK(strcmp(ERR("\"\\u12"), "at byte 1: expected 4 hex digits after \\u") == 0);
    CHECK(strcmp(ERR("\"ab"), "at byte 3: unterminated string (it starts at byte 0)") == 0);
    CHECK(strcmp(ERR("\"ab\\"), "at byte 4: unterminated string (it starts at byte 0)") == 0);
    CHECK(strcmp(ERR("\"a\xc3\x28\""), "at byte 2: invalid UTF-8 in a string") == 0);
    CHECK(strcmp(ERR("\"\xed\xa0\x80\""), "at byte 1: invalid UTF-8 in a string") == 0); /* a raw surrogate */
    CHECK(strcmp(ERR("\"\xc0\xaf\""), "at byte 1: invalid UTF-8 in a string") == 0);     /* overlong */
    CHECK(strcmp(ERR("\"a\0b\""), "at byte 2: control character 0x00 in a string (write it as an escape)") == 0);
}

static bool int64_of(const char *text, int64_t *v)
{
    kgl_json_doc doc;
    char err[256];
    if (!parse(text, &doc, err)) return false;
    bool ok = kgl_json_int64(doc.root, v);
    kgl_json_free(&doc);
    return ok;
}

TEST(json_numbers_and_exact_int64)
{
    int64_t v = 7;
    CHECK(int64_of("0", &v) && v == 0);
    CHECK(int64_of("-0", &v) && v == 0);
    CHECK(int64_of("  123456789012 ", &v) && v == 123456789012);
    CHECK(int64_of("9223372036854775807", &v) && v == INT64_MAX);
    CHECK(int64_of("-9223372036854775808", &v) && v == INT64_MIN);
    v = 7;
    CHECK(!int64_of("9223372036854775808", &v) && v == 7); /* overflow leaves v alone */
    CHECK(!int64_of("-9223372036854775809", &v));
    CHECK(!int64_of("99999999999999999999999", &v));
    CHECK(!int64_of("1.0", &v) && !int64_of("1e2", &v) && !int64_of("2E0", &v));
    CHECK(!int64_of("\"1\"", &v) && !int64_of("true", &v));

    kgl_json_doc doc;
    char err[256];
    CHECK(parse("[0.1, -0.0, 1e400, 5e-324, 1.7976931348623157e308, 12E+2, 3e-2]", &doc, err));
    const kgl_json *a = doc.root->child;
    CHECK(a[0].num == 0.1 && a[1].num == 0.0 && signbit(a[1].num));
    CHECK(isinf(a[2].num) && a[2].num > 0); /* beyond the range: HUGE_VAL, the text is kept */
    CHECK(strcmp(a[2].str, "1e400") == 0);
    CHECK(a[3].num == 5e-324 && a[4].num == 1.7976931348623157e308 && a[5].num == 1200 && a[6].num == 0.03);
    kgl_json_free(&doc);

    CHECK(strcmp(ERR("01"), "at byte 0: a number cannot start with the digit 0 (leading zero)") == 0);
    CHECK(strcmp(ERR("[-]"), "at byte 2: expected a digit, found ']'") == 0);
    CHECK(strcmp(ERR("1."), "at byte 2: expected a digit after the decimal point, found the end of the text") == 0);
    CHECK(strcmp(ERR("1e+"), "at byte 3: expected a digit in the exponent, found the end of the text") == 0);
    CHECK(strcmp(ERR("+1"), "at byte 0: expected a value, found '+'") == 0);
    CHECK(strcmp(ERR(".5"), "at byte 0: expected a value, found '.'") == 0);
    CHECK(strcmp(ERR("NaN"), "at byte 0: expected a value, found 'N'") == 0);
    CHECK(strcmp(ERR("[1.5x]"), "at byte 4: expected ',' or ']', found 'x'") == 0);
}

TEST(json_nesting_depth_limit)
{
    char text[2 * (KGL_JSON_MAX_DEPTH + 1) + 1];
    for (int depth = KGL_JSON_MAX_DEPTH; depth <= KGL_JSON_MAX_DEPTH + 1; depth++) {
        memset(text, '[', (size_t)depth);
        memset(text + depth, ']', (size_t)depth);
        const char *e = error_of(text, 2 * (size_t)depth);
        if (depth == KGL_JSON_MAX_DEPTH)
            CHECK(strcmp(e, "") == 0);
        else
            CHECK(strcmp(e, "at byte 64: nesting deeper than 64 levels") == 0);
    }
    /* objects count too, and a deep document is walked correctly */
    kgl_json_doc doc;
    char err[256];
    CHECK(parse("{\"a\": [{\"b\": [[{\"c\": [7]}]]}]}", &doc, err));
    const kgl_json *v = kgl_json_get(doc.root, "a");
    v = kgl_json_get(&v->child[0], "b");
    v = kgl_json_get(&v->child[0].child[0], "c");
    CHECK(v && v->len == 1 && v->child[0].num == 7);
    kgl_json_free(&doc);
}

TEST(json_duplicate_keys)
{
    CHECK(strcmp(ERR("{\"k\": 1, \"k\": 2}"), "at byte 9: duplicate key \"k\" in an object") == 0);
    /* the first repeat in text order, found inside a nested object */
    CHECK(strcmp(ERR("{\"a\": {\"x\": 1, \"y\": 2, \"x\": 3}, \"a\": 4}"), "at byte 23: duplicate key \"x\" in an object") ==
          0);
    CHECK(strcmp(ERR("{\"b\":1,\"a\":1,\"b\":1,\"a\":1}"), "at byte 13: duplicate key \"b\" in an object") == 0);
    /* the same key in different objects, and keys differing only in length, are fine */
    CHECK(strcmp(ERR("[{\"k\": 1}, {\"k\": 2, \"kk\": 3, \"k\\u0000\": 4}]"), "") == 0);
    /* an escape that decodes to an existing key is a duplicate */
    CHECK(strcmp(ERR("{\"ab\": 1, \"a\\u0062\": 2}"), "at byte 10: duplicate key \"ab\" in an object") == 0);
}

TEST(json_syntax_errors_say_where_and_what)
{
    CHECK(strcmp(ERR(""), "at byte 0: expected a value, found the end of the text") == 0);
    CHECK(strcmp(ERR("   "), "at byte 3: expected a value, found the end of the text") == 0);
    CHECK(strcmp(ERR("{} x"), "at byte 3: unexpected 'x' after the JSON value") == 0);
    CHECK(strcmp(ERR("{}{}"), "at byte 2: unexpected '{' after the JSON value") == 0);
    CHECK(strcmp(ERR("{}\0"), "at byte 2: unexpected byte 0x00 after the JSON value") == 0);
    CHECK(strcmp(ERR("{\"a\": 1 \"b\": 2}"), "at byte 8: expected ',' or '}', found '\"'") == 0);
    CHECK(strcmp(ERR("{\"a\" 1}"), "at byte 5: expected ':' after the key, found '1'") == 0);
    CHECK(strcmp(ERR("{\"a\": 1,}"), "at byte 8: expected a string key, found '}'") == 0);
    CHECK(strcmp(ERR("{a: 1}"), "at byte 1: expected a string key or '}', found 'a'") == 0);
    CHECK(strcmp(ERR("[1, 2,]"), "at byte 6: expected a value, found ']'") == 0);
    CHECK(strcmp(ERR("[1 2]"), "at byte 3: expected ',' or ']', found '2'") == 0);
    CHECK(strcmp(ERR("[1,"), "at byte 3: expected a value, found the end of the text") == 0);
    CHECK(strcmp(ERR("{\"a\":"), "at byte 5: expected a value, found the end of the text") == 0);
    CHECK(strcmp(ERR("[tru]"), "at byte 1: expected a value (true?)") == 0);
    CHECK(strcmp(ERR("nul"), "at byte 0: expected a value (null?)") == 0);
    CHECK(strcmp(ERR("[\xc3\xa9]"), "at byte 1: expected a value, found byte 0xc3") == 0);
    CHECK(strcmp(ERR("{\"a\": 1}   \n\t"), "") == 0); /* trailing whitespace is fine */

    /* the offset is also in the doc, and a tiny err buffer is not overrun */
    kgl_json_doc doc;
    char small[12];
    memset(small, 'z', sizeof small);
    CHECK(!kgl_json_parse("[1, 2, oops]", 12, &doc, small, 8));
    CHECK(doc.error_at == 7 && doc.root == NULL);
    CHECK(strcmp(small, "at byte") == 0 && small[8] == 'z');
    CHECK(!kgl_json_parse("[", 1, &doc, NULL, 0) && doc.error_at == 1);
}

/* The writer on every byte 1..255: '"' and '\' escaped, \n \r \t short,
 * every other control character as \u00XX (lower-case hex), the rest as is;
 * and the parser reads the text back to the same bytes. */
TEST(json_writer_escapes_every_control_character)
{
    char in[256], want[2048], got[2048];
    size_t w = 0;
    want[w++] = '"';
    for (int c = 1; c < 256; c++) {
        in[c - 1] = (char)c;
        if (c == '"' || c == '\\') {
            want[w++] = '\\';
            want[w++] = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            want[w++] = '\\';
            want[w++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            memcpy(want + w, "\\u00", 4);
            w += 4;
            want[w++] = hex[c >> 4];
            want[w++] = hex[c & 15];
        } else {
            want[w++] = (char)c;
        }
    }
    in[255] = 0;
    want[w++] = '"';
    want[w] = 0;
    FILE *f = tmpfile();
    if (!CHECK(f != NULL)) return;
    kgl_json_writer jw;
    kgl_json_writer_init(&jw, f);
    kgl_json_put_string(&jw, in);
    rewind(f);
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = 0;
    fclose(f);
    if (!CHECK(n == w && memcmp(got, want, w) == 0)) printf("    got %s\n", got);
    /* bytes >= 0x80 are not valid UTF-8 alone: read back the text of 1..127 */
    char *end127 = got;
    size_t len = 0;
    for (int c = 1; c < 128; c++) {
        bool two = c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t';
        len += two ? 2 : c < 0x20 ? 6 : 1;
    }
    memcpy(end127, want, 1 + len);
    end127[1 + len] = '"';
    end127[2 + len] = 0;
    kgl_json_doc doc;
    char err[256];
    if (CHECK(parse(end127, &doc, err))) {
        CHECK(doc.root->type == KGL_JSON_STRING && doc.root->len == 127 && memcmp(doc.root->str, in, 127) == 0);
        kgl_json_free(&doc);
    }
}

/* ------------------------------------------------------------- the writer -- */

/* What fn wrote through a writer, as a NUL-terminated string (static). */
static const char *written(void (*fn)(kgl_json_writer *))
{
    static char out[1024];
    FILE *f = tmpfile();
    if (!f) return "(no tmpfile)";
    kgl_json_writer w;
    kgl_json_writer_init(&w, f);
    fn(&w);
    size_t n = (size_t)ftell(f);
    rewind(f);
    if (n >= sizeof out) n = sizeof out - 1;
    out[fread(out, 1, n, f)] = 0;
    fclose(f);
    return out;
}

static void write_nested(kgl_json_writer *w)
{
    kgl_json_begin_object(w);
    kgl_json_field_int(w, "n", -3);
    kgl_json_key(w, "list");
    kgl_json_begin_array(w);
    kgl_json_put_number(w, 0.5);
    kgl_json_begin_object(w);
    kgl_json_end_object(w);
    kgl_json_begin_array(w);
    kgl_json_end_array(w);
    kgl_json_put_bool(w, true);
    kgl_json_put_null(w);
    kgl_json_put_uint(w, 18446744073709551615ull);
    kgl_json_put_number_text(w, "1e-05");
    kgl_json_put_number_text(w, "-0.25E+3");
    kgl_json_end_array(w);
    kgl_json_field_bool(w, "ok", false);
    kgl_json_key(w, "inner");
    kgl_json_begin_object(w);
    kgl_json_field_string(w, "s", "x");
    kgl_json_field_null(w, "none");
    kgl_json_end_object(w);
    kgl_json_end_object(w);
    kgl_json_writer_finish(w);
}

TEST(json_writer_commas_and_nesting)
{
    const char *got = written(write_nested);
    CHECK(strcmp(got, "{\"n\":-3,\"list\":[0.5,{},[],true,null,18446744073709551615,1e-05,-0.25E+3],\"ok\":false,"
                      "\"inner\":{\"s\":\"x\",\"none\":null}}") == 0);
    /* and the parser reads it back */
    kgl_json_doc doc;
    char err[256];
    CHECK(parse(got, &doc, err));
    CHECK(kgl_json_get(doc.root, "list") && kgl_json_get(doc.root, "list")->len == 8);
    kgl_json_free(&doc);
}

static void write_arrays(kgl_json_writer *w)
{
    static const double v[6] = {0.5, -1, 2, 3, NAN, 4};
    static const int ints[3] = {7, -8, 0};
    static const char *const words[2] = {"a", "b\"c"};
    kgl_json_begin_object(w);
    kgl_json_field_numbers(w, "v", v, 2);
    kgl_json_field_ints(w, "i", ints, 3);
    kgl_json_field_strings(w, "s", words, 2);
    kgl_json_field_matrix(w, "m", v + 2, 2, 2);
    kgl_json_field_numbers(w, "none", v, 0);
    kgl_json_key(w, "rows");
    kgl_json_begin_array(w);
    kgl_json_field_numbers(w, NULL, v, 1); /* NULL: an element of the array open */
    kgl_json_field_ints(w, NULL, ints, 1);
    kgl_json_field_strings(w, NULL, words, 1);
    kgl_json_field_matrix(w, NULL, v, 1, 1);
    kgl_json_end_array(w);
    kgl_json_end_object(w);
    kgl_json_writer_finish(w);
}

TEST(json_writer_arrays_of_numbers_ints_strings_and_a_matrix)
{
    CHECK(strcmp(written(write_arrays), "{\"v\":[0.5,-1],\"i\":[7,-8,0],\"s\":[\"a\",\"b\\\"c\"],"
                                        "\"m\":[[2,3],[null,4]],\"none\":[],\"rows\":[[0.5],[7],[\"a\"],[[0.5]]]}") == 0);
}

static void write_escapes_and_numbers(kgl_json_writer *w)
{
    kgl_json_begin_array(w);
    kgl_json_put_string(w, "a\"b\\c\nd\re\tf\001g/é");
    kgl_json_put_number(w, NAN);
    kgl_json_put_number(w, INFINITY);
    kgl_json_put_number(w, -INFINITY);
    kgl_json_put_number(w, 0.1);
    kgl_json_put_number(w, -0.0);
    kgl_json_put_number(w, 1e300);
    kgl_json_end_array(w);
}

TEST(json_writer_escapes_and_numbers_as_the_number_writer)
{
    /* 0.1 in 17 digits is 0.10000000000000001 (%.17g, so a double survives the trip) */
    CHECK(strcmp(written(write_escapes_and_numbers),
                 "[\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g/é\",null,null,null,0.10000000000000001,-0,1.0000000000000001e+300]") ==
          0);
}

/* Newlines: at the top at once; between members, after the comma. */
static void write_lines(kgl_json_writer *w)
{
    kgl_json_begin_object(w);
    kgl_json_newline(w); /* right after '{' */
    kgl_json_field_int(w, "a", 1);
    kgl_json_newline(w);
    kgl_json_key(w, "b");
    kgl_json_begin_array(w);
    kgl_json_put_int(w, 2);
    kgl_json_newline(w);
    kgl_json_put_int(w, 3);
    kgl_json_newline(w); /* before the end: dropped, the line ends with the container */
    kgl_json_end_array(w);
    kgl_json_end_object(w);
    kgl_json_newline(w);
    kgl_json_begin_array(w); /* a second top-level value on its own line */
    kgl_json_end_array(w);
    kgl_json_newline(w);
}

TEST(json_writer_newlines)
{
    CHECK(strcmp(written(write_lines), "{\n\"a\":1,\n\"b\":[2,\n3]}\n[]\n") == 0);
}

/* fn given a writer on /dev/null, in a child process (test_dies): whether it
 * died of SIGABRT (kgl_die's end), its stderr in err. */
typedef struct writer_call {
    void (*fn)(kgl_json_writer *);
} writer_call;

static void call_writer(void *ctx)
{
    FILE *sink = fopen("/dev/null", "w");
    kgl_json_writer w;
    kgl_json_writer_init(&w, sink);
    ((writer_call *)ctx)->fn(&w);
}

static bool writer_dies(void (*fn)(kgl_json_writer *), char *err, size_t cap)
{
    writer_call call = {fn};
    return test_dies(call_writer, &call, err, cap);
}

static void end_array_in_object(kgl_json_writer *w)
{
    kgl_json_begin_object(w);
    kgl_json_end_array(w);
}
static void end_with_nothing_open(kgl_json_writer *w) { kgl_json_end_object(w); }
static void value_without_key(kgl_json_writer *w)
{
    kgl_json_begin_object(w);
    kgl_json_put_int(w, 1);
}
static void key_in_array(kgl_json_writer *w)
{
    kgl_json_begin_array(w);
    kgl_json_key(w, "k");
}
static void key_without_value(kgl_json_writer *w)
{
    kgl_json_begin_object(w);
    kgl_json_key(w, "k");
    kgl_json_end_object(w);
}
static void left_open(kgl_json_writer *w)
{
    kgl_json_begin_array(w);
    kgl_json_writer_finish(w);
}
static void too_deep(kgl_json_writer *w)
{
    for (int i = 0; i <= KGL_JSON_MAX_DEPTH; i++) kgl_json_begin_array(w);
}
static void number_text_nan(kgl_json_writer *w) { kgl_json_put_number_text(w, "nan"); }
static void number_text_leading_zero(kgl_json_writer *w) { kgl_json_put_number_text(w, "01"); }
static void number_text_bare_point(kgl_json_writer *w) { kgl_json_put_number_text(w, "1."); }
static void balanced(kgl_json_writer *w)
{
    for (int i = 0; i < KGL_JSON_MAX_DEPTH; i++) kgl_json_begin_array(w);
    for (int i = 0; i < KGL_JSON_MAX_DEPTH; i++) kgl_json_end_array(w);
    kgl_json_writer_finish(w);
}

TEST(json_writer_misuse_is_caught)
{
    char err[512];
    CHECK(writer_dies(end_array_in_object, err, sizeof err));
    CHECK(strstr(err, "kgl: JSON writer: the end of an array where an object is open") != NULL);
    CHECK(writer_dies(end_with_nothing_open, err, sizeof err));
    CHECK(strstr(err, "the end of an object where nothing is open") != NULL);
    CHECK(writer_dies(value_without_key, err, sizeof err));
    CHECK(strstr(err, "a number in an object without its key") != NULL);
    CHECK(writer_dies(key_in_array, err, sizeof err));
    CHECK(strstr(err, "the key \"k\" outside an object") != NULL);
    CHECK(writer_dies(key_without_value, err, sizeof err));
    CHECK(strstr(err, "where a key's value was due") != NULL);
    CHECK(writer_dies(left_open, err, sizeof err));
    CHECK(strstr(err, "an array left open") != NULL);
    CHECK(writer_dies(too_deep, err, sizeof err));
    CHECK(strstr(err, "nesting deeper than 64") != NULL);
    CHECK(writer_dies(number_text_nan, err, sizeof err));
    CHECK(strstr(err, "\"nan\" is not a JSON number") != NULL);
    CHECK(writer_dies(number_text_leading_zero, err, sizeof err));
    CHECK(writer_dies(number_text_bare_point, err, sizeof err));
    CHECK(!writer_dies(balanced, err, sizeof err)); /* the limit itself is fine */
    CHECK(err[0] == 0);
}
