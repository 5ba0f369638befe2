// The 16-bit tile kernel for CPUs without a BF16 dot product (AVX2, AVX-512
// without BF16, NEON), and for F16 weights on every CPU, on the packed
// layouts of bf16_matmul.h. Highway compiles this file once per target
// (foreach_target.h re-includes it).
//
// A BF16 pair's 32-bit lane is (low: column 2p, high: 2p + 1), so shifting it
// left by 16 and masking its low half give both weights as exact F32 values;
// F16 pairs are stored as two runs of 16 rows, which PromoteTo widens (F16C,
// NEON's FCVTL). Activations stay F32 (nothing is rounded, unlike vdpbf16ps).
// A 64-byte pair vector is 16 / N vectors of N rows (AVX2: two of 8).
#include "core/hwy_targets.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/bf16_matmul_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/bf16_matmul.h"

HWY_BEFORE_NAMESPACE();
namespace hearth::bf16_widen::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DU = hn::ScalableTag<uint32_t>;

constexpr int kRows = kPackedRows;
constexpr int kMaxTokens = 4;  // AVX2: 4 tokens x 2 halves of sums, 2 weights, a broadcast

// Independent sums per (token, part) so the multiply-adds' latency overlaps:
// one token alternates four (low/high weight x even/odd pair), two tokens
// two (low/high); with more tokens, the tokens' sums already overlap.
constexpr int chains(int tokens) {
  return tokens == 1 ? 4 : tokens == 2 ? 2 : 1;
}

// Pair p's weights of the tile, widened to F32: lo[k] (column 2p) and hi[k]
// (column 2p + 1) of each of its K parts.
template <bool kF16, int K>
HWY_INLINE void WidenPair(const uint16_t* v_at, hn::Vec<DF> (&lo)[K], hn::Vec<DF> (&hi)[K]) {
  const DF df;
  constexpr int N = kRows / K;
  if constexpr (kF16) {  // 16 rows of column 2p, then 16 of 2p + 1
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto* h = reinterpret_cast<const hwy::float16_t*>(v_at);
    for (int k = 0; k < K; ++k) {
      lo[k] = hn::PromoteTo(df, hn::LoadU(dh, h + k * N));
      hi[k] = hn::PromoteTo(df, hn::LoadU(dh, h + kRows + k * N));
    }
  } else {  // BF16: row r's lane holds (column 2p, column 2p + 1)
    const DU du;
    const auto* u = reinterpret_cast<const uint32_t*>(v_at);
    for (int k = 0; k < K; ++k) {
      const auto v = hn::Load(du, u + k * N);
      lo[k] = hn::BitCast(df, hn::ShiftLeft<16>(v));
      hi[k] = hn::BitCast(df, hn::And(v, hn::Set(du, 0xffff0000u)));
    }
  }
}

// Pair p's weights times columns 2p (into chain c_lo) and 2p + 1 (into c_hi,
// when kHigh) of each token.
template <bool kF16, int NT, int K, int C, bool kHigh>
HWY_INLINE void AddPair(hn::Vec<DF> (&acc)[NT][K][C], const uint16_t* blk, int64_t p,
                        const float* const* xt, int c_lo, int c_hi, bool prefetch) {
  const DF df;
  const uint16_t* v_at = blk + p * 2 * kRows;
  if (prefetch) prefetch_ahead(reinterpret_cast<const uint8_t*>(v_at), 64);
  // Every part widened first, so each token's two broadcasts serve all of them.
  hn::Vec<DF> lo[K], hi[K];
  WidenPair<kF16, K>(v_at, lo, hi);
  for (int t = 0; t < NT; ++t) {
    const auto x_lo = hn::Set(df, xt[t][2 * p]);
    for (int k = 0; k < K; ++k) acc[t][k][c_lo] = hn::MulAdd(lo[k], x_lo, acc[t][k][c_lo]);
    if constexpr (kHigh) {
      const auto x_hi = hn::Set(df, xt[t][2 * p + 1]);
      for (int k = 0; k < K; ++k) acc[t][k][c_hi] = hn::MulAdd(hi[k], x_hi, acc[t][k][c_hi]);
    }
  }
}

// One tile of 16 rows against NT tokens from t0; kF16: F16 weights, else BF16.
template <bool kF16, int NT>
void TileKernel(const Bf16Packed& w, int64_t tile, const float* x, int64_t t0, float* y) {
  const DF df;
  constexpr int N = int(HWY_LANES(float));  // fixed-width targets only (SVE is disabled)
  constexpr int K = kRows / N;              // vectors per 64-byte pair vector
  constexpr int C = chains(NT);
  const uint16_t* blk = reinterpret_cast<const uint16_t*>(w.data.get()) + tile * w.pairs * 2 * kRows;
  const float* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = x + (t0 + t) * w.cols;
  hn::Vec<DF> acc[NT][K][C];
  for (int t = 0; t < NT; ++t)
    for (int k = 0; k < K; ++k)
      for (int c = 0; c < C; ++c) acc[t][k][c] = hn::Zero(df);

  int64_t p = 0;
  const int64_t full = w.cols / 2;  // pairs with both columns
  for (; p + 2 <= full; p += 2) {
    AddPair<kF16, NT, K, C, true>(acc, blk, p, xt, 0, 1 % C, t0 == 0);
    AddPair<kF16, NT, K, C, true>(acc, blk, p + 1, xt, 2 % C, 3 % C, t0 == 0);
  }
  if (p < full) AddPair<kF16, NT, K, C, true>(acc, blk, p++, xt, 0, 1 % C, t0 == 0);
  // An odd column count's last pair: its high weight is zero padding, and
  // there is no activation to read for it.
  if (p < w.pairs) AddPair<kF16, NT, K, C, false>(acc, blk, p, xt, 0, 1 % C, t0 == 0);

  const int64_t row0 = tile * kRows;
  for (int t = 0; t < NT; ++t)
    for (int k = 0; k < K; ++k) {
      auto sum = acc[t][k][0];
      for (int c = 1; c < C; ++c) sum = hn::Add(sum, acc[t][k][c]);
      float* out = y + (t0 + t) * w.rows + row0 + k * N;
      const int64_t valid = std::clamp<int64_t>(w.rows - row0 - k * N, 0, N);
      if (valid == N) {
        hn::StoreU(sum, df, out);
      } else if (valid > 0) {
        HWY_ALIGN float part[N];
        hn::Store(sum, df, part);
        std::memcpy(out, part, size_t(valid) * sizeof(float));
      }
    }
}

template <bool kF16, size_t... I>
constexpr auto TokenKernels(std::index_sequence<I...>) {
  return std::array{&TileKernel<kF16, int(I) + 1>...};
}

void Tiles(const Bf16Packed& w, int64_t tile_begin, int64_t tile_end, const float* x,
           int64_t n_tokens, float* y) {
  static constexpr auto kBf16 = TokenKernels<false>(std::make_index_sequence<kMaxTokens>());
  static constexpr auto kF16 = TokenKernels<true>(std::make_index_sequence<kMaxTokens>());
  const auto& kernels = w.dtype == DType::F16 ? kF16 : kBf16;
  for (int64_t tile = tile_begin; tile < tile_end; ++tile)
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens)
      kernels[size_t(std::min<int64_t>(kMaxTokens, n_tokens - t0) - 1)](w, tile, x, t0, y);
}

}  // namespace hearth::bf16_widen::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hearth::bf16_widen {
HWY_EXPORT(Tiles);

void tiles(const Bf16Packed& w, int64_t tile_begin, int64_t tile_end, const float* x,
           int64_t n_tokens, float* y) {
  HWY_DYNAMIC_DISPATCH(Tiles)(w, tile_begin, tile_end, x, n_tokens, y);
}
}  // namespace hearth::bf16_widen
#endif
