#include "core/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/bf16_matmul.h"
#include "core/int8_matmul.h"
#include "core/quant_matmul.h"
#include "core/simd.h"

namespace hearth {

size_t Matrix::bytes() const {
  if (packed) return packed->bytes();
  if (packed_bf16) return packed_bf16->bytes();
  if (!quantized()) return size_t(rows * cols) * dtype_size(dtype);
  return size_t(rows * words_per_row()) * 4 +
         2 * size_t(rows * groups_per_row()) * dtype_size(scale_dtype);
}

namespace {
constexpr int kTileRows = 4;
constexpr int kTileTokens = 4;
}  // namespace

bool pack_for_matmul(ThreadPool& pool, Matrix& w) {
  w.packed = int8_pack(w, pool);
  if (!w.packed) w.packed_bf16 = bf16_pack(w, pool);
  return w.packed || w.packed_bf16;
}

void matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y) {
  // A packed copy, when there is one, is what to use (a stacked matrix has nothing else).
  if (w.packed) return int8_matmul(pool, *w.packed, x, n_tokens, y);
  if (w.packed_bf16) return bf16_matmul(pool, *w.packed_bf16, x, n_tokens, y);
  if (w.quantized()) return quant_matmul(pool, w, x, n_tokens, y);
  const size_t esize = dtype_size(w.dtype);
  const auto* base = static_cast<const uint8_t*>(w.data);
  int64_t row_tiles = (w.rows + kTileRows - 1) / kTileRows;
  pool.parallel_for(row_tiles, 1, [&](int64_t b, int64_t e) {
    float out[kTileRows * kTileTokens];
    for (int64_t tile = b; tile < e; ++tile) {
      int64_t r0 = tile * kTileRows;
      int nr = int(std::min<int64_t>(kTileRows, w.rows - r0));
      const void* wp[kTileRows];
      for (int r = 0; r < nr; ++r) wp[r] = base + size_t(r0 + r) * w.cols * esize;
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
        int nt = int(std::min<int64_t>(kTileTokens, n_tokens - t0));
        const float* xp[kTileTokens];
        for (int t = 0; t < nt; ++t) xp[t] = x + (t0 + t) * w.cols;
        simd::dot_tile(w.dtype, wp, nr, xp, nt, w.cols, out);
        for (int t = 0; t < nt; ++t)
          for (int r = 0; r < nr; ++r) y[(t0 + t) * w.rows + r0 + r] = out[t * nr + r];
      }
    }
  });
}

void matrix_row(const Matrix& w, int64_t row, float* out) {
  if (w.quantized()) return dequantize_row(w, row, out);
  for (int64_t c = 0; c < w.cols; ++c) out[c] = load_as_f32(w.dtype, w.data, row * w.cols + c);
}

void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  float inv = 1.0f / std::sqrt(simd::sum_squares(x, n) / float(n) + eps);
  simd::scale_mul(x, inv, weight, out, n);
}

void rope_rotation(int64_t pos, const float* inv_freq, int head_dim, float attention_scaling,
                   float* cos_sin) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; ++i) {
    double angle = double(pos) * inv_freq[i];
    cos_sin[i] = float(std::cos(angle)) * attention_scaling;
    cos_sin[half + i] = float(std::sin(angle)) * attention_scaling;
  }
}

void rope(float* x, int n_heads, int head_dim, const float* cos_sin) {
  const int half = head_dim / 2;
  const float *cs = cos_sin, *sn = cos_sin + half;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + int64_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      float a = v[i], b = v[i + half];
      v[i] = a * cs[i] - b * sn[i];
      v[i + half] = b * cs[i] + a * sn[i];
    }
  }
}

void softmax(float* x, int64_t n) {
  float m = simd::max_value(x, n);
  float sum = simd::exp_shift_sum(x, m, n);
  simd::scale(x, 1.0f / sum, n);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  simd::silu_mul(gate, up, out, n);
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  const float k = std::sqrt(2.0f / float(M_PI));
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    out[i] = 0.5f * g * (1.0f + std::tanh(k * (g + 0.044715f * g * g * g))) * up[i];
  }
}

void attend(std::span<const AttentionRow> rows, const KvView& kv, int kv_head, float scale,
            float* scratch) {
  simd::attend(rows.data(), int(rows.size()), kv.k_blocks, kv.v_blocks, kv.dtype, kv.block_tokens,
               kv.head_dim, kv.kv_heads, kv_head, scale, scratch);
}

}  // namespace hearth
