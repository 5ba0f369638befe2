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

// Pair p's weights of RT row tiles (blk[r]) times columns 2p and 2p + 1
// (when kHigh) of each token. Every row's sum is one chain of multiply-adds
// over the columns in order, whatever NT and RT are: a row decoded alone and
// beside other tokens gets the same bits (batch invariance).
template <bool kF16, int NT, int RT, int K, bool kHigh>
HWY_INLINE void AddPair(hn::Vec<DF> (&acc)[NT][RT][K], const uint16_t* const* blk, int64_t p,
                        const float* const* xt, bool prefetch) {
  const DF df;
  // Every part widened first, so each token's two broadcasts serve all of them.
  hn::Vec<DF> lo[RT][K], hi[RT][K];
  for (int r = 0; r < RT; ++r) {
    const uint16_t* v_at = blk[r] + p * 2 * kRows;
    if (prefetch) prefetch_ahead(reinterpret_cast<const uint8_t*>(v_at), 64);
    WidenPair<kF16, K>(v_at, lo[r], hi[r]);
  }
  for (int t = 0; t < NT; ++t) {
    const auto x_lo = hn::Set(df, xt[t][2 * p]);
    for (int r = 0; r < RT; ++r)
      for (int k = 0; k < K; ++k) acc[t][r][k] = hn::MulAdd(lo[r][k], x_lo, acc[t][r][k]);
    if constexpr (kHigh) {
      const auto x_hi = hn::Set(df, xt[t][2 * p + 1]);
      for (int r = 0; r < RT; ++r)
        for (int k = 0; k < K; ++k) acc[t][r][k] = hn::MulAdd(hi[r][k], x_hi, acc[t][r][k]);
    }
  }
}

// RT row tiles of 16 rows from `tile` against NT tokens from t0; kF16: F16
// weights, else BF16. One token takes two tiles at a time (RT = 2), whose
// independent chains hide the multiply-adds' latency, as several tokens'
// chains do.
template <bool kF16, int NT, int RT>
void TileKernel(const Bf16Packed& w, int64_t tile, const float* x, int64_t t0, float* y) {
  const DF df;
  constexpr int N = int(HWY_LANES(float));  // fixed-width targets only (SVE is disabled)
  constexpr int K = kRows / N;              // vectors per 64-byte pair vector
  const uint16_t* blk[RT];
  for (int r = 0; r < RT; ++r)
    blk[r] = reinterpret_cast<const uint16_t*>(w.data.get()) + (tile + r) * w.pairs * 2 * kRows;
  const float* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = x + (t0 + t) * w.cols;
  hn::Vec<DF> acc[NT][RT][K];
  for (int t = 0; t < NT; ++t)
    for (int r = 0; r < RT; ++r)
      for (int k = 0; k < K; ++k) acc[t][r][k] = hn::Zero(df);

  int64_t p = 0;
  const int64_t full = w.cols / 2;  // pairs with both columns
  for (; p < full; ++p) AddPair<kF16, NT, RT, K, true>(acc, blk, p, xt, t0 == 0);
  // An odd column count's last pair: its high weight is zero padding, and
  // there is no activation to read for it.
  if (p < w.pairs) AddPair<kF16, NT, RT, K, false>(acc, blk, p, xt, t0 == 0);

  for (int r = 0; r < RT; ++r) {
    const int64_t row0 = (tile + r) * kRows;
    for (int t = 0; t < NT; ++t)
      for (int k = 0; k < K; ++k) {
        float* out = y + (t0 + t) * w.rows + row0 + k * N;
        const int64_t valid = std::clamp<int64_t>(w.rows - row0 - k * N, 0, N);
        if (valid == N) {
          hn::StoreU(acc[t][r][k], df, out);
        } else if (valid > 0) {
          HWY_ALIGN float part[N];
          hn::Store(acc[t][r][k], df, part);
          std::memcpy(out, part, size_t(valid) * sizeof(float));
        }
      }
  }
}

template <bool kF16, size_t... I>
constexpr auto TokenKernels(std::index_sequence<I...>) {
  return std::array{&TileKernel<kF16, int(I) + 1, 1>...};
}

void Tiles(const Bf16Packed& w, int64_t tile_begin, int64_t tile_end, const float* x,
           int64_t n_tokens, float* y) {
  static constexpr auto kBf16 = TokenKernels<false>(std::make_index_sequence<kMaxTokens>());
  static constexpr auto kF16 = TokenKernels<true>(std::make_index_sequence<kMaxTokens>());
  const auto& kernels = w.dtype == DType::F16 ? kF16 : kBf16;
  int64_t tile = tile_begin;
  if (n_tokens == 1)
    for (; tile + 2 <= tile_end; tile += 2)
      (w.dtype == DType::F16 ? TileKernel<true, 1, 2> : TileKernel<false, 1, 2>)(w, tile, x, 0, y);
  for (; tile < tile_end; ++tile)
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
