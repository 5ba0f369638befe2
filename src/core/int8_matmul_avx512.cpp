// The int8 matmul on AVX-512 VNNI CPUs: the tile kernel (vpdpbusd on zmm, 16
// rows a vector) for decode and prefill, and on CPUs with AMX the tile unit
// for prefill.
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "core/amx.h"
#include "core/avx512.h"
#include "core/int8_kernels.h"
#include "core/packed.h"

#if defined(__x86_64__)
namespace hearth::int8 {
namespace avx512 {

constexpr int kRows = kPackedRows;
constexpr int kMaxTokens = 8;  // tokens per kernel call (accumulators in registers)

HEARTH_AVX512("avx512f,avx512bw") inline __m512 load16_f32(DType t, const uint8_t* p) {
  if (t == DType::F32) return _mm512_loadu_ps(p);
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if (t == DType::F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));  // BF16
}

// One group's contribution for one token: acc + (Σ q·xq) * scale * step +
// bias * (step * Σ xq), lanes being the tile's 16 rows.
HEARTH_AVX512("avx512f") __attribute__((always_inline)) inline __m512
add_group(__m512 acc, __m512i dot, __m512 scale, __m512 bias, float step, float sum) {
  acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), scale), _mm512_set1_ps(step), acc);
  return _mm512_fmadd_ps(bias, _mm512_set1_ps(sum), acc);
}

// The codes of quads 2j and 2j+1 of all 16 rows of a group at blk, as bytes.
// 4-bit: the low and the high nibbles (with HighInPlace the high nibble is
// left where it is, as 16 * code). 6-bit: the nibbles as 4-bit codes, then
// the quads' top bits (bits 4(j%2) .. 4(j%2)+3 of top-bit vector j/2)
// shifted to bits 4-5 and OR-ed under the mask onto the nibble (vpternlogd
// 0xF8: a | (b & c)). 8-bit: the two vectors as they are.
template <int Bits, int GS, bool HighInPlace>
HEARTH_AVX512("avx512f,avx512bw") __attribute__((always_inline)) inline void
unpack_step(const uint8_t* blk, int j, __m512i& first, __m512i& second) {
  if constexpr (Bits == 8) {
    first = _mm512_load_si512(blk + j * 128);
    second = _mm512_load_si512(blk + j * 128 + 64);
    return;
  }
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i v = _mm512_load_si512(blk + j * 64);
  first = _mm512_and_si512(v, low4);
  second = HighInPlace ? _mm512_and_si512(v, _mm512_set1_epi8(char(0xf0)))
                       : _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
  if constexpr (Bits == 6) {
    const __m512i top2 = _mm512_set1_epi8(0x30);
    const __m512i top = _mm512_load_si512(blk + GS * kRows / 2 + (j / 2) * 64);
    const __m512i top_first = j % 2 ? top : _mm512_slli_epi16(top, 4);
    const __m512i top_second = j % 2 ? _mm512_srli_epi16(top, 2) : _mm512_slli_epi16(top, 2);
    first = _mm512_ternarylogic_epi32(first, top_first, top2, 0xF8);
    second = _mm512_ternarylogic_epi32(second, top_second, top2, 0xF8);
  }
}

// Row tile `tile` (its codes at blk) against NT tokens, group size GS (a
// compile-time constant, so the inner loops unroll fully and the
// accumulators stay in registers); writes y[t0 + t][row0 .. row0+16).
//
// With few tokens, each token has two chains of vpdpbusd (even and odd
// quads) to hide its latency, and the odd quads' 4-bit codes are used in
// place, as 16 * code: the chain is divided by 16 once per group (exactly, it
// is a multiple of 16), which saves a shift per vector. With more tokens the
// tokens' chains already overlap, and the unpacking is shared by all of them.
template <int Bits, int NT, int GS>
HEARTH_AVX512("avx512f,avx512bw,avx512vnni")
void tile_kernel(const Int8Packed& w, const uint8_t* blk, int64_t tile,
                 const QuantizedActivations& a, int64_t t0, float* y) {
  constexpr int kChains = NT < 4 ? 2 : 1;
  constexpr bool kHighInPlace = Bits == 4 && kChains == 2;
  const TileShape<Bits, GS, NT> shape(w, a, t0);
  const auto& [groups, esize, group_bytes, xq] = shape;
  __m512 acc[NT];
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();

  for (int64_t g = 0; g < groups; ++g, blk += group_bytes) {
    // Later token blocks find the tile in cache. A few tokens stream the
    // tile once: there the near (L1) prefetch cost a Zen 5 about 8% of 4-bit
    // decode, as it did the AVX2 kernel on a Zen 3; more tokens reuse each
    // line, and the near one kept prefill about 3% faster (docs/performance/engine.md,
    // "Weight prefetch").
    if (t0 == 0) {
      if constexpr (kChains == 2) prefetch_far(blk, group_bytes);
      else prefetch_ahead(blk, group_bytes);
    }
    __m512i isum[NT][kChains];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
#pragma GCC unroll 2
      for (int c = 0; c < kChains; ++c) isum[t][c] = _mm512_setzero_si512();
    const int64_t col0 = g * GS;
#pragma GCC unroll 16
    for (int j = 0; j < GS / 8; ++j) {
      __m512i first, second;  // the codes of quads 2j and 2j+1 of all 16 rows
      unpack_step<Bits, GS, kHighInPlace>(blk, j, first, second);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        isum[t][0] = _mm512_dpbusd_epi32(isum[t][0], first, broadcast4(xq[t] + col0 + 8 * j));
        isum[t][kChains - 1] =
            _mm512_dpbusd_epi32(isum[t][kChains - 1], second, broadcast4(xq[t] + col0 + 8 * j + 4));
      }
    }
    const __m512 scale = load16_f32(w.scale_dtype, blk + shape.kCodeBytes);
    const __m512 bias = load16_f32(w.scale_dtype, blk + shape.kCodeBytes + kRows * esize);
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const int64_t gi = (t0 + t) * groups + g;
      __m512i sum = isum[t][0];
      if constexpr (kHighInPlace)
        sum = _mm512_add_epi32(sum, _mm512_srai_epi32(isum[t][1], 4));
      else if constexpr (kChains == 2)
        sum = _mm512_add_epi32(sum, isum[t][1]);
      acc[t] = add_group(acc[t], sum, scale, bias, a.step[gi], a.sum[gi]);
    }
  }
  const int64_t row0 = tile * kRows;
  const __mmask16 valid = tile_row_mask(w.rows, row0);
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * w.rows + row0, valid, acc[t]);
}

// The codes the kernels read: always the packed tile (the layout's 4 and
// 6 bits unpack in a few instructions per vector, shared by 8 tokens).
inline TileCodes tile_codes(const Int8Packed& w, int64_t tile, int64_t) {
  return packed_tile(w, tile);
}

#include "core/int8_tile_table-inl.h"

}  // namespace avx512

const Kernels kAvx512{"avx512-vnni", 0, &avx512::run_tile};

namespace {

using avx512::add_group;
using avx512::kRows;
using avx512::load16_f32;

// ---- AMX: prefill on the tile unit ----
//
// A group's 8-bit codes in quad order (16 vectors per 64 columns) are exactly
// an AMX "B" tile: 16 quad rows x 16 weight rows x 4 codes. 16 tokens' int8
// activations over those columns are an "A" tile, so one TDPBSUD (signed
// activations x unsigned codes) gives the group's Σ q·xq for a 16-token x
// 16-row block; the vector unit then applies the group's scales, steps and
// biases as the VNNI kernel does. 4-bit codes are first unpacked to bytes,
// once per row tile, into a per-thread buffer. Tiles: 0 accumulates, 4-5
// hold activations, 6-7 codes (two of each for 128-column groups).

// A row tile's 4-bit codes as bytes, in quad order: GS * 16 bytes per group.
HEARTH_AVX512("avx512f,avx512bw") void unpack_codes(const Int8Packed& w, int64_t tile,
                                                   uint8_t* out) {
  const uint8_t* blk = w.data.get() + tile * w.tile_bytes;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const int64_t groups = w.cols / w.group_size;
  const size_t group_bytes = w.group_bytes();
  for (int64_t g = 0; g < groups; ++g, blk += group_bytes)
    for (int j = 0; j < w.group_size / 8; ++j, out += 128) {
      const __m512i v = _mm512_load_si512(blk + j * 64);
      _mm512_store_si512(out, _mm512_and_si512(v, low4));
      _mm512_store_si512(out + 64, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
    }
}

// C = Σ A·B over group g's columns: activations in tile A, codes in tile B.
// (The tile intrinsics take literal tile numbers, hence a macro.)
#define HEARTH_AMX_GROUP_DOT(C, A, B, g)         \
  do {                                           \
    const uint8_t* b_ = codes + (g)*code_stride; \
    _tile_zero(C);                               \
    _tile_loadd(A, x + (g)*GS, w.cols);          \
    _tile_loadd(B, b_, 64);                      \
    _tile_dpbsud(C, A, B);                       \
    if constexpr (GS == 128) {                   \
      _tile_loadd(A, x + (g)*GS + 64, w.cols);   \
      _tile_loadd(B, b_ + 1024, 64);             \
      _tile_dpbsud(C, A, B);                     \
    }                                            \
  } while (0)

// Group g of a row tile (its scales and biases at meta) for the 16 tokens
// from t0: acc[t] += dot[t] * scale * step + bias * sum.
__attribute__((target("avx512f,avx512bw,amx-tile,amx-int8"), always_inline)) inline void
amx_scale_group(DType scale_dtype, const uint8_t* meta, size_t esize, const int32_t (*dot)[kRows],
                const QuantizedActivations& a, int64_t t0, int64_t g, int64_t groups, __m512* acc) {
  const __m512 scale = load16_f32(scale_dtype, meta);
  const __m512 bias = load16_f32(scale_dtype, meta + kRows * esize);
#pragma GCC unroll 16
  for (int t = 0; t < kAmxTokens; ++t) {
    const int64_t gi = (t0 + t) * groups + g;
    acc[t] = add_group(acc[t], _mm512_load_si512(dot[t]), scale, bias, a.step[gi], a.sum[gi]);
  }
}

// One row tile x the 16 tokens from t0. codes: the tile's codes as bytes,
// group g at codes + g * code_stride. Two accumulator tiles alternate, so
// the tile unit works on group g+1 while the vector unit scales group g.
template <int GS>
__attribute__((target("avx512f,avx512bw,amx-tile,amx-int8"))) void amx_block(
    const Int8Packed& w, int64_t tile, const uint8_t* codes, size_t code_stride,
    const QuantizedActivations& a, int64_t t0, int64_t n_tokens, float* y) {
  const int64_t groups = w.cols / GS;
  const size_t esize = dtype_size(w.scale_dtype), group_bytes = w.group_bytes();
  const uint8_t* meta = w.data.get() + tile * w.tile_bytes + size_t(GS) * kRows * w.bits / 8;
  const int8_t* x = a.q.data() + t0 * w.cols;
  __m512 acc[kAmxTokens];
#pragma GCC unroll 16
  for (int t = 0; t < kAmxTokens; ++t) acc[t] = _mm512_setzero_ps();
  alignas(64) int32_t dot[2][kAmxTokens][kRows];
  HEARTH_AMX_GROUP_DOT(0, 4, 6, 0);
  for (int64_t g = 0; g < groups; g += 2) {
    if (g + 1 < groups) HEARTH_AMX_GROUP_DOT(1, 5, 7, g + 1);
    _tile_stored(0, dot[0], kRows * 4);
    amx_scale_group(w.scale_dtype, meta + g * group_bytes, esize, dot[0], a, t0, g, groups, acc);
    if (g + 1 < groups) {
      if (g + 2 < groups) HEARTH_AMX_GROUP_DOT(0, 4, 6, g + 2);
      _tile_stored(1, dot[1], kRows * 4);
      amx_scale_group(w.scale_dtype, meta + (g + 1) * group_bytes, esize, dot[1], a, t0, g + 1,
                      groups, acc);
    }
  }
  const int64_t row0 = tile * kRows;
  const __mmask16 valid = tile_row_mask(w.rows, row0);
  for (int t = 0; t < kAmxTokens && t0 + t < n_tokens; ++t)
    _mm512_mask_storeu_ps(y + (t0 + t) * w.rows + row0, valid, acc[t]);
}
#undef HEARTH_AMX_GROUP_DOT

}  // namespace

// Whether the tile unit takes this call: enough tokens to fill a tile, and
// groups of whole 64-column tiles.
bool amx_takes(const Int8Packed& w, int64_t n_tokens) {
  return n_tokens >= kAmxTokens && (w.group_size == 64 || w.group_size == 128) &&
         amx_int8_available();
}

void amx_matmul(ThreadPool& pool, const Int8Packed& w, const QuantizedActivations& a,
                int64_t n_tokens, float* y) {
  const int64_t groups = w.cols / w.group_size;
  // Each task takes row tiles and runs every token block past each, so the
  // weights stream (and 4-bit codes are unpacked) once.
  pool.parallel_for(w.tiles, 1, [&](int64_t b, int64_t e) {
    thread_local AlignedBytes unpacked{nullptr, nullptr};
    thread_local size_t unpacked_bytes = 0;
    amx_configure();
    for (int64_t tile = b; tile < e; ++tile) {
      const uint8_t* codes = w.data.get() + tile * w.tile_bytes;
      size_t stride = w.group_bytes();
      if (w.bits == 4) {
        if (const size_t need = size_t(groups) * w.group_size * kRows; need > unpacked_bytes)
          unpacked = aligned_bytes(need), unpacked_bytes = need;
        unpack_codes(w, tile, unpacked.get());
        codes = unpacked.get();
        stride = size_t(w.group_size) * kRows;
      }
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kAmxTokens) {
        if (w.group_size == 64)
          amx_block<64>(w, tile, codes, stride, a, t0, n_tokens, y);
        else
          amx_block<128>(w, tile, codes, stride, a, t0, n_tokens, y);
      }
    }
    amx_release();
  });
}

}  // namespace hearth::int8
#endif
