#include "core/quantize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace hearth {

bool affine_quantizable(int64_t cols, int bits, int group_size) {
  bool bits_ok = bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
  return bits_ok && group_size > 0 && (int64_t(group_size) * bits) % 32 == 0 && cols > 0 &&
         cols % group_size == 0;
}

namespace {
void check(int64_t cols, int bits, int group_size) {
  if (!affine_quantizable(cols, bits, group_size))
    throw std::invalid_argument("cannot affine-quantize " + std::to_string(cols) +
                                " columns with bits=" + std::to_string(bits) +
                                " group_size=" + std::to_string(group_size));
}
}  // namespace

void affine_quantize(const float* w, int64_t rows, int64_t cols, int bits, int group_size,
                     uint32_t* packed, float* scales, float* biases) {
  check(cols, bits, group_size);
  const float n_bins = float((1 << bits) - 1);
  const float eps = 1e-7f;
  const int64_t words_per_row = cols * bits / 32;
  const int64_t groups_per_row = cols / group_size;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    uint32_t* out = packed + r * words_per_row;
    std::fill(out, out + words_per_row, 0u);
    for (int64_t g = 0; g < groups_per_row; ++g) {
      const float* x = row + g * group_size;
      float w_min = INFINITY, w_max = -INFINITY;
      for (int j = 0; j < group_size; ++j) {
        w_max = std::max(w_max, x[j]);
        w_min = std::min(w_min, x[j]);
      }
      bool mask = std::abs(w_min) > std::abs(w_max);
      float scale = std::max((w_max - w_min) / n_bins, eps);
      scale = mask ? scale : -scale;
      float edge = mask ? w_min : w_max;
      float q0 = std::rint(edge / scale);
      float bias = 0;
      if (q0 != 0) {
        scale = edge / q0;
        bias = edge;
      }
      for (int j = 0; j < group_size; ++j) {
        float q = std::rint((x[j] - bias) / scale);
        q = std::min(std::max(q, 0.0f), n_bins);
        uint64_t code = uint64_t(q);
        int64_t bit = (g * group_size + j) * bits;
        out[bit / 32] |= uint32_t(code << (bit % 32));
        if (bit % 32 + bits > 32) out[bit / 32 + 1] |= uint32_t(code >> (32 - bit % 32));
      }
      scales[r * groups_per_row + g] = scale;
      biases[r * groups_per_row + g] = bias;
    }
  }
}

void affine_dequantize(const uint32_t* packed, const float* scales, const float* biases,
                       int64_t rows, int64_t cols, int bits, int group_size, float* out) {
  check(cols, bits, group_size);
  const int64_t words_per_row = cols * bits / 32;
  const int64_t groups_per_row = cols / group_size;
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t* words = packed + r * words_per_row;
    for (int64_t c = 0; c < cols; ++c) {
      int64_t bit = c * bits;
      uint64_t both = words[bit / 32];
      if (bit % 32 + bits > 32) both |= uint64_t(words[bit / 32 + 1]) << 32;
      uint64_t q = (both >> (bit % 32)) & mask;
      int64_t g = r * groups_per_row + c / group_size;
      out[r * cols + c] = scales[g] * float(q) + biases[g];
    }
  }
}

}  // namespace hearth
