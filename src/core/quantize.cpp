#include "core/quantize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace hearth {

bool affine_quantizable(int64_t cols, int bits, int group_size) {
  bool bits_ok = bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
  return bits_ok && group_size > 0 && (int64_t(group_size) * bits) % 32 == 0 && cols > 0 &&
         cols % group_size == 0;
}

namespace {
// 1.5 * 2^23: adding and subtracting it rounds a float in [0, 2^22) to the
// nearest integer, halves to even (the default rounding mode), like rint.
constexpr float kRoundMagic = 12582912.0f;

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
  std::vector<uint32_t> codes(static_cast<size_t>(group_size));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    uint32_t* out = packed + r * words_per_row;
    std::fill(out, out + words_per_row, 0u);
    for (int64_t g = 0; g < groups_per_row; ++g) {
      const float* x = row + g * group_size;
      // True min and max (in 8 lanes, which the compiler vectorizes; min and
      // max do not depend on the order).
      float lo[8], hi[8];
      for (int l = 0; l < 8; ++l) lo[l] = INFINITY, hi[l] = -INFINITY;
      int j0 = 0;
      for (; j0 + 8 <= group_size; j0 += 8)
        for (int l = 0; l < 8; ++l) {
          lo[l] = std::min(lo[l], x[j0 + l]);
          hi[l] = std::max(hi[l], x[j0 + l]);
        }
      float w_min = INFINITY, w_max = -INFINITY;
      for (int l = 0; l < 8; ++l) w_min = std::min(w_min, lo[l]), w_max = std::max(w_max, hi[l]);
      for (int j = j0; j < group_size; ++j) {
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
      // rint((x - bias) / scale) clamped to [0, n_bins], as MLX computes it.
      // Clamping first changes nothing (the bounds are integers) and keeps the
      // value small enough for the add-and-subtract rounding, which rounds
      // halves to even like rint but vectorizes.
      for (int j = 0; j < group_size; ++j) {
        float v = std::min(std::max((x[j] - bias) / scale, 0.0f), n_bins);
        codes[j] = uint32_t(int32_t((v + kRoundMagic) - kRoundMagic));
      }
      if (32 % bits == 0) {  // whole codes per word
        const int per_word = 32 / bits;
        uint32_t* words = out + g * group_size / per_word;
        for (int k = 0; k < group_size / per_word; ++k) {
          uint32_t word = 0;
          for (int l = 0; l < per_word; ++l) word |= codes[k * per_word + l] << (l * bits);
          words[k] = word;
        }
      } else {  // 3/5/6 bits: codes straddle words
        for (int j = 0; j < group_size; ++j) {
          uint64_t code = codes[j];
          int64_t bit = (g * group_size + j) * bits;
          out[bit / 32] |= uint32_t(code << (bit % 32));
          if (bit % 32 + bits > 32) out[bit / 32 + 1] |= uint32_t(code >> (32 - bit % 32));
        }
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
