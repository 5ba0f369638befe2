// The int8 matmul on AVX2 CPUs without AVX-512: the tile kernel of
// int8_matmul_avx2-inl.h compiled for AVX-VNNI (vpdpbusd on ymm) and for plain
// AVX2, which has no u8 x s8 dot instruction and emulates it.
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "core/int8_kernels.h"
#include "core/packed.h"

#if defined(__x86_64__)
namespace hearth::int8 {

namespace {

__attribute__((target("avx2,fma"))) float group_amax(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8)
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 r = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  r = _mm_max_ps(r, _mm_movehl_ps(r, r));
  return _mm_cvtss_f32(_mm_max_ss(r, _mm_movehdup_ps(r)));
}

__attribute__((target("avx2,fma"))) int32_t quantize_group(const float* x, int n, float inv,
                                                           int8_t* q) {
  const __m256 vinv = _mm256_set1_ps(inv);
  __m256i sum = _mm256_setzero_si256();
  for (int i = 0; i < n; i += 16) {
    // cvtps rounds to nearest even under the default rounding mode; |v| <= 127,
    // so the saturating packs are exact.
    const __m256i v0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    const __m256i v1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vinv));
    // packs works per 128-bit lane: [v0 0-3, v1 0-3 | v0 4-7, v1 4-7], reordered to v0, v1.
    const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xd8);
    const __m128i b =
        _mm_packs_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), b);
    sum = _mm256_add_epi32(sum, _mm256_add_epi32(v0, v1));
  }
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
}

}  // namespace

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace plain {

// The u8 x s8 dot of 4-byte lanes, from maddubs (u8 x s8 pairs summed into
// saturating int16) and madd (int16 pairs summed into int32).
struct Dot {
  static __m256i pairs(__m256i u8, __m256i s8) { return _mm256_maddubs_epi16(u8, s8); }
  static __m256i widen(__m256i acc, __m256i i16) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(i16, _mm256_set1_epi16(1)));
  }
  // 8-bit codes would reach 255 * 127 * 2 and saturate, so they are taken as
  // c = code - 128 in [-128, 127] (kOffset8, added back per group through the
  // bias), and c·x as |c| · (x·sign c): |c| <= 128 is exact as u8 (abs of -128
  // is 0x80), |x| <= 127 (quantize_group's range) so x·sign c cannot wrap,
  // and a pair is at most 128 * 127 * 2 = 32512 < 32767: no saturation, the
  // sum is exact. (The other way round, |x| · (c·sign x), -128·-1 wraps.)
  static constexpr int kOffset8 = 128;
  static __m256i prepare8(__m256i codes) {
    return _mm256_xor_si256(codes, _mm256_set1_epi8(char(0x80)));
  }
  // Quads c0·x0 into s0 and c1·x1 into s1 (the same sum where the kernel
  // keeps one chain). A 4-bit pair is at most 15 * 127 * 2 = 3810, so both
  // quads' pairs add up in int16 exactly and widen once.
  template <int Bits>
  static void dot2(__m256i& s0, __m256i& s1, __m256i c0, __m256i x0, __m256i c1, __m256i x1) {
    if constexpr (Bits == 4) {
      s0 = widen(s0, _mm256_add_epi16(pairs(c0, x0), pairs(c1, x1)));
    } else {
      s0 = widen(s0, pairs(_mm256_abs_epi8(c0), _mm256_sign_epi8(x0, c0)));
      s1 = widen(s1, pairs(_mm256_abs_epi8(c1), _mm256_sign_epi8(x1, c1)));
    }
  }
};

#include "core/int8_matmul_avx2-inl.h"

}  // namespace plain
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
namespace vnni {

struct Dot {
  static constexpr int kOffset8 = 0;
  static __m256i prepare8(__m256i codes) { return codes; }
  template <int Bits>
  static void dot2(__m256i& s0, __m256i& s1, __m256i c0, __m256i x0, __m256i c1, __m256i x1) {
    s0 = _mm256_dpbusd_avx_epi32(s0, c0, x0);
    s1 = _mm256_dpbusd_avx_epi32(s1, c1, x1);
  }
};

#include "core/int8_matmul_avx2-inl.h"

}  // namespace vnni
#pragma GCC pop_options

const Kernels kAvx2{"avx2", &group_amax, &quantize_group, &plain::run_tile};
const Kernels kAvxVnni{"avx2+avxvnni", &group_amax, &quantize_group, &vnni::run_tile};

}  // namespace hearth::int8
#endif
