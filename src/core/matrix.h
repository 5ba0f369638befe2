// A weight matrix as the checkpoint stores it, used in place: dense F32, F16
// or BF16, or MLX affine-quantized (packed uint32 codes with per-group scale
// and bias). Rows are output features, columns input features.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/dtype.h"

namespace hearth {

struct Int8Packed;
struct Bf16Packed;

struct Matrix {
  int64_t rows = 0, cols = 0;
  DType dtype = DType::F32;  // F32, F16 or BF16; U32 when quantized
  const void* data = nullptr;

  // Affine quantization (MLX): value = scale * q + bias, one (scale, bias)
  // per `group_size` consecutive columns of a row; `bits` per code, packed
  // lowest bits first into little-endian uint32 words, each row word-aligned.
  int bits = 0;
  int group_size = 0;
  DType scale_dtype = DType::F32;  // F32, F16 or BF16
  const void* scales = nullptr;
  const void* biases = nullptr;
  // The same weights rearranged for the int8 kernel, when built (int8_pack).
  std::shared_ptr<const Int8Packed> packed;
  // BF16 or F16 weights rearranged for the 16-bit kernels (bf16_pack).
  std::shared_ptr<const Bf16Packed> packed_bf16;

  bool quantized() const { return bits > 0; }
  int64_t words_per_row() const { return cols * bits / 32; }
  int64_t groups_per_row() const { return group_size ? cols / group_size : 0; }
  // Bytes one full pass over the matrix reads (what decode streams per token).
  size_t bytes() const;
};

// Reads element i of a F32/F16/BF16 buffer as float.
inline float load_as_f32(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::F32:
      return static_cast<const float*>(p)[i];
    case DType::BF16:
      return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::F16:
      return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default:
      return 0.0f;
  }
}

// The q-code at column `col` of `row` (any of 2..8 bits; 3/5/6 straddle words).
inline uint32_t quant_code(const Matrix& m, int64_t row, int64_t col) {
  const uint32_t* words = static_cast<const uint32_t*>(m.data) + row * m.words_per_row();
  int64_t bit = col * m.bits;
  uint64_t lo = words[bit / 32];
  uint64_t hi = (bit % 32 + m.bits > 32) ? words[bit / 32 + 1] : 0;
  uint64_t both = lo | (hi << 32);
  return uint32_t((both >> (bit % 32)) & ((1u << m.bits) - 1));
}

}  // namespace hearth
