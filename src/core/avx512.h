// What the hand-written AVX-512 kernels (bf16_matmul.cpp, int8_matmul_avx512.cpp)
// share: their target attribute, the intrinsics, and two helpers.
//
// Built with HEARTH_EMULATE_AVX512 (the core_ops_avx512_emulated_test), the
// intrinsics are SIMDe's portable ones and HEARTH_AVX512 names no target, so
// the same kernel source runs, slowly, on a CPU without AVX-512: every
// machine that runs the tests checks these kernels, not only the AVX-512
// ones. The emulated instructions agree with the real ones up to rounding
// (SIMDe's vdpbf16ps adds a pair's two products in the other order and keeps
// denormals), which the tests' tolerances cover; batch invariance depends on
// the order of the kernel's instructions, which is the same. AMX has no such
// emulation: its functions keep their real target and run only with AMX.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "core/packed.h"

#if defined(__x86_64__)
#if defined(HEARTH_EMULATE_AVX512)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define HEARTH_AVX512(features)

// The intrinsics the kernels use that SIMDe 0.7.4 lacks, lane by lane.
namespace hearth::avx512_emulation {
template <typename To, typename ToLane, typename FromLane, typename From, typename Convert>
To lanewise(const From& a, Convert convert) {
  constexpr int kLanes = sizeof(From) / sizeof(FromLane);
  FromLane in[kLanes];
  ToLane out[kLanes];
  std::memcpy(in, &a, sizeof(in));
  for (int i = 0; i < kLanes; ++i) out[i] = convert(in[i]);
  To r;
  std::memcpy(&r, out, sizeof(r));
  return r;
}
inline __m256i cvtepi32_epi16(__m512i a) {
  return lanewise<__m256i, int16_t, int32_t>(a, [](int32_t v) { return int16_t(v); });
}
inline __m512i cvtepu16_epi32(__m256i a) {
  return lanewise<__m512i, int32_t, uint16_t>(a, [](uint16_t v) { return int32_t(v); });
}
inline __m512 cvtph_ps(__m256i a) {
  return lanewise<__m512, float, uint16_t>(a, f16_to_f32);
}
inline __m512 cvtepi32_ps(__m512i a) {
  return lanewise<__m512, float, int32_t>(a, [](int32_t v) { return float(v); });
}
inline __m512i srai_epi32(__m512i a, int shift) {
  return lanewise<__m512i, int32_t, int32_t>(
      a, [shift](int32_t v) { return v >> std::min(shift, 31); });  // past 31: the sign
}
inline void mask_storeu_ps(float* p, __mmask16 mask, __m512 a) {
  float x[16];
  std::memcpy(x, &a, sizeof(x));
  for (int i = 0; i < 16; ++i)
    if (mask >> i & 1) p[i] = x[i];
}
inline __mmask16 cmpgt_epu32_mask(__m512i a, __m512i b) {
  uint32_t x[16], y[16];
  std::memcpy(x, &a, sizeof(x));
  std::memcpy(y, &b, sizeof(y));
  __mmask16 m = 0;
  for (int i = 0; i < 16; ++i) m |= __mmask16((x[i] > y[i]) << i);
  return m;
}
}  // namespace hearth::avx512_emulation
#define _mm512_cvtepi32_epi16 hearth::avx512_emulation::cvtepi32_epi16
#define _mm512_cvtepu16_epi32 hearth::avx512_emulation::cvtepu16_epi32
#define _mm512_cvtph_ps hearth::avx512_emulation::cvtph_ps
#define _mm512_cvtepi32_ps hearth::avx512_emulation::cvtepi32_ps
#define _mm512_cmpgt_epu32_mask hearth::avx512_emulation::cmpgt_epu32_mask
#undef _mm512_srai_epi32  // GCC defines it as a macro when not optimizing
#define _mm512_srai_epi32 hearth::avx512_emulation::srai_epi32
#define _mm512_mask_storeu_ps hearth::avx512_emulation::mask_storeu_ps
#else
#define HEARTH_AVX512(features) __attribute__((target(features)))
#endif

namespace hearth {

// The lanes of a 16-row tile starting at row0 that hold rows of the matrix
// (the last tile may be partial).
inline __mmask16 tile_row_mask(int64_t rows, int64_t row0) {
  return rows - row0 >= kPackedRows ? __mmask16(0xffff) : __mmask16((1u << (rows - row0)) - 1);
}

// Four bytes (4 int8 activations, or 2 BF16 ones) broadcast to every lane
// ({1to16} once folded into the consuming instruction).
HEARTH_AVX512("avx512f") inline __m512i broadcast4(const void* p) {
  return _mm512_set1_epi32(*static_cast<const AliasedInt32*>(p));
}

}  // namespace hearth
#endif
