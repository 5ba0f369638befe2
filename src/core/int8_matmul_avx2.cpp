// The int8 matmul on AVX2 CPUs without AVX-512: the tile kernel of
// int8_matmul_avx2-inl.h compiled for AVX-VNNI (vpdpbusd on ymm) and for plain
// AVX2, which has no u8 x s8 dot instruction and emulates it.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/int8_kernels.h"
#include "core/packed.h"

#if defined(__x86_64__)
namespace hearth::int8 {

HEARTH_TARGET_PUSH("avx2,fma,f16c")
namespace plain {

// The u8 x s8 dot of 4-byte lanes, from maddubs (u8 x s8 pairs summed into
// saturating int16) and madd (int16 pairs summed into int32).
struct Dot {
  static __m256i pairs(__m256i u8, __m256i s8) { return _mm256_maddubs_epi16(u8, s8); }
  static __m256i widen(__m256i acc, __m256i i16) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(i16, _mm256_set1_epi16(1)));
  }
  // 8-bit codes would reach 255 * 127 * 2 and saturate, so they are stored as
  // c = code - 128 in [-128, 127] (kOffset8, added back per group through the
  // bias), and c·x as |c| · (x·sign c): |c| <= 128 is exact as u8 (abs of -128
  // is 0x80), |x| <= 127 (quantize_group's range) so x·sign c cannot wrap,
  // and a pair is at most 128 * 127 * 2 = 32512 < 32767: no saturation, the
  // sum is exact. (The other way round, |x| · (c·sign x), -128·-1 wraps.)
  static constexpr int kOffset8 = 128;
  // Quads c0·x0 into s0 and c1·x1 into s1 (the same sum where the kernel
  // keeps one chain). 4-bit partial sums stay int16 lanes, widened once per
  // span of code steps (fold): a pair is at most 15 * 127 * 2 = 3810, and a
  // span of 4 steps adds 8 pairs into a lane, at most 30480 < 32767, so the
  // sums are exact and one madd serves 8 maddubs. 6-bit codes (0..63) are
  // valid u8 too: a pair is at most 63 * 127 * 2 = 16002, a step's two
  // 32004, so a span is one step. 8-bit pairs widen at once.
  template <int Bits>
  static constexpr int kSpanSteps = Bits == 4   ? 4
                                    : Bits == 6 ? 1
                                                : 16;  // 16: a group of 128
  template <int Bits>
  static void dot2(__m256i& s0, __m256i& s1, __m256i c0, __m256i x0, __m256i c1, __m256i x1) {
    if constexpr (Bits != 8) {
      s0 = _mm256_add_epi16(s0, _mm256_add_epi16(pairs(c0, x0), pairs(c1, x1)));
      // Keeps the running sum one register: without it GCC reassociates a
      // span's adds into a tree and spills every product to the stack.
      __asm__("" : "+x"(s0));
    } else {
      s0 = widen(s0, pairs(_mm256_abs_epi8(c0), _mm256_sign_epi8(x0, c0)));
      s1 = widen(s1, pairs(_mm256_abs_epi8(c1), _mm256_sign_epi8(x1, c1)));
    }
  }
  template <int Bits>
  static __m256i fold(__m256i sum, __m256i part) {
    return Bits == 8 ? _mm256_add_epi32(sum, part) : widen(sum, part);
  }
};

#include "core/int8_matmul_avx2-inl.h"

}  // namespace plain
HEARTH_TARGET_POP

HEARTH_TARGET_PUSH("avx2,fma,f16c,avxvnni")
namespace vnni {

struct Dot {
  static constexpr int kOffset8 = 0;
  template <int Bits>
  static constexpr int kSpanSteps = 16;  // int32 partials: a whole group (up to 128)
  template <int Bits>
  static __m256i fold(__m256i sum, __m256i part) {
    return _mm256_add_epi32(sum, part);
  }
  template <int Bits>
  static void dot2(__m256i& s0, __m256i& s1, __m256i c0, __m256i x0, __m256i c1, __m256i x1) {
    s0 = _mm256_dpbusd_avx_epi32(s0, c0, x0);
    s1 = _mm256_dpbusd_avx_epi32(s1, c1, x1);
  }
};

#include "core/int8_matmul_avx2-inl.h"

}  // namespace vnni
HEARTH_TARGET_POP

// A code stored as code ^ 0x80, read as a signed byte, is code - 128.
const Kernels kAvx2{"avx2", uint8_t(plain::Dot::kOffset8), &plain::run_tile};
const Kernels kAvxVnni{"avx2+avxvnni", uint8_t(vnni::Dot::kOffset8), &vnni::run_tile};

}  // namespace hearth::int8
#endif
