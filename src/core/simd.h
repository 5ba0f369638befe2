// Vector kernels over float buffers, compiled for every SIMD target Highway
// knows (AVX-512, AVX2, SSE4, NEON, scalar) and dispatched at run time.
#pragma once

#include <cstddef>
#include <cstdint>

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
void scale(float* x, float s, int64_t n);

// Dimensions of a head that share one scale in I8 KV entries (ops.h
// KvView): 32, as llama.cpp's q8_0, or the whole head where 32 does not
// divide it. A vector of lanes then never straddles two groups.
constexpr int kv_scale_group(int head_dim) {
  return head_dim % 32 == 0 ? 32 : head_dim;
}

// Where the f32 scales of one layer's I8 keys (or values) start in a block:
// right after their kv_heads * block_tokens * head_dim codes, at `part`.
constexpr size_t kv_scales_offset(int kv_heads, int block_tokens, int head_dim) {
  return size_t(kv_heads) * block_tokens * head_dim;
}

// Attention of query rows that share kv head `kv_head` (see ops.h);
// layouts as in ops.h KvView. scratch: n_rows times the largest n_ctx
// rounded up to a block.
void attend(const AttentionRow* rows, int n_rows, const void* const* k_blocks,
            const void* const* v_blocks, DType kv_type, int block_tokens, int head_dim,
            int kv_heads, int kv_head, float scale, float* scratch);

// Name of the target chosen for this CPU, e.g. "AVX3".
const char* target_name();

}  // namespace hearth::simd
