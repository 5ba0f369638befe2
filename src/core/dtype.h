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
  BOOL,
  U8,
  I8,
  U16,
  I16,
  F16,
  BF16,
  U32,
  I32,
  F32,
  U64,
  I64,
  F64,
  F8_E4M3,
  F8_E5M2
};

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // the safetensors spelling, e.g. "BF16"
std::optional<DType> dtype_from_name(std::string_view name);

inline float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(uint32_t(h) << 16);
}

// Round to nearest even, NaN kept quiet: the same rounding as PyTorch and NumPy.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// IEEE half precision, in plain integer arithmetic so it builds on every
// target (GCC has no _Float16 on aarch64); vector code converts with
// Highway (core/simd.h).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24.
  const float v = float(mant) * (1.0f / 16777216.0f);
  return sign ? -v : v;
}

// Round to nearest even, with overflow to infinity and gradual underflow.
inline uint16_t f32_to_f16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {                      // normal half
    const uint32_t v = abs - 0x38000000u;        // rebias exponent 127 -> 15
    return sign | uint16_t((v + 0xfffu + ((v >> 13) & 1)) >> 13);
  }
  // Subnormal half (or zero): value / 2^-24, rounded to nearest even.
  const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact: a power of two
  uint32_t q = uint32_t(scaled);
  const float rest = scaled - float(q);
  if (rest > 0.5f || (rest == 0.5f && (q & 1))) ++q;
  return sign | uint16_t(q);
}

}  // namespace hearth
