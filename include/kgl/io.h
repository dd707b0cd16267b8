/* kgl/io.h — files in and out: the line reader, triples and entity-types
 * files (the dataset), JSON writing and reading, safetensors, and the SVG
 * writer. It knows the shape of a knowledge graph (names, ids, triples) but
 * nothing of the model's maths. Uses no other part of kgl but kgl_real
 * (kgl/engine.h), the type of the values safetensors files hold in memory. */
#ifndef KGL_IO_H
#define KGL_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kgl/engine.h"

/* ----------------------------------------------------------------- json --
 * The one way kgl writes JSON (the --json outputs, results.json, safetensors
 * headers): a writer over a FILE* that tracks the nesting and writes every
 * comma, colon, quote and brace itself.
 *
 *   kgl_json_writer w;
 *   kgl_json_writer_init(&w, stdout);
 *   kgl_json_begin_object(&w);
 *   kgl_json_key(&w, "mrr"); kgl_json_put_number(&w, 0.5);
 *   kgl_json_field_int(&w, "n", 12);        -- a key and its value at once
 *   kgl_json_end_object(&w);
 *   kgl_json_newline(&w);                   -- {"mrr":0.5,"n":12} and "\n"
 *
 * A number has 17 significant digits (a double survives the round trip), null
 * for NaN or infinity (JSON has neither); a string has its quote, backslash
 * and control characters escaped. No whitespace is written but by
 * kgl_json_newline, which writes "\n" where it is called, or, inside a
 * container, just after the comma before the next member. A misuse (a value
 * in an object without its key, a key outside an object or where a value was
 * due, an end that does not match its begin, nesting past KGL_JSON_MAX_DEPTH,
 * a container left open at kgl_json_writer_finish) is a programming error:
 * kgl_die says what, and aborts. Several values may follow one another at the
 * top (a line each, with kgl_json_newline between). */
#define KGL_JSON_MAX_DEPTH 64 /* containers inside one another, written or read */
typedef struct kgl_json_writer {
    FILE *f;
    int depth;                        /* open containers */
    char open[KGL_JSON_MAX_DEPTH];    /* '{' or '[' for each open container */
    long members[KGL_JSON_MAX_DEPTH]; /* values written in each open container */
    bool after_key;                   /* a key was written; its value is next */
    bool newline_pending;             /* write "\n" after the next comma */
} kgl_json_writer;

void kgl_json_writer_init(kgl_json_writer *w, FILE *f);
void kgl_json_begin_object(kgl_json_writer *w);
void kgl_json_end_object(kgl_json_writer *w);
void kgl_json_begin_array(kgl_json_writer *w);
void kgl_json_end_array(kgl_json_writer *w);
void kgl_json_key(kgl_json_writer *w, const char *key);
void kgl_json_put_string(kgl_json_writer *w, const char *s);
void kgl_json_put_number(kgl_json_writer *w, double v);
void kgl_json_put_int(kgl_json_writer *w, long long v);
void kgl_json_put_uint(kgl_json_writer *w, unsigned long long v);
void kgl_json_put_bool(kgl_json_writer *w, bool v);
void kgl_json_put_null(kgl_json_writer *w);
/* A number already formatted elsewhere (an option's value as
 * kgl_option_format writes it; a constant as %g writes it, 1e-05 rather than
 * 1.0000000000000001e-05): text that is not one JSON number is a misuse. */
void kgl_json_put_number_text(kgl_json_writer *w, const char *text);
void kgl_json_newline(kgl_json_writer *w);
/* A key and its value in one call. */
void kgl_json_field_string(kgl_json_writer *w, const char *key, const char *s);
void kgl_json_field_number(kgl_json_writer *w, const char *key, double v);
void kgl_json_field_int(kgl_json_writer *w, const char *key, long long v);
void kgl_json_field_bool(kgl_json_writer *w, const char *key, bool v);
void kgl_json_field_null(kgl_json_writer *w, const char *key);
/* A key and an array of n values: numbers, whole numbers, strings; a
 * matrix is rows arrays of cols numbers (row-major v), each a row. Each
 * also writes an element of an array open when key is NULL. */
void kgl_json_field_numbers(kgl_json_writer *w, const char *key, const double *v, int n);
void kgl_json_field_ints(kgl_json_writer *w, const char *key, const int *v, int n);
void kgl_json_field_strings(kgl_json_writer *w, const char *key, const char *const *v, int n);
void kgl_json_field_matrix(kgl_json_writer *w, const char *key, const double *v, int rows, int cols);
/* Dies unless every container begun has ended (the end of a writer's use). */
void kgl_json_writer_finish(kgl_json_writer *w);

/* ---------------------------------------------------------- text output --
 * A CSV or TSV field that pandas reads back unchanged (src/io/text.c):
 * written as it is, or, when it holds any byte of `specials`, in double
 * quotes with its quotes doubled (RFC 4180). */
void kgl_csv_field(FILE *f, const char *s, const char *specials);

/* ----------------------------------------------------------- text input --
 * The one way kgl reads text files (triples, types, CSV): the whole file is
 * read at once, then iterated line by line. A UTF-8 byte-order mark at the
 * start is skipped. Blank lines (empty once a
 * trailing \r is removed) and lines whose first byte is '#' are skipped;
 * fields are split on one separator byte and never trimmed. */
#define KGL_LINE_MAX 65536 /* bytes in a line, without its newline */
/* Bytes in a text file (1 GiB): kgl_text_open refuses a larger file, and
 * anything that is neither a regular file nor a pipe (a folder, /dev/zero). */
#define KGL_FILE_MAX ((size_t)1 << 30)

typedef struct kgl_text {
    char *name;     /* for messages: the path, or a display name */
    char *buf;      /* the contents, NUL-terminated (owned) */
    size_t len;     /* bytes in buf */
    size_t pos;     /* start of the next line */
    int lineno;     /* number of the line last returned (1-based) */
} kgl_text;

/* Reads a file (at most KGL_FILE_MAX bytes; a regular file or a pipe). On
 * failure writes "path: why" into err and returns false. */
bool kgl_text_open(kgl_text *t, const char *path, char *err, size_t err_cap);
/* Uses a copy of `len` bytes of `data`, named `name` in messages. */
void kgl_text_from_memory(kgl_text *t, const char *name, const char *data, size_t len);
/* The next line that is not blank and not a comment, split on `sep`: fills
 * up to max_fields pointers (into the buffer, NUL-terminated) and sets
 * *n_fields to the number of fields the line has. Returns 1 for a line, 0
 * at the end, -1 with "name:line: what is wrong" in err for a NUL byte,
 * invalid UTF-8 or a line longer than KGL_LINE_MAX. */
int kgl_text_next(kgl_text *t, char sep, char **fields, int max_fields, int *n_fields, char *err, size_t err_cap);
/* The words of an options file (a recipe, a benchmark's .args) from t->pos
 * (after a byte-order mark): whitespace-separated, '#' starting a comment to
 * the end of its line. Cuts them in place and fills words[k] (and lines[k],
 * its line, when lines is not NULL) for at most max words. Returns how many,
 * or -1 with "name:line: what is wrong" in err for a NUL byte anywhere (it
 * would end the text early, silently) or more than max words. */
int kgl_text_words(kgl_text *t, char **words, int *lines, int max, char *err, size_t err_cap);
void kgl_text_close(kgl_text *t);
/* Whether `s` (n bytes) is valid UTF-8 (no overlongs, no surrogates, ≤ U+10FFFF). */
bool kgl_utf8_valid(const unsigned char *s, size_t n, size_t *bad_offset);

/* Cutting names for tables and messages: the characters (code points) of
 * the UTF-8 text s[0..n) (n or the terminating NUL, whichever is first),
 * which a terminal shows in as many columns (East Asian wide characters,
 * which take two, are counted as one); and the bytes of s's longest prefix
 * of at most max_chars characters and at most max_bytes bytes (SIZE_MAX: no
 * bound), which ends between two characters: "%.*s" with it never prints
 * part of one, as "%.40s" did (kgl_utf8_prefix is the one cut of every
 * name, table cell and snippet kgl prints). */
size_t kgl_utf8_chars(const char *s, size_t n);
size_t kgl_utf8_prefix(const char *s, size_t max_chars, size_t max_bytes);
/* The columns the UTF-8 text s takes in a terminal, for tables of text
 * that is not all names (kgl demo's Korean memo): Hangul, CJK and
 * fullwidth forms take two, combining diacritics (U+0300–U+036F) none,
 * everything else one. */
int kgl_utf8_columns(const char *s);
/* s in a table column `width` characters wide (negative: left-aligned, as
 * printf's "%-*s") written to f: cut to its first |width| characters, never
 * part of one (kgl_utf8_prefix), and padded by characters. printf's
 * "%-*.*s" counts bytes: it split a character and misaligned every name
 * that is not ASCII. kgl_table_width: the characters of s, its width in
 * such a column. Every table kgl prints cuts its names with these. */
void kgl_table_cell(FILE *f, const char *s, int width);
int kgl_table_width(const char *s);

/* Near matches, for "unknown name" errors: writes into out (always
 * NUL-terminated) up to max_shown of the candidates closest to `word` by
 * edit distance (insert, delete, substitute, and swap of neighbours, each 1;
 * case differences cost nothing more than the distance of the lowercased
 * strings), quoted and comma-separated, closest first, ties in candidate order.
 * Only candidates within max(2, strlen(word)/3) edits, or that contain the word
 * or are contained in it, are shown; returns how many were written (0: none
 * close). */
int kgl_near_matches(const char *word, const char *const *candidates, int n_candidates, int max_shown,
                     char *out, size_t out_cap);

/* ----------------------------------------------------------------- data --
 * Triples files (the README's model section, "Data"; README, "File formats"): UTF-8, one triple
 * per line, head<TAB>relation<TAB>tail, read with the line reader above (so
 * a byte-order mark, blank and '#' lines are skipped, a trailing \r is
 * tolerated, a line is at most KGL_LINE_MAX bytes). Exactly three non-empty
 * fields, never trimmed: a field that starts or ends with whitespace is an
 * error, as is a line of whitespace alone, and a relation whose name ends
 * with KGL_INVERSE_SUFFIX (kgl_inverse_name). A first line of column names
 * is skipped and recorded (kgl_is_header_line, kgl_split.header_line).
 * Every malformed input is reported as "file:line: what is wrong" (or
 * "file: what is wrong", e.g. "file: no triples"). */
typedef struct kgl_triple { int head, rel, tail; } kgl_triple;

/* A file to load: read from `path`, or, when `text` is non-NULL, from those
 * `len` bytes (then `path` is only the name used in messages). */
typedef struct kgl_source { const char *path; const char *text; size_t len; } kgl_source;

#define KGL_UNSEEN_SHOWN 5 /* names of unseen entities/relations a split keeps for messages */

typedef struct kgl_split {
    char *path;          /* name for messages (owned copy) */
    kgl_triple *triples; /* unique triples in file order (first occurrence kept) */
    int n;
    int n_duplicates;    /* lines that repeated an earlier triple of the same file */
    int first_duplicate_line; /* line number of the first such repeat, 0 if none */
    /* Data hygiene, for the caller to warn about (kgl train prints it even
       with --quiet). A first line whose fields are all column words
       (kgl_is_header_line) is skipped as a header: */
    int header_line;     /* its line number, 0 if none */
    char *header;        /* its text, fields joined by tabs (owned), or NULL */
    /* Splits after the first (valid, test) against splits[0] (train): */
    int n_in_train;           /* triples that are also in splits[0] */
    int first_in_train_line;  /* the line of the first of them, 0 if none */
    int n_unseen;             /* triples naming an entity or relation that splits[0] never names */
    int first_unseen_line;    /* the line of the first of them, 0 if none */
    int n_unseen_entities;    /* distinct entities of this split that splits[0] never names */
    int unseen_entity[KGL_UNSEEN_SHOWN];   /* the first of them (ids), in file order */
    int n_unseen_relations;   /* distinct relations likewise */
    int unseen_relation[KGL_UNSEEN_SHOWN];
} kgl_split;

#define KGL_MAX_SPLITS 8
typedef struct kgl_dataset {
    int n_entities, n_relations;          /* n, m (original relations) */
    char **entity_names, **relation_names; /* id order: byte-sorted (strcmp), ids from 0 */
    int n_splits;
    kgl_split splits[KGL_MAX_SPLITS];     /* in the order given: train, valid, test */
    /* filter index (private to data.c): CSR over (entity, relation-or-inverse) */
    int *known_offsets;  /* [n * 2m + 1] */
    int *known;          /* sorted entity ids per key */
} kgl_dataset;

/* Loads the sources together: entity ids are every name appearing as head or
 * tail in ANY of them, sorted by byte order; relation ids likewise. Returns
 * false and writes one message "file:line: what is wrong" (or "file: ...") into err.
 * On failure *ds is left empty (kgl_dataset_free on it is harmless). */
bool kgl_dataset_load(kgl_dataset *ds, const kgl_source *src, int n_src, char *err, size_t err_cap);
void kgl_dataset_free(kgl_dataset *ds);
/* The loader's findings, one line each on f, "file:line: ..." (or "file:
 * ..."): a header line skipped, duplicate triples, valid/test triples also
 * in train, and those naming entities or relations train never names (the
 * first KGL_UNSEEN_SHOWN names, and how such triples are ranked). Nothing
 * for clean splits. kgl train, eval, predict, heads, export and split print
 * them on stderr, --quiet or not. */
void kgl_dataset_write_warnings(FILE *f, const kgl_dataset *ds);
/* Whether a first line looks like column names, so that it is skipped as a
 * header: every one of its n fields is a column word, case-blind. For
 * triples (n = 3): head, relation, tail, subject, predicate, object,
 * source, target, h, r, t, s, p, o, rel, relation_type, from, to, src,
 * dst; for entity types (n = 2): entity, type, name, class, category,
 * label, node. A line with one field that is not such a word ("head",
 * "advises", "bob": an entity called head) is data. */
bool kgl_is_header_line(char *const *fields, int n);
/* The inverse of relation "r" is written "r^-1" (kgl export, kgl heads
 * --query), so no relation may be named so: every loader refuses a name for
 * which this is true (triples files, a checkpoint's names). */
#define KGL_INVERSE_SUFFIX "^-1"
bool kgl_inverse_name(const char *name);
int kgl_dataset_entity_id(const kgl_dataset *ds, const char *name);   /* -1 if unknown */
int kgl_dataset_relation_id(const kgl_dataset *ds, const char *name); /* -1 if unknown */
/* "OPTION: no relation 'x' in the triples; did you mean 'y'? (they have:
 * a, b, c)" into err: the near names (kgl_near_matches) when some is near,
 * the list when there are at most 30; for --relations and a name "=...", that
 * it takes names, never a formula. */
void kgl_dataset_unknown_relation(const kgl_dataset *ds, const char *option, const char *name, char *err,
                                  size_t cap);
/* --relations A,B,...: use[r] (ds->n_relations of them) for each relation
 * named in the comma-separated list, or for every relation when list is
 * NULL. False with "--relations: no relation 'x' in the triples..." or
 * "--relations: the list is empty" in err. */
bool kgl_dataset_choose_relations(const kgl_dataset *ds, const char *list, bool *use, char *err, size_t cap);
/* Filtered-ranking index over every triple of every split: for rel < m, the
 * sorted tails t of known triples (head, rel, t); for rel = m + k, the sorted
 * heads h of known triples (h, k, head) (the inverse direction). No hashing at
 * lookup time (it is called during training-time evaluation). Each entity
 * appears once per key even when several splits hold the triple. */
const int *kgl_dataset_known(const kgl_dataset *ds, int head, int rel, int *count);
/* Whether (head, rel, tail) is a known triple: tail is among
 * kgl_dataset_known(ds, head, rel) (for rel = m + k: whether (tail, k, head)
 * is a triple of some split). */
bool kgl_dataset_is_known(const kgl_dataset *ds, int head, int rel, int tail);

/* entity<TAB>type files (data/academic.types.tsv): names and types, in
 * file order; header_line as in kgl_split (a skipped column-name line). */
typedef struct kgl_types { int n; char **entity; char **type; int header_line; } kgl_types;
/* Same rules and error style as triples files; 2 fields per line; an entity
 * listed twice is an error. */
bool kgl_types_load(kgl_types *ty, const kgl_source *src, char *err, size_t err_cap);
void kgl_types_free(kgl_types *ty);


/* ---------------------------------------------------------- json input --
 * A strict JSON parser (RFC 8259): objects, arrays, strings (every escape;
 * \uXXXX surrogate pairs become one UTF-8 character; raw control characters,
 * invalid UTF-8 and unpaired surrogates are errors), numbers, true, false,
 * null. Nesting is limited to KGL_JSON_MAX_DEPTH containers; a key repeated
 * within one object is an error; anything but whitespace after the value is
 * an error. The tree owns copies of every string, in one allocation, so the
 * text may be freed after parsing.
 *
 *   kgl_json_doc doc;
 *   if (!kgl_json_parse(text, len, &doc, err, sizeof err)) ... err is
 *       "at byte 57: expected ',' or '}', found '\"'" (offset from text[0])
 *   const kgl_json *v = kgl_json_get(doc.root, "shape");
 *   for (size_t i = 0; v && v->type == KGL_JSON_ARRAY && i < v->len; i++) ... v->child[i]
 *   kgl_json_free(&doc);                                                     */

typedef enum kgl_json_type {
    KGL_JSON_NULL,
    KGL_JSON_FALSE,
    KGL_JSON_TRUE,
    KGL_JSON_NUMBER,
    KGL_JSON_STRING,
    KGL_JSON_ARRAY,
    KGL_JSON_OBJECT
} kgl_json_type;

typedef struct kgl_json kgl_json;
struct kgl_json {
    kgl_json_type type;
    size_t offset;     /* byte offset of the value in the text */
    const char *key;   /* a member of an object: its key, decoded, NUL-terminated; else NULL */
    size_t key_len;    /* bytes in key (a key may contain "\u0000") */
    size_t key_offset; /* byte offset of the key in the text */
    const char *str;   /* STRING: decoded UTF-8, NUL-terminated; NUMBER: its text as written */
    size_t len;        /* STRING, NUMBER: bytes in str; ARRAY, OBJECT: number of children */
    double num;        /* NUMBER: the nearest double (±HUGE_VAL beyond the range) */
    kgl_json *child;   /* ARRAY, OBJECT: the `len` children, in text order */
};

typedef struct kgl_json_doc {
    kgl_json *root;
    size_t error_at; /* after a failed parse: the byte offset of the error (SIZE_MAX: out of memory) */
    void *block_;    /* private: nodes and strings */
} kgl_json_doc;

/* Parses `len` bytes of `text` (no NUL terminator needed). On failure writes
 * "at byte N: what was expected/found" into err and returns false; the doc
 * then holds nothing to free (kgl_json_free is harmless). A hostile text can
 * need much more memory than its length (~70 bytes per value): when that is
 * not available the result is false with "out of memory: ..." (error_at is
 * SIZE_MAX), never an abort. */
bool kgl_json_parse(const char *text, size_t len, kgl_json_doc *doc, char *err, size_t err_cap);
void kgl_json_free(kgl_json_doc *doc);
/* The member `key` of an object, or NULL (absent, or obj is not an object). */
const kgl_json *kgl_json_get(const kgl_json *obj, const char *key);
/* A number written as an integer (-?digits: no fraction, no exponent) that
 * fits an int64_t: stores it and returns true. "2", "-0" yes; "2.0", "2e0",
 * "9223372036854775808" no. */
bool kgl_json_int64(const kgl_json *v, int64_t *out);
/* "null", "a boolean", "a number", "a string", "a list", "an object". */
const char *kgl_json_type_name(kgl_json_type t);

/* ---------------------------------------------------------- safetensors --
 * The checkpoint format (README, "The model, exactly"): an 8-byte little-endian header length
 * N, N bytes of JSON header, then the data section. The header maps each
 * tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (byte
 * offsets into the data section) and may hold "__metadata__", an object of
 * strings. Values are little-endian, C order, dtype F32 or F64: kgl writes
 * the dtype of its kgl_real (KGL_ST_DTYPE) and reads both, each tensor
 * converted to kgl_real. Tensors have 1 or 2 dimensions; a dimension may be
 * 0 (an empty tensor: no bytes, data_offsets [x, x]). */
#define KGL_ST_MAX_HEADER 100000000 /* bytes; the reference implementation's cap */
#ifdef KGL_FLOAT32
#define KGL_ST_DTYPE "F32" /* the dtype kgl_st_write writes: kgl_real's */
#else
#define KGL_ST_DTYPE "F64"
#endif

typedef struct kgl_st_entry {
    const char *name;
    int ndim;         /* 1 (a vector, e.g. ln1.gamma [d]) or 2 ([rows, cols]) */
    int64_t shape[2]; /* shape[1] is ignored when ndim is 1 */
    const kgl_real *data; /* prod(shape) values, row-major; may be NULL when that is 0 */
} kgl_st_entry;

/* Writes tensors (dtype KGL_ST_DTYPE, little-endian, C order) in the order given and
 * string metadata (meta_kv: n_meta key/value pairs, flattened as
 * k0,v0,k1,v1,...; written first, as "__metadata__") to `path` atomically,
 * through kgl_outfile: a temporary file in the same folder, fwrite, fflush,
 * fsync, then rename over `path` (and a best-effort fsync of the folder). The
 * header JSON is padded with spaces to a multiple of 8 bytes, so every
 * tensor's data is 8-byte aligned in the file (4-byte for F32, which is
 * all F32 needs). Names and metadata must be
 * valid UTF-8, unique, and no tensor may be called "__metadata__". On
 * failure the temp file is removed, `path` is untouched (a previous file
 * there stays as it was), err says "path: why" and the result is false. */
bool kgl_st_write(const char *path, const kgl_st_entry *t, int n, const char *const *meta_kv, int n_meta,
                  char *err, size_t err_cap);

/* Output files (src/io/tmpfiles.c): every file kgl writes goes through
 * kgl_outfile, so that it is written whole or not at all and never through
 * a file someone else placed. kgl_outfile_open creates "path.PID.R.tmp"
 * beside `path`, R 16 random hex digits (kgl_random64), exclusively
 * (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0666 less the umask: a file or a
 * symbolic link already at that name is never opened; another draw is
 * taken), and for reading too (pread on fileno(o->f) reads back what was
 * written, as kgl benchmark reads its runs' progress); first it removes the temporaries of `path` that killed processes
 * left (kgl_tmp_remove_stale). Write to o->f, then kgl_outfile_commit:
 * fflush, fsync, rename over `path`, fsync of the folder; or
 * kgl_outfile_discard to write nothing. Both close the file; on any failure
 * the temporary is removed and err says "path: what failed: why".
 *
 * What is at `path` already decides the way. Nothing, or a regular file
 * (or a link to one): the temporary and the rename, as above. A character
 * device, a FIFO or a socket (/dev/null, a terminal, `mkfifo p`): a rename
 * would put a regular file in its place (as root, over the system's
 * /dev/null), so it is opened as it is, O_WRONLY | O_NOCTTY without O_CREAT
 * or O_TRUNC (a FIFO waits there for its reader), and o->tmp is NULL; the
 * opened descriptor is checked again, so a regular file swapped in meanwhile
 * still gets the temporary. Then commit is fflush and fclose with their
 * errors checked (no fsync, which a pipe refuses; no rename), and what was
 * written before a failure or a discard has already gone to the device or
 * the reader. A folder or a block device (a disk) is refused: "path: is a
 * folder, not a file: give a file's path". */
typedef struct kgl_outfile {
    FILE *f;     /* write the contents here */
    char *path;  /* the output */
    char *tmp;   /* its temporary; NULL when path is a device or a pipe, written directly */
    int slot;    /* in the registry below */
} kgl_outfile;
bool kgl_outfile_open(kgl_outfile *o, const char *path, char *err, size_t err_cap);
bool kgl_outfile_commit(kgl_outfile *o, char *err, size_t err_cap);
void kgl_outfile_discard(kgl_outfile *o);
/* The first half of commit: fflush, fsync and fclose (o->f is NULL after),
 * the temporary left for commit to rename (a direct output is written by
 * then); on failure the same as commit's (temporary removed, o forgotten).
 * A program that lets another process write the file (kgl benchmark's runs)
 * or writes several files as one set calls it first. */
bool kgl_outfile_finish(kgl_outfile *o, char *err, size_t err_cap);
/* n files as one set (kgl split's three): every one finished first, so a
 * full disk leaves every old file as it was; then renamed in order. A
 * rename that fails leaves a mixed set, and err says which is which: "x.test.tsv:
 * cannot replace it with the new file: WHY; already replaced: x.train.tsv,
 * x.valid.tsv; not replaced (as they were): x.test.tsv". Every o[k] is
 * closed and forgotten after, whatever the result. */
bool kgl_outfile_commit_set(kgl_outfile *o, int n, char *err, size_t err_cap);
/* 64 bits from the kernel's random source (/dev/urandom; without it, the
 * clock and the process mixed): temporary names, a save's run id. */
uint64_t kgl_random64(void);

/* The temporaries being written are registered, so that kgl_tmp_remove_all
 * (safe in a signal handler) can remove them when SIGINT or SIGTERM stops
 * the program; kgl_tmp_remove_stale(path) removes the "path.PID.R.tmp"
 * files of processes that no longer exist (a kill -9 leaves them), never a
 * live process's. kgl_tmp_register returns a slot for kgl_tmp_unregister,
 * or -1 (then the file is not removed on a signal). */
int kgl_tmp_register(const char *path);
void kgl_tmp_unregister(int slot);
void kgl_tmp_remove_all(void);
int kgl_tmp_remove_stale(const char *path); /* returns how many were removed */

typedef struct kgl_st_tensor {
    char *name;
    int ndim;
    int64_t shape[2]; /* shape[1] is 1 when ndim is 1 */
    char dtype[4];    /* the file's: "F32" or "F64" */
    kgl_real *data;   /* aligned copy, host order, converted to kgl_real (F32 to
                         double exactly, F64 to float to the nearest); valid
                         (not NULL) even when empty */
} kgl_st_tensor;

typedef struct kgl_st_file {
    int n;                   /* tensors, in header order */
    kgl_st_tensor *tensors;
    int n_meta;              /* metadata pairs, in header order */
    char **meta_keys, **meta_values;
    void *storage_, *data_;  /* private: names and metadata; the values */
} kgl_st_file;

/* Reads and validates the whole file before returning; on any problem
 * returns false with "path: what is wrong" in err and *f empty. Checked: at
 * least 8 bytes; header length within the file and at most
 * KGL_ST_MAX_HEADER; the header starts with '{' and is valid JSON (messages
 * give the byte offset within the header); each tensor entry is an object with
 * exactly dtype, shape and data_offsets; dtype "F32" or "F64"; a shape of 1 or 2
 * non-negative integers; data_offsets [begin, end] with begin <= end <= the
 * data section's size and end - begin = prod(shape) times the dtype's width
 * (4 or 8 bytes); no two tensors overlap and every byte of the data section
 * belongs to a tensor; __metadata__ (optional) an object of strings; names,
 * keys and values free of NUL bytes. When kgl_real is float, a finite F64
 * value beyond float's range is an error ("tensor 'x' element 3: value
 * 1e+39 does not fit in float32"); NaN and infinities are kept, for the
 * caller to judge. */
bool kgl_st_read(const char *path, kgl_st_file *f, char *err, size_t err_cap);
/* The same checks of the header and layout, reading the header alone (not
 * the values, whatever their size): every tensor's data is NULL, its name,
 * dtype and shape and the metadata are there. For what a file says of
 * itself (a float32 program reads that a checkpoint is F64 even when its
 * values do not fit in float). */
bool kgl_st_read_header(const char *path, kgl_st_file *f, char *err, size_t err_cap);
void kgl_st_free(kgl_st_file *f);
const kgl_st_tensor *kgl_st_find(const kgl_st_file *f, const char *name); /* NULL if absent */
const char *kgl_st_meta(const kgl_st_file *f, const char *key);           /* NULL if absent */
/* The precision the file holds: "F32" or "F64" when every tensor has that
 * dtype, "mixed" when both occur, "none" when there is no tensor. */
const char *kgl_st_file_dtype(const kgl_st_file *f);

/* ------------------------------------------------------------------ svg --
 * Pictures for people: heatmaps (attention maps, one per head) and line plots
 * (diagnostics vs step) as self-contained SVG 1.1 files that open in any
 * browser. No plotting library: src/io/svg.c writes the XML itself.
 *
 * Every function writes the whole picture into memory, then to a temporary
 * file beside `path` (kgl_outfile) and renames it over `path`, so a half-written
 * file never remains. On failure (a bad argument, or the file cannot be
 * written) it writes "path: why" into err and returns false, leaving nothing.
 * Output is deterministic: the same input gives the same bytes (coordinates
 * with at most 2 decimals, values in tooltips with 4 significant digits).
 * All text is XML-escaped; invalid UTF-8 and control characters in labels
 * become U+FFFD. Labels longer than about 16 characters are shortened with
 * "…" on the page, the whole text (up to 256 bytes) in a <title> tooltip;
 * titles, axis titles, the legend's texts and notes are never cut: they
 * wrap to their room (inside a word only when the word alone is wider).
 * Layout uses estimated text widths (kgl_svg_text_width) so that no two
 * texts overlap, none lies on a cell and every one lies inside the page
 * (tests/io_svg.c checks this).
 *
 * Colours: heatmaps use viridis (perceptually uniform, colour-blind safe,
 * legible in greyscale), interpolated linearly between 9 anchors, and a ratio
 * scale ColorBrewer's diverging RdBu (blue, near-white, red; colour-blind
 * safe, but its two ends alike in greyscale); line series
 * use the Okabe–Ito palette, each with its own dash pattern and marker shape
 * so that the series can also be told apart in greyscale. */

/* How a heatmap's values map to colours. Every scale is drawn as a colour
 * bar whose two ends are labelled with the exact bounds ("≤" / "≥" when
 * cells lie beyond them), round values between, and a line saying which
 * scale it is (and, for KGL_COLOUR_AUTO, why). */
typedef enum kgl_colour_scale {
    KGL_COLOUR_LINEAR = 0, /* vmin .. vmax, linear (from the data when not set) */
    KGL_COLOUR_LOG,        /* log10: from the largest value down to the smallest positive one, at most 4
                              decades (vmin / vmax when set and positive); lower values and 0 take the
                              bottom colour and are counted as below the scale */
    KGL_COLOUR_ROW,        /* each row on its own, from 0 (or its minimum when negative) to its maximum,
                              which is printed right of the row; for rows that are distributions */
    KGL_COLOUR_AUTO,       /* LOG when no value is negative and on a linear scale 95% of the cells would
                              take its darkest tenth (a few large values above many small ones), else LINEAR */
    KGL_COLOUR_RATIO,      /* values that are multiples of a reference (e.g. attention weight x n, 1 where
                              it is uniform): log2, symmetric about 1, which takes the neutral colour of a
                              diverging map (blue below, red above); the ends 1/2^k and 2^k, k the whole octaves
                              from 1 up to the largest value (down to the smallest positive one when none is
                              above 1), 1 to 10 (vmax, when set above 1: 1/vmax to vmax); values beyond, 0 and
                              below take the end colours. AUTO never chooses it */
} kgl_colour_scale;

typedef struct kgl_heatmap {
    const char *title;                 /* panel title (the page title for kgl_svg_heatmap), or NULL */
    int rows, cols;                    /* at most 1,000,000 cells drawn (see max_rows) */
    const double *values;              /* rows*cols, row-major */
    const char *const *row_labels;     /* rows names, or NULL for indices 0, 1, ... */
    const char *const *col_labels;     /* cols names, or NULL for indices */
    const char *row_axis, *col_axis;   /* axis titles, e.g. "query entity", "key entity", or NULL */
    /* The colour scale. NaN, or vmin == vmax (so also the 0, 0 of a zeroed
     * struct), means "from the data": the finite minimum and maximum of the
     * cells drawn. Values outside the scale are drawn in its end colours (the
     * legend counts them). */
    double vmin, vmax;
    kgl_colour_scale scale;            /* LINEAR in a zeroed struct; a grid uses its first panel's */
    /* At most max_cols columns and max_rows rows are drawn (0: all): the
     * columns with the largest sums of |value|, then the rows with the
     * largest sums over those columns, both in their order in the data. A
     * line under the panel says which, their share of the total and the
     * range of the values not drawn. They keep a picture small and every
     * label readable at any size (e.g. 64: at most 4,096 cells). */
    int max_rows, max_cols;
    const unsigned char *outline;      /* rows*cols flags: nonzero cells get a black-and-white box, or NULL */
    const char *outline_label;         /* legend text for outlined cells, e.g. "true tail (advises)" */
    const char *value_label;           /* colour-bar title, e.g. "attention weight" */
    bool annotate;                     /* print each value in its cell (when cells are >= 24 px) */
    const char *const *notes;          /* n_notes lines listed under the legend (e.g. a query's answers), or NULL */
    int n_notes;
} kgl_heatmap;

/* One heatmap with a colour-bar legend. Cells are 36 px for up to 13 rows or
 * columns drawn and shrink to about 480 px in all, but not below 11 px up to
 * 80 rows or columns (so every label shows) nor below 4 px; when they are
 * too small for every label, every k-th is shown (k = 2, 5, 10, ..., for
 * rows and columns apart) and the axis title says so. Column labels are
 * rotated 45°; notes are listed under the legend. Each cell is a <rect
 * class="cell"> with a <title> tooltip "row → col: value" (names cut after
 * 48 bytes); a non-finite value is a grey hatched cell whose tooltip says
 * "not finite". The legend shows the colour bar and counts outlined,
 * non-finite and clamped cells. A cell takes about 100 bytes plus its
 * names, and less than 400 whatever they are. */
bool kgl_svg_heatmap(const char *path, const kgl_heatmap *h, char *err, size_t err_cap);
/* n_panels heatmaps (each with its own title, labels and shape) in a grid of
 * n_cols columns, with ONE colour scale and one legend: the scale runs from
 * the smallest to the largest of the panels' bounds, each panel's bound being
 * its vmin/vmax when set and its drawn data otherwise. The legend's title is
 * the first value_label given. A panel with outlines has its own key under it
 * (its outline_label and its count of outlined cells). */
bool kgl_svg_heatmap_grid(const char *path, const char *title, const kgl_heatmap *panels, int n_panels,
                          int n_cols, char *err, size_t err_cap);

typedef struct kgl_series {
    const char *label; /* legend text, or NULL for "series 1", ... */
    int n;             /* points */
    const double *x;   /* n values, or NULL for 0, 1, ..., n-1 */
    const double *y;   /* n values */
} kgl_series;

typedef struct kgl_lineplot {
    const char *title, *x_label, *y_label; /* each may be NULL */
    bool log_y; /* log10 axis with ticks at decades: non-positive values are skipped (counted in a note) */
    bool log_x;
    const kgl_series *series;
    int n_series;
} kgl_lineplot;

/* Axes with round ticks (1, 2 or 5 times a power of ten; decades on log
 * axes), grid lines, axis labels, a legend entry per series, and one
 * <polyline> per run of drawable points of each series, in a distinct colour
 * AND dash pattern. Points that cannot be drawn (non-finite, or non-positive
 * on a log axis) break the line, are counted in a note under the plot and in
 * the series' legend tooltip. A series of at most 60 points also gets a
 * marker per point with a <title> tooltip "label: (x, y)". */
bool kgl_svg_lineplot(const char *path, const kgl_lineplot *p, char *err, size_t err_cap);
/* Several independent line plots on one page, n_cols per row, under `title`. */
bool kgl_svg_lineplot_grid(const char *path, const char *title, const kgl_lineplot *plots, int n_plots,
                           int n_cols, char *err, size_t err_cap);
/* The width in px the layout assumes for text s at font_px (DejaVu Sans
 * advance widths for ASCII, 0.7 em for other characters, 1 em for East Asian
 * wide ones; bold 1.13 times wider); tests check label boxes with it. */
double kgl_svg_text_width(const char *s, double font_px, bool bold);

#endif
