// What the int8 matmul's per-target files share: int8_matmul.cpp (AVX-512
// VNNI, AMX, the dispatch), int8_matmul_avx2.cpp (AVX2, AVX-VNNI) and
// int8_matmul_neon.cpp (64-bit Arm NEON, with or without dotprod).
#pragma once

#include <cstdint>
#include <vector>

#include "core/int8_matmul.h"

namespace hearth::int8 {

// Activations quantized per token and weight group, in natural column order.
struct QuantizedActivations {
  std::vector<int8_t> q;    // [n_tokens, cols]
  std::vector<float> step;  // [n_tokens, groups]
  std::vector<float> sum;   // [n_tokens, groups]: step * sum q
};

// One target's kernels.
struct Kernels {
  const char* name;
  // 8-bit codes are stored as code ^ code8_flip: 0x80 for kernels that take
  // them as signed code - 128 (plain AVX2, NEON), flipped once at packing
  // rather than at every use.
  uint8_t code8_flip;
  // y[t][rows of the tile] for every token t < n_tokens.
  void (*tile)(const Int8Packed& w, int64_t tile, const QuantizedActivations& a, int64_t n_tokens,
               float* y);
};

#if defined(__x86_64__)
extern const Kernels kAvx512;          // int8_matmul.cpp
extern const Kernels kAvx2, kAvxVnni;  // int8_matmul_avx2.cpp
#elif defined(__aarch64__)
extern const Kernels kNeonDot, kNeon;  // int8_matmul_neon.cpp: with SDOT, plain ARMv8 NEON
#endif

}  // namespace hearth::int8
