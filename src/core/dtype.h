// Element types of checkpoint tensors and the scalar conversions between them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace hearth {

// The safetensors dtype set. F8 types are recognised so a file can be
// described, even where no kernel reads them.
enum class DType : uint8_t {
  BOOL, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64, F8_E4M3, F8_E5M2
};

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // the safetensors spelling, e.g. "BF16"
std::optional<DType> dtype_from_name(std::string_view name);

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// Round to nearest even, NaN kept quiet: the same rounding as PyTorch and NumPy.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float f16_to_f32(uint16_t h) { return float(std::bit_cast<_Float16>(h)); }
inline uint16_t f32_to_f16(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }

}  // namespace hearth
