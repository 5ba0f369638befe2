// Vector kernels over float buffers, compiled for every SIMD target Highway
// knows (AVX-512, AVX2, SSE4, NEON, scalar) and dispatched at run time.
#pragma once

#include <cstdint>
#include <limits>

#include "core/dtype.h"

namespace hearth {

// One query row of attention: one head of one token, over its cached
// positions [first, n_ctx) (first > 0 is a sliding window).
struct AttentionRow {
  const float* q;  // head_dim floats
  float* out;      // head_dim floats
  int64_t first, n_ctx;
};

}  // namespace hearth

namespace hearth::simd {

// Dot products of up to 4 weight rows (F32, F16 or BF16, n elements each)
// with up to 4 activation rows: out[t * n_rows + r] = w[r] . x[t].
// Each weight vector is loaded once for all tokens of the tile.
void dot_tile(DType w_type, const void* const* w, int n_rows, const float* const* x, int n_tok,
              int64_t n, float* out);

float sum_squares(const float* x, int64_t n);
// Plain sum with several independent accumulators: a pure streaming read.
float sum(const float* x, int64_t n);
// out = x * s * w
void scale_mul(const float* x, float s, const float* w, float* out, int64_t n);
// out = silu(gate) * up
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
float max_value(const float* x, int64_t n);
// x = exp(x - shift), returns the sum of the new x.
float exp_shift_sum(float* x, float shift, int64_t n);
// In double precision: out[i] = exp((x[i] - shift) * scale) where out is
// not null, 0 where x[i] < at_least; returns their sum (the sampler's
// probabilities: exact enough that a top-p cut matches a double-precision
// reference).
double exp_sum(const float* x, int64_t n, double shift, double scale, double* out = nullptr,
               float at_least = -std::numeric_limits<float>::infinity());
// The sampler's top-p histogram: adds exp(x[i] - top) (in double) to
// mass[b] and 1 to count[b] for b = min(int((top - x[i]) * per_unit),
// buckets - 1) (in float); returns the sum of all. top is max(x).
double exp_histogram(const float* x, int64_t n, float top, float per_unit, int buckets,
                     double* mass, int32_t* count);
void scale(float* x, float s, int64_t n);

// Attention of query rows that share kv head `kv_head` (see ops.h);
// layouts as in ops.h KvView. scratch: n_rows times the largest n_ctx
// rounded up to a block.
void attend(const AttentionRow* rows, int n_rows, const void* const* k_blocks,
            const void* const* v_blocks, DType kv_type, int block_tokens, int head_dim,
            int kv_head, float scale, float* scratch);

// Name of the target chosen for this CPU, e.g. "AVX3".
const char* target_name();

}  // namespace hearth::simd
