// The int8 matmul on 64-bit Arm: the tile kernel of int8_matmul_neon-inl.h
// compiled with the dot-product extension (SDOT, ARMv8.2 dotprod: Cortex-A55,
// A76 and later, Neoverse, Apple) and for plain ARMv8 NEON (Cortex-A53, A72:
// Raspberry Pi 3 and 4), which emulates the s8 x s8 dot with widening
// multiplies. Which one runs is decided at run time (cpu_features.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/int8_kernels.h"
#include "core/packed.h"

#if defined(__aarch64__)
#if defined(__clang__)
#define HEARTH_DOTPROD "dotprod"
#else
// GCC's arm_neon.h declares vdotq_s32 for arch=armv8.2-a+dotprod, and
// inlines it only into functions with (at least) that target: every CPU
// with the dot product is ARMv8.2 or later.
#define HEARTH_DOTPROD "arch=armv8.2-a+dotprod"
#endif

namespace hearth::int8 {

HEARTH_TARGET_PUSH(HEARTH_DOTPROD)
namespace dot {

// SDOT: each 32-bit lane += the dot of its 4 signed bytes with the other
// operand's, i.e. one row's quad against the broadcast activation quad.
// 4- and 6-bit codes (0..63) are valid signed bytes as they are; 8-bit
// codes are stored as code - 128 (kOffset8).
struct Dot {
  template <int Bits>
  static void dot2(int32x4_t& s0, int32x4_t& s1, int8x16_t c0, int8x16_t x0, int8x16_t c1,
                   int8x16_t x1) {
    s0 = vdotq_s32(s0, c0, x0);
    s1 = vdotq_s32(s1, c1, x1);
  }
};

#include "core/int8_matmul_neon-inl.h"

}  // namespace dot
HEARTH_TARGET_POP

namespace nodot {

// The same dot without SDOT. A register holds rows r0..r3 of one quad,
// [r0c0 r0c1 r0c2 r0c3 r1c0 .. r3c3]; SMULL / SMULL2 multiply its low and
// high 8 bytes by the broadcast quad into int16 lanes [r0c0 .. r1c3] and
// [r2c0 .. r3c3], ADDP sums adjacent lanes ([r0c01 r0c23 r1c01 .. r3c23])
// and SADALP sums adjacent lanes again into the row's int32 lane.
//
// int16 range, with |x| <= 127 (quantize_group's range):
// - 8-bit codes c - 128 in [-128, 127]: a product is at most 128 * 127 =
//   16256 in magnitude, the ADDP of two at most 32512 <= 32767. One quad per
//   widening, so 8-bit keeps both chains.
// - 4-bit codes in [0, 15]: a product is at most 15 * 127 = 1905; both quads
//   of the step go into the same int16 lanes (SMLAL), 3810, and ADDP makes
//   4 products, 7620 <= 32767: one widening for the pair.
// - 6-bit codes in [0, 63], the same way: 8001, 16002, then 32004 <= 32767.
// Nothing saturates or wraps (SMULL/SMLAL/ADDP wrap, SADALP widens), so the
// int32 sums equal SDOT's exactly.
struct Dot {
  static int32x4_t dot1(int32x4_t s, int8x16_t c, int8x16_t x) {
    const int16x8_t lo = vmull_s8(vget_low_s8(c), vget_low_s8(x)), hi = vmull_high_s8(c, x);
    return vpadalq_s16(s, vpaddq_s16(lo, hi));
  }
  template <int Bits>
  static void dot2(int32x4_t& s0, int32x4_t& s1, int8x16_t c0, int8x16_t x0, int8x16_t c1,
                   int8x16_t x1) {
    if constexpr (Bits != 8) {
      const int16x8_t lo =
          vmlal_s8(vmull_s8(vget_low_s8(c0), vget_low_s8(x0)), vget_low_s8(c1), vget_low_s8(x1));
      const int16x8_t hi = vmlal_high_s8(vmull_high_s8(c0, x0), c1, x1);
      s0 = vpadalq_s16(s0, vpaddq_s16(lo, hi));
    } else {
      s0 = dot1(s0, c0, x0);
      s1 = dot1(s1, c1, x1);
    }
  }
};

#include "core/int8_matmul_neon-inl.h"

}  // namespace nodot

// A code stored as code ^ 0x80, read as a signed byte, is code - 128.
const Kernels kNeonDot{"neon+dotprod", uint8_t(dot::kOffset8), &dot::run_tile};
const Kernels kNeon{"neon", uint8_t(nodot::kOffset8), &nodot::run_tile};

}  // namespace hearth::int8
#endif
