/* softmax_masked_rows.h — one check for both precisions' suites (tests/engine_kernels.c,
 * tests/f32/engine_vmath_f32.c): a row whose max is -inf is a fully masked row (p = 0,
 * log-sum-exp -inf) only when every entry is -inf; a NaN among the -infs, which the max
 * passes over, makes the row NaN (p and the result), on every path and in the block. */
#ifndef KGL_TEST_SOFTMAX_MASKED_ROWS_H
#define KGL_TEST_SOFTMAX_MASKED_ROWS_H

#include "engine/cpu.h"
#include "engine/vmath.h"
#include "test.h"

static void check_softmax_masked_and_nan_rows(test_ctx *T)
{
    enum { N = 19 }; /* past one vector of either precision, with a tail */
    const kgl_isa isas[] = {KGL_ISA_PORTABLE, KGL_ISA_AVX2, KGL_ISA_AVX512};
    for (int case_ = 0; case_ < 4; case_++) {
        kgl_real z[N], p[N];
        for (int j = 0; j < N; j++) z[j] = -INFINITY;
        int n = case_ == 0 ? 1 : N;
        bool nan = case_ != 3; /* 0: [NaN]; 1: a NaN first; 2: a NaN in the tail; 3: all -inf */
        if (case_ == 0 || case_ == 1) z[0] = NAN;
        if (case_ == 2) z[N - 2] = NAN;
        for (int k = 0; k < 3; k++) {
            double lse = kgl_softmax_row_isa(isas[k], z, p, n);
            CHECK(nan ? isnan(lse) : lse == -INFINITY);
            bool ok = true;
            for (int j = 0; j < n; j++) ok = ok && (nan ? isnan(p[j]) : p[j] == 0);
            CHECK(ok);
        }
        /* the block path (rows shorter than a vector go through it), in place */
        kgl_real rows[2 * 3];
        for (int j = 0; j < 6; j++) rows[j] = j < 3 ? (j == 1 && nan ? NAN : -INFINITY) : (kgl_real)j;
        double lses[2];
        kgl_softmax_block(rows, rows, 2, 3, lses);
        CHECK(nan ? isnan(lses[0]) && isnan(rows[0]) && isnan(rows[2])
                  : lses[0] == -INFINITY && rows[0] == 0 && rows[1] == 0 && rows[2] == 0);
        CHECK(isfinite(lses[1]) && rows[3] > 0); /* the other row is an ordinary softmax */
    }
}

#endif
