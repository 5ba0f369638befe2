// What the int8 matmul's per-target files share: int8_matmul.cpp (packing,
// activations, the dispatch), int8_matmul_avx512.cpp (AVX-512 VNNI, AMX),
// int8_matmul_avx2.cpp (AVX2, AVX-VNNI) and int8_matmul_neon.cpp (64-bit Arm
// NEON, with or without dotprod).
#pragma once

#include <cstdint>
#include <vector>

#include "core/int8_matmul.h"

// A region of functions compiled for extra target features (the per-target
// kernel files): GCC's target pragma, or clang's equivalent (clang has no
// `#pragma GCC target`).
#if defined(__clang__)
#define HEARTH_TARGET_PUSH(features) \
  _Pragma(HEARTH_STRINGIFY(          \
      clang attribute push(__attribute__((target(features))), apply_to = function)))
#define HEARTH_TARGET_POP _Pragma("clang attribute pop")
#else
#define HEARTH_TARGET_PUSH(features) \
  _Pragma("GCC push_options") _Pragma(HEARTH_STRINGIFY(GCC target(features)))
#define HEARTH_TARGET_POP _Pragma("GCC pop_options")
#endif
#define HEARTH_STRINGIFY(x) #x

namespace hearth::int8 {

// Activations quantized per token and weight group, in natural column order.
struct QuantizedActivations {
  std::vector<int8_t> q;    // [n_tokens, cols]
  std::vector<float> step;  // [n_tokens, groups]
  std::vector<float> sum;   // [n_tokens, groups]: step * sum q
};

// A row tile's codes as a target's kernels read them: the layout's width and
// where the tile starts, in the packed buffer or in a per-thread copy the
// target unpacked it to.
struct TileCodes {
  int bits;
  const uint8_t* data;
};

inline TileCodes packed_tile(const Int8Packed& w, int64_t tile) {
  return {w.bits, w.data.get() + tile * w.tile_bytes};
}

// What every target's tile kernel takes from the matrix and the tokens
// before its loops.
template <int Bits, int GS, int NT>
struct TileShape {
  static constexpr size_t kCodeBytes = size_t(GS) * kPackedRows * Bits / 8;  // one group's
  int64_t groups;
  size_t esize;        // one scale's or bias's
  size_t group_bytes;  // one group's codes, scales and biases
  const int8_t* xq[NT];  // each token's quantized activations
  TileShape(const Int8Packed& w, const QuantizedActivations& a, int64_t t0)
      : groups(w.cols / GS),
        esize(dtype_size(w.scale_dtype)),
        group_bytes(int8_group_bytes(Bits, GS, w.scale_dtype)) {
    for (int t = 0; t < NT; ++t) xq[t] = a.q.data() + (t0 + t) * w.cols;
  }
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
extern const Kernels kAvx512;          // int8_matmul_avx512.cpp
extern const Kernels kAvx2, kAvxVnni;  // int8_matmul_avx2.cpp

// Prefill on AMX's tile unit (int8_matmul_avx512.cpp): whether it takes a
// call of n_tokens (a is then padded to whole 16-token blocks), and the call.
bool amx_takes(const Int8Packed& w, int64_t n_tokens);
void amx_matmul(ThreadPool& pool, const Int8Packed& w, const QuantizedActivations& a,
                int64_t n_tokens, float* y);
#elif defined(__aarch64__)
extern const Kernels kNeonDot, kNeon;  // int8_matmul_neon.cpp: with SDOT, plain ARMv8 NEON
#endif

}  // namespace hearth::int8
