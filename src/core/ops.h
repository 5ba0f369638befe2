// The tensor operations of a transformer forward pass, on plain float
// buffers. Each has a fast version (chosen at run time for this CPU) and a
// scalar reference in ops_reference.h that the unit tests compare against.
#pragma once

#include <cstdint>
#include <span>

#include "core/matrix.h"
#include "core/simd.h"
#include "core/thread_pool.h"

namespace hearth {

// y[t, r] = sum_c x[t, c] * W[r, c] for t < n_tokens; x is [n_tokens, cols],
// y is [n_tokens, rows], both row-major.
void matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y);

// Gives W the copy matmul prefers where this CPU has a kernel for W's format
// (int8 for MLX-quantized weights, BF16/F16 rearranged). False when W is
// still read in its stored form.
bool pack_for_matmul(ThreadPool& pool, Matrix& w);

// Row `row` of W as floats (embedding lookup; works on quantized tables too).
void matrix_row(const Matrix& w, int64_t row, float* out);

// out = x / sqrt(mean(x^2) + eps) * weight, over n elements.
void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out);

// The rotary embedding's rotation at position pos, the same for every head
// and layer: cos_sin[i] = cos(pos * inv_freq[i]) * attention_scaling and
// cos_sin[half + i] its sine, for i < half = head_dim / 2 (attention_scaling:
// YaRN's, 1 otherwise). head_dim entries.
void rope_rotation(int64_t pos, const float* inv_freq, int head_dim, float attention_scaling,
                   float* cos_sin);

// Rotary embedding in the Hugging Face "rotate_half" layout, in place, for
// n_heads heads of head_dim, by a rotation from rope_rotation.
void rope(float* x, int n_heads, int head_dim, const float* cos_sin);

// In place: x = softmax(x) over n elements.
void softmax(float* x, int64_t n);

// out[i] = silu(gate[i]) * up[i]
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
// out[i] = gelu_tanh(gate[i]) * up[i]
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);

// Keys and values of one sequence and one layer, in blocks of block_tokens
// tokens, entries of dtype (F32, BF16 or I8). A key block is laid out
// [kv_heads][head_dim][block_tokens] (transposed, so the scores of a run of
// keys come out of one vector multiply-add per dimension); a value block
// [kv_heads][block_tokens][head_dim]. I8 entries are codes c with one f32
// scale s per G = simd::kv_scale_group(head_dim) consecutive dimensions of
// a head at a position, the entry being c * s (symmetric, as llama.cpp's
// q8_0); the scales follow the block's codes, laid out like them with a
// group for a dimension: keys [kv_heads][head_dim / G][block_tokens],
// values [kv_heads][block_tokens][head_dim / G].
struct KvView {
  const void* const* k_blocks = nullptr;
  const void* const* v_blocks = nullptr;
  int block_tokens = 0;
  int kv_heads = 0;
  int head_dim = 0;
  DType dtype = DType::F32;
};

// Attention of query rows that all read kv head `kv_head` of one sequence:
// a GQA group's query heads, of one token or of several consecutive tokens
// (prefill), so each key and value load serves them all. Per row,
// out = softmax(q . K^T * scale) V over its positions [first, n_ctx).
// scratch holds rows.size() times the largest n_ctx rounded up to a block.
void attend(std::span<const AttentionRow> rows, const KvView& kv, int kv_head, float scale,
            float* scratch);

}  // namespace hearth
