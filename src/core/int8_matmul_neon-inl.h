// The 64-bit Arm NEON tile kernel over the packed MLX layout (int8_matmul.h),
// written once and compiled once per dot product: int8_matmul_neon.cpp
// includes this file inside a namespace per target (the SDOT one inside a
// target-feature region), after defining that target's `Dot` (no include
// guard, on purpose).
//
// A 64-byte vector of the layout is four 128-bit registers: rows 0-3, 4-7,
// 8-11 and 12-15, bytes 4r'..4r'+3 of a register being the quad of its row
// r'. So each token has four accumulators (lanes = 4 rows) where AVX-512 has
// one, and the group epilogue is the AVX2 one on 4 lanes.

constexpr int kRows = kPackedRows;
// Tokens per kernel call: 4 tokens x 4 row quarters of int32 sums (16
// registers) share the 8 code registers of a step (2 quads x 4 quarters),
// and a token's 2 broadcast quads make 26 of the 32 vector registers. The
// float accumulators (another 16) are touched once per group only.
constexpr int kMaxTokens = 4;

// 4 scales or biases from the checkpoint's dtype. Read as bytes: the packed
// buffer is a byte stream.
inline float32x4_t load4_f32(DType t, const uint8_t* p) {
  if (t == DType::F32) return vreinterpretq_f32_u8(vld1q_u8(p));
  const uint16x4_t h = vreinterpret_u16_u8(vld1_u8(p));
  if (t == DType::F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
  return vreinterpretq_f32_u32(vshll_n_u16(h, 16));  // BF16: the high half of an F32
}

// Four int8 activations (one quad) in every 32-bit lane.
inline int8x16_t broadcast4_neon(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// 8-bit codes 0..255 are stored as signed bytes code - 128 (neither SDOT nor
// SMULL takes u8 x s8; code8_flip); the kernel adds 128 * Σ xq back through
// the group's bias.
constexpr int kOffset8 = 128;

// One group's contribution for one token, as the AVX-512 / AVX2 add_group:
// acc + dot * scale * step + bias * (step * Σ xq), lanes being 4 rows (the
// same fused operations, so the same rounding).
__attribute__((always_inline)) inline float32x4_t add_group(float32x4_t acc, int32x4_t dot,
                                                            float32x4_t scale, float32x4_t bias,
                                                            float step, float sum) {
  acc = vfmaq_f32(acc, vmulq_f32(vcvtq_f32_s32(dot), scale), vdupq_n_f32(step));
  return vfmaq_f32(acc, bias, vdupq_n_f32(sum));
}

// The codes of quads 2j and 2j+1 of row quarter h of a group at blk, as
// bytes. 4-bit: the low and the high nibbles (byte shifts: the high nibble
// needs no mask). 6-bit: the nibbles as 4-bit codes, then the quads' top
// bits (bits 4(j%2) .. 4(j%2)+3 of top-bit vector j/2) shifted to bits 4-5.
// 8-bit: the two vectors as they are.
template <int Bits, int GS>
__attribute__((always_inline)) inline void unpack_step(const uint8_t* blk, int j, int h,
                                                       int8x16_t (&codes)[2]) {
  if constexpr (Bits == 8) {
    for (int i = 0; i < 2; ++i)
      codes[i] = vld1q_s8(reinterpret_cast<const int8_t*>(blk + j * 128 + i * 64 + h * 16));
    return;
  }
  const uint8x16_t v = vld1q_u8(blk + j * 64 + h * 16);
  uint8x16_t first = vandq_u8(v, vdupq_n_u8(0x0f)), second = vshrq_n_u8(v, 4);
  if constexpr (Bits == 6) {
    const uint8x16_t top2 = vdupq_n_u8(0x30);
    const uint8x16_t top = vld1q_u8(blk + GS * kRows / 2 + (j / 2) * 64 + h * 16);
    const uint8x16_t top0 = j % 2 ? top : vshlq_n_u8(top, 4);
    const uint8x16_t top1 = j % 2 ? vshrq_n_u8(top, 2) : vshlq_n_u8(top, 2);
    first = vorrq_u8(first, vandq_u8(top0, top2));
    second = vorrq_u8(second, vandq_u8(top1, top2));
  }
  codes[0] = vreinterpretq_s8_u8(first);
  codes[1] = vreinterpretq_s8_u8(second);
}

// Row tile `tile` (its codes at blk) against NT tokens from t0, group size GS; writes
// y[t0 + t][row0 .. row0+16). Few tokens (decode) get two chains per
// accumulator (even and odd quads) so the dot products' latency overlaps.
template <int Bits, int NT, int GS>
void tile_kernel(const Int8Packed& w, const uint8_t* blk, int64_t tile,
                 const QuantizedActivations& a, int64_t t0, float* y) {
  constexpr int kChains = NT <= 2 ? 2 : 1;
  const TileShape<Bits, GS, NT> shape(w, a, t0);
  const auto& [groups, esize, group_bytes, xq] = shape;
  float32x4_t acc[NT][4];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t)
    for (int h = 0; h < 4; ++h) acc[t][h] = vdupq_n_f32(0.0f);

  for (int64_t g = 0; g < groups; ++g, blk += group_bytes) {
    // Later token blocks find the tile in cache.
    if (t0 == 0) prefetch_ahead(blk, group_bytes);
    int32x4_t isum[NT][4][kChains];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t)
      for (int h = 0; h < 4; ++h)
#pragma GCC unroll 2
        for (int c = 0; c < kChains; ++c) isum[t][h][c] = vdupq_n_s32(0);
    const int64_t col0 = g * GS;
#pragma GCC unroll 16
    for (int j = 0; j < GS / 8; ++j) {
      int8x16_t codes[4][2];  // [row quarter][quad 2j + i]
      for (int h = 0; h < 4; ++h) unpack_step<Bits, GS>(blk, j, h, codes[h]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const int8_t* xj = xq[t] + col0 + 8 * j;
        const int8x16_t x0 = broadcast4_neon(xj), x1 = broadcast4_neon(xj + 4);
        for (int h = 0; h < 4; ++h)
          Dot::template dot2<Bits>(isum[t][h][0], isum[t][h][kChains - 1], codes[h][0], x0,
                                   codes[h][1], x1);
      }
    }
    for (int h = 0; h < 4; ++h) {
      const uint8_t* meta = blk + shape.kCodeBytes + h * 4 * esize;
      const float32x4_t scale = load4_f32(w.scale_dtype, meta);
      float32x4_t bias = load4_f32(w.scale_dtype, meta + kRows * esize);
      // Codes taken as code - 128: Σ code·xq = Σ (code - 128)·xq + 128·Σ xq.
      if constexpr (Bits == 8) bias = vfmaq_f32(bias, scale, vdupq_n_f32(float(kOffset8)));
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const int64_t gi = (t0 + t) * groups + g;
        int32x4_t sum = isum[t][h][0];
        if constexpr (kChains == 2) sum = vaddq_s32(sum, isum[t][h][1]);
        acc[t][h] = add_group(acc[t][h], sum, scale, bias, a.step[gi], a.sum[gi]);
      }
    }
  }
  const int64_t row0 = tile * kRows;
  for (int h = 0; h < 4; ++h) {
    const int64_t n = std::clamp<int64_t>(w.rows - row0 - 4 * h, 0, 4);  // rows of the matrix
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      float* out = y + (t0 + t) * w.rows + row0 + 4 * h;
      if (n == 4) {
        vst1q_f32(out, acc[t][h]);
      } else if (n > 0) {
        float lanes[4];
        vst1q_f32(lanes, acc[t][h]);
        std::memcpy(out, lanes, size_t(n) * sizeof(float));
      }
    }
  }
}

// The codes the kernels read for a call (the AVX-VNNI kernels unpack 6-bit
// tiles for long calls): here always the packed tile.
inline TileCodes tile_codes(const Int8Packed& w, int64_t tile, int64_t) {
  return packed_tile(w, tile);
}

#include "core/int8_tile_table-inl.h"
