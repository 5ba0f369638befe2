#include "core/quant_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/simd.h"

namespace hearth {

namespace {

constexpr int kTileRows = 4;
constexpr int kTileTokens = 4;

// ---- generic path: dequantize a tile of rows, then the dense float kernel ----

void generic_matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y) {
  int64_t row_tiles = (w.rows + kTileRows - 1) / kTileRows;
  pool.parallel_for(row_tiles, 1, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> rows;
    rows.resize(size_t(kTileRows * w.cols));
    float out[kTileRows * kTileTokens];
    for (int64_t tile = b; tile < e; ++tile) {
      int64_t r0 = tile * kTileRows;
      int nr = int(std::min<int64_t>(kTileRows, w.rows - r0));
      const void* wp[kTileRows];
      for (int r = 0; r < nr; ++r) {
        dequantize_row(w, r0 + r, rows.data() + r * w.cols);
        wp[r] = rows.data() + r * w.cols;
      }
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
        int nt = int(std::min<int64_t>(kTileTokens, n_tokens - t0));
        const float* xp[kTileTokens];
        for (int t = 0; t < nt; ++t) xp[t] = x + (t0 + t) * w.cols;
        simd::dot_tile(DType::F32, wp, nr, xp, nt, w.cols, out);
        for (int t = 0; t < nt; ++t)
          for (int r = 0; r < nr; ++r) y[(t0 + t) * w.rows + r0 + r] = out[t * nr + r];
      }
    }
  });
}

}  // namespace

void quant_matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y) {
  generic_matmul(pool, w, x, n_tokens, y);
}

void dequantize_row(const Matrix& w, int64_t row, float* out) {
  const int gs = w.group_size;
  for (int64_t g = 0; g < w.groups_per_row(); ++g) {
    int64_t i = row * w.groups_per_row() + g;
    float s = load_as_f32(w.scale_dtype, w.scales, i);
    float b = load_as_f32(w.scale_dtype, w.biases, i);
    for (int c = 0; c < gs; ++c) out[g * gs + c] = s * float(quant_code(w, row, g * gs + c)) + b;
  }
}

}  // namespace hearth
