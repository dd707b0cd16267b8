/* fuzz_formula.c — the recipe's formula evaluator (src/model/recipe.c): the
 * bytes as a recipe (kgl_recipe_from_memory: its words, comments, and every
 * "=EXPR" word computed), then as one formula (kgl_recipe_eval). make fuzz
 * runs it with a -max_len long enough to nest far past
 * KGL_RECIPE_MAX_DEPTH, where a formula 20,000 deep once overflowed the
 * stack. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kgl.h"

FUZZ_TARGET(formula)
{
    static const kgl_recipe_vars v = {135, 46, 5216, 3589};
    static kgl_recipe r; /* large */
    char err[1024], why[512];
    if (kgl_recipe_from_memory(&r, "fuzz.args", (const char *)data, size, &v, err, sizeof err)) kgl_recipe_free(&r);
    char *formula = malloc(size + 1);
    if (!formula) return 0;
    memcpy(formula, data, size);
    formula[size] = 0;
    double x;
    (void)kgl_recipe_eval(formula, &v, &x, why, sizeof why);
    free(formula);
    return 0;
}
