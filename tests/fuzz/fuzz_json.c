/* fuzz_json.c — the JSON parser: kgl_json_parse on any bytes, then a walk
 * of the tree it returns (every accessor on every node). */
#include <string.h>

#include "fuzz.h"
#include "kgl.h"

static void walk(const kgl_json *v, int depth)
{
    int64_t x;
    (void)kgl_json_int64(v, &x);
    (void)kgl_json_type_name(v->type);
    if (v->type == KGL_JSON_OBJECT && v->len > 0) {
        char key[64];
        size_t n = v->child[0].key_len < sizeof key - 1 ? v->child[0].key_len : sizeof key - 1;
        memcpy(key, v->child[0].key, n);
        key[n] = 0;
        (void)kgl_json_get(v, key);
    }
    if (depth < 64 && (v->type == KGL_JSON_OBJECT || v->type == KGL_JSON_ARRAY))
        for (size_t i = 0; i < v->len; i++) walk(&v->child[i], depth + 1);
}

FUZZ_TARGET(json)
{
    char err[512];
    kgl_json_doc doc = {0};
    if (kgl_json_parse((const char *)data, size, &doc, err, sizeof err)) walk(doc.root, 0);
    kgl_json_free(&doc);
    return 0;
}
