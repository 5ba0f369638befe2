// The AVX2 tile kernel over the packed MLX layout (int8_matmul.h), written
// once and compiled once per dot product: int8_matmul_avx2.cpp includes this
// file inside a target-feature region (HEARTH_TARGET_PUSH) and a namespace per target, after
// defining that target's `Dot` (no include guard, on purpose).
//
// A 64-byte vector of the layout is two 256-bit halves: rows 0-7 and rows
// 8-15, so each token has two accumulators (lanes = 8 rows) where AVX-512
// has one.

constexpr int kRows = kPackedRows;
// Tokens per kernel call: each token holds 2 halves x kChains int32 sums, the
// 4 code vectors of a step (2 quads x 2 halves) are shared by all of them,
// and 16 ymm registers hold 4 tokens' sums (8), the codes (4) and a token's
// 2 broadcast quads.
constexpr int kMaxTokens = 4;

inline __m256 load8_f32(DType t, const uint8_t* p) {
  if (t == DType::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (t == DType::F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));  // BF16
}

inline __m256i broadcast4_avx2(const int8_t* p) {
  return _mm256_set1_epi32(*reinterpret_cast<const AliasedInt32*>(p));
}

// One group's contribution for one token, as the AVX-512 add_group: acc +
// dot * scale * step + bias * (step * Σ xq), lanes being 8 rows.
__attribute__((always_inline)) inline __m256 add_group(__m256 acc, __m256i dot, __m256 scale,
                                                       __m256 bias, float step, float sum) {
  acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(dot), scale), _mm256_set1_ps(step), acc);
  return _mm256_fmadd_ps(bias, _mm256_set1_ps(sum), acc);
}

// Lanes of the 8 rows from row0 that hold rows of the matrix.
inline __m256i half_row_mask(int64_t rows, int64_t row0) {
  const int n = int(std::clamp<int64_t>(rows - row0, 0, 8));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline __m256i load256(const uint8_t* p) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
}

// The codes of quads 2j and 2j+1 of half h of a group at blk, as bytes.
// 4-bit: the low and the high nibbles. 6-bit: the nibbles as 4-bit codes,
// then the quads' top bits (bits 4(j%2) .. 4(j%2)+3 of top-bit vector j/2)
// shifted to bits 4-5. 8-bit: the two vectors as they are.
template <int Bits, int GS>
__attribute__((always_inline)) inline void unpack_step(const uint8_t* blk, int j, int h,
                                                       __m256i (&codes)[2]) {
  if constexpr (Bits == 8) {
    codes[0] = load256(blk + j * 128 + h * 32);
    codes[1] = load256(blk + j * 128 + 64 + h * 32);
    return;
  }
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i v = load256(blk + j * 64 + h * 32);
  codes[0] = _mm256_and_si256(v, low4);
  codes[1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
  if constexpr (Bits == 6) {
    const __m256i top2 = _mm256_set1_epi8(0x30);
    const __m256i top = load256(blk + GS * kRows / 2 + (j / 2) * 64 + h * 32);
    const __m256i top0 = j % 2 ? top : _mm256_slli_epi16(top, 4);
    const __m256i top1 = j % 2 ? _mm256_srli_epi16(top, 2) : _mm256_slli_epi16(top, 2);
    codes[0] = _mm256_or_si256(codes[0], _mm256_and_si256(top0, top2));
    codes[1] = _mm256_or_si256(codes[1], _mm256_and_si256(top1, top2));
  }
}

// Row tile `tile` (its codes at blk) against NT tokens from t0, group size GS; writes
// y[t0 + t][row0 .. row0+16). Like the AVX-512 kernel, few tokens get two
// chains per half (even and odd quads) so the dot products' latency overlaps.
template <int Bits, int NT, int GS>
void tile_kernel(const Int8Packed& w, const uint8_t* blk, int64_t tile,
                 const QuantizedActivations& a, int64_t t0, float* y) {
  constexpr int kChains = NT <= 2 ? 2 : 1;
  // Code steps (8 columns) whose dot products run up in a partial sum before
  // it folds into the group's int32 sum (Dot::fold).
  constexpr int kSpan = std::min(GS / 8, Dot::template kSpanSteps<Bits>);
  const TileShape<Bits, GS, NT> shape(w, a, t0);
  const auto& [groups, esize, group_bytes, xq] = shape;
  __m256 acc[NT][2];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();

  for (int64_t g = 0; g < groups; ++g, blk += group_bytes) {
    // Later token blocks find the tile in cache.
    if (t0 == 0) prefetch_far(blk, group_bytes);
    __m256i isum[NT][2][kChains];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t)
      for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
        for (int c = 0; c < kChains; ++c) isum[t][h][c] = _mm256_setzero_si256();
    const int64_t col0 = g * GS;
    for (int j0 = 0; j0 < GS / 8; j0 += kSpan) {
      __m256i part[NT][2][kChains];
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t)
        for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
          for (int c = 0; c < kChains; ++c) part[t][h][c] = _mm256_setzero_si256();
#pragma GCC unroll 16
      for (int j = j0; j < j0 + kSpan; ++j) {
        __m256i codes[2][2];  // [half][quad 2j + i]
        for (int h = 0; h < 2; ++h) unpack_step<Bits, GS>(blk, j, h, codes[h]);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) {
          const int8_t* xj = xq[t] + col0 + 8 * j;
          const __m256i x0 = broadcast4_avx2(xj), x1 = broadcast4_avx2(xj + 4);
          for (int h = 0; h < 2; ++h)
            Dot::template dot2<Bits>(part[t][h][0], part[t][h][kChains - 1], codes[h][0], x0,
                                     codes[h][1], x1);
        }
      }
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t)
        for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
          for (int c = 0; c < kChains; ++c)
            isum[t][h][c] = Dot::template fold<Bits>(isum[t][h][c], part[t][h][c]);
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* meta = blk + shape.kCodeBytes + h * 8 * esize;
      const __m256 scale = load8_f32(w.scale_dtype, meta);
      __m256 bias = load8_f32(w.scale_dtype, meta + kRows * esize);
      // Codes taken as code - offset: Σ code·xq = Σ (code - offset)·xq + offset·Σ xq.
      if constexpr (Bits == 8 && Dot::kOffset8 != 0)
        bias = _mm256_fmadd_ps(scale, _mm256_set1_ps(float(Dot::kOffset8)), bias);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const int64_t gi = (t0 + t) * groups + g;
        __m256i sum = isum[t][h][0];
        if constexpr (kChains == 2) sum = _mm256_add_epi32(sum, isum[t][h][1]);
        acc[t][h] = add_group(acc[t][h], sum, scale, bias, a.step[gi], a.sum[gi]);
      }
    }
  }
  const int64_t row0 = tile * kRows;
  for (int h = 0; h < 2; ++h) {
    const __m256i valid = half_row_mask(w.rows, row0 + 8 * h);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t)
      _mm256_maskstore_ps(y + (t0 + t) * w.rows + row0 + 8 * h, valid, acc[t][h]);
  }
}

// Tile `tile` of w with its 6-bit codes unpacked to bytes: the tile in the
// 8-bit layout, in a per-thread buffer.
template <int GS>
const uint8_t* unpack_6bit_tile(const Int8Packed& w, int64_t tile) {
  thread_local AlignedBytes buffer{nullptr, nullptr};
  thread_local size_t buffer_bytes = 0;
  const int64_t groups = w.cols / GS;
  const size_t code_bytes = size_t(GS) * kRows,
               group_bytes = int8_group_bytes(8, GS, w.scale_dtype), src_bytes = w.group_bytes();
  const size_t meta_bytes = group_bytes - code_bytes;
  if (const size_t need = size_t(groups) * group_bytes; need > buffer_bytes)
    buffer = aligned_bytes(need), buffer_bytes = need;
  const uint8_t* src = w.data.get() + tile * w.tile_bytes;
  uint8_t* dst = buffer.get();
  for (int64_t g = 0; g < groups; ++g, src += src_bytes, dst += group_bytes) {
    prefetch_far(src, src_bytes);  // the tile's one pass over memory
#pragma GCC unroll 16
    for (int j = 0; j < GS / 8; ++j)
      for (int h = 0; h < 2; ++h) {
        __m256i codes[2];
        unpack_step<6, GS>(src, j, h, codes);
        for (int i = 0; i < 2; ++i)
          _mm256_store_si256(reinterpret_cast<__m256i*>(dst + j * 128 + i * 64 + h * 32), codes[i]);
      }
    std::memcpy(dst + code_bytes, src + size_t(GS) * kRows * 6 / 8, meta_bytes);
  }
  return buffer.get();
}

// The codes the kernels read for a call of n_tokens over one tile. With
// AVX-VNNI, unpacking a 6-bit step costs about as much as its 4 tokens' dot
// products, so a call of several token blocks unpacks the tile once and
// runs the 8-bit kernels over the bytes (no offset here: the codes are the
// bytes): prefill as fast as the 8-bit layout's, where unpacking per block
// cost 15-20%. (4-bit steps unpack in 3 instructions; doing it once per tile
// measured no faster.) Plain AVX2 multiplies 6-bit codes faster than 8-bit
// ones (no sign trick) and keeps their kernels.
inline TileCodes tile_codes(const Int8Packed& w, int64_t tile, int64_t n_tokens) {
  if (Dot::kOffset8 != 0 || w.bits != 6 || n_tokens <= kMaxTokens) return packed_tile(w, tile);
  switch (w.group_size) {
    case 32:
      return {8, unpack_6bit_tile<32>(w, tile)};
    case 64:
      return {8, unpack_6bit_tile<64>(w, tile)};
    default:
      return {8, unpack_6bit_tile<128>(w, tile)};
  }
}

#include "core/int8_tile_table-inl.h"
