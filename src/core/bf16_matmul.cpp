#include "core/bf16_matmul.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/amx.h"
#include "core/avx512.h"
#include "core/cpu_features.h"
#include "core/packed.h"

namespace hearth {

namespace {
constexpr int kRows = kPackedRows;
constexpr int kMaxTokens = 8;
}  // namespace

namespace {
enum class Kernel { none, dot, widen };

// Whether the widening kernel (bf16_matmul_hwy.cpp) has a vector target here.
// HEARTH_NO_BF16_DOT=1 packs nothing: the dense path (ops.cpp) then runs.
bool widen_available() {
  static const bool available = [] {
    if (std::getenv("HEARTH_NO_BF16_DOT")) return false;
#if defined(__x86_64__)
    const CpuFeatures& f = cpu_features();
    return f.avx2 && f.fma && f.f16c;
#elif defined(__aarch64__)
    return cpu_features().asimd;
#else
    return false;
#endif
  }();
  return available;
}

// The kernel for BF16 weights on this CPU's effective features
// (cpu_features.h), chosen once. F16 weights take the widening one.
Kernel kernel() {
  static const Kernel k = [] {
#if defined(__x86_64__)
    const CpuFeatures& f = cpu_features();
    if (f.avx512f && f.avx512bf16 && !std::getenv("HEARTH_NO_BF16_DOT")) return Kernel::dot;
#endif
    return widen_available() ? Kernel::widen : Kernel::none;
  }();
  return k;
}
}  // namespace

const char* bf16_target() {
  switch (kernel()) {
    case Kernel::dot:
      return "avx512-bf16";
    case Kernel::widen:
      return "widen-f32";
    default:
      return "none";
  }
}

bool bf16_supported(const Matrix& w) {
  if (w.quantized()) return false;
  if (w.dtype == DType::BF16) return kernel() != Kernel::none;
  return w.dtype == DType::F16 && widen_available();
}

std::shared_ptr<const Bf16Packed> bf16_pack(const Matrix& w, ThreadPool& pool) {
  const Matrix* parts[] = {&w};
  return bf16_pack(parts, pool);
}

std::shared_ptr<const Bf16Packed> bf16_pack(std::span<const Matrix* const> parts,
                                            ThreadPool& pool) {
  const RowStack stack(parts);
  const Matrix& w = stack.first();
  if (!stack.uniform() ||
      !std::all_of(parts.begin(), parts.end(), [](const Matrix* m) { return bf16_supported(*m); }))
    return nullptr;
  auto p = std::make_shared<Bf16Packed>();
  p->rows = stack.rows();
  p->cols = w.cols;
  p->tiles = (p->rows + kRows - 1) / kRows;
  p->pairs = (w.cols + 1) / 2;
  p->dtype = w.dtype;
  p->data = aligned_bytes(p->bytes());
  const bool f16 = w.dtype == DType::F16;
  uint16_t* base = reinterpret_cast<uint16_t*>(p->data.get());
  pool.parallel_for(p->tiles, 1, [&](int64_t tb, int64_t te) {
    for (int64_t tile = tb; tile < te; ++tile) {
      uint16_t* out = base + tile * p->pairs * 32;
      for (int64_t pair = 0; pair < p->pairs; ++pair)
        for (int r = 0; r < kRows && tile * kRows + r < p->rows; ++r) {
          const auto [m, local] = stack.locate(tile * kRows + r);
          const uint16_t* src = static_cast<const uint16_t*>(m->data) + local * w.cols;
          for (int i = 0; i < 2; ++i) {
            const int64_t col = 2 * pair + i;
            // storage is zeroed
            out[pair * 32 + (f16 ? i * kRows + r : r * 2 + i)] = col < w.cols ? src[col] : 0;
          }
        }
    }
  });
  return p;
}

#if defined(__x86_64__)
namespace {
// f32_to_bf16 in integer arithmetic, 16 values at a time (bit-exact with it,
// denormals included, which VCVTNEPS2BF16 would flush).
HEARTH_AVX512("avx512f,avx512bw") void to_bf16_avx512(const float* x, int64_t n, uint16_t* out) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i round = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_loadu_si512(x + i);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(round, _mm512_and_si512(hi, one))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(r));
  }
  for (; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}
}  // namespace
#endif

void to_bf16(const float* x, int64_t n, uint16_t* out) {
#if defined(__x86_64__)
  if (cpu_features().avx512bw) return to_bf16_avx512(x, n, out);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}

#if defined(__x86_64__)
namespace {

// RT row tiles of 16 rows from `tile` against NT tokens from t0. Every row's
// sum is one chain of vdpbf16ps over the column pairs in order, whatever NT
// and RT are: a row computed alone and beside other tokens gets the same bits
// (batch invariance). Few tokens take several tiles at a time (tiles()),
// whose independent chains hide vdpbf16ps's latency, as more tokens' chains do.
template <int NT, int RT>
HEARTH_AVX512("avx512f,avx512bf16")
void tile_kernel(const Bf16Packed& w, int64_t tile, const uint16_t* xb, int64_t x_stride,
                 int64_t t0, float* y) {
  const uint16_t* blk[RT];
  for (int r = 0; r < RT; ++r)
    blk[r] = reinterpret_cast<const uint16_t*>(w.data.get()) + (tile + r) * w.pairs * 32;
  __m512 acc[NT][RT];
  for (int t = 0; t < NT; ++t)
    for (int r = 0; r < RT; ++r) acc[t][r] = _mm512_setzero_ps();
  for (int64_t p = 0; p < w.pairs; ++p) {
    __m512bh wv[RT];
#pragma GCC unroll 4
    for (int r = 0; r < RT; ++r) {
      // Only far ahead: the near (L1) prefetch as well was 2-6% slower in
      // decode on a Zen 5 and no faster in prefill (docs/performance/engine.md,
      // "Weight prefetch").
      if (t0 == 0) prefetch_far(reinterpret_cast<const uint8_t*>(blk[r] + p * 32), 64);
      wv[r] = (__m512bh)_mm512_load_si512(blk[r] + p * 32);
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const __m512bh xv = (__m512bh)broadcast4(xb + (t0 + t) * x_stride + 2 * p);
#pragma GCC unroll 4
      for (int r = 0; r < RT; ++r) acc[t][r] = _mm512_dpbf16_ps(acc[t][r], wv[r], xv);
    }
  }
  for (int r = 0; r < RT; ++r) {
    const int64_t row0 = (tile + r) * kRows;
    const __mmask16 valid = tile_row_mask(w.rows, row0);
    for (int t = 0; t < NT; ++t)
      _mm512_mask_storeu_ps(y + (t0 + t) * w.rows + row0, valid, acc[t][r]);
  }
}

// tile_kernel for 1..kMaxTokens tokens on one tile, indexed by token count - 1.
template <size_t... I>
constexpr auto token_kernels(std::index_sequence<I...>) {
  return std::array{&tile_kernel<int(I) + 1, 1>...};
}

// Row tiles a kernel call takes together for n_tokens tokens: one token
// four and two or three tokens two, enough independent chains to hide
// vdpbf16ps's latency; more tokens one, each tile's weights staying in cache
// across the token blocks.
constexpr int64_t tile_group(int64_t n_tokens) {
  return n_tokens == 1 ? 4 : n_tokens == 2 || n_tokens == 3 ? 2 : 1;
}

// Row tiles [begin, end) against n_tokens tokens.
void tiles(const Bf16Packed& w, int64_t begin, int64_t end, const uint16_t* xb, int64_t x_stride,
           int64_t n_tokens, float* y) {
  static constexpr auto kKernels = token_kernels(std::make_index_sequence<kMaxTokens>());
  int64_t tile = begin;
  if (tile_group(n_tokens) == 4)
    for (; tile + 4 <= end; tile += 4) tile_kernel<1, 4>(w, tile, xb, x_stride, 0, y);
  else if (tile_group(n_tokens) == 2)
    for (; tile + 2 <= end; tile += 2)
      (n_tokens == 2 ? tile_kernel<2, 2> : tile_kernel<3, 2>)(w, tile, xb, x_stride, 0, y);
  for (; tile < end; ++tile)
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens)
      kKernels[size_t(std::min<int64_t>(kMaxTokens, n_tokens - t0) - 1)](w, tile, xb, x_stride, t0,
                                                                         y);
}

// ---- AMX: prefill on the tile unit ----
//
// A packed tile's 16 consecutive column-pair vectors are exactly an AMX "B"
// tile (16 pair rows x 16 weight rows x 2 BF16) for 32 columns, and 16
// tokens' BF16 activations over those columns are an "A" tile, so one
// TDPBF16PS adds a 16-token x 16-row block of products over 32 columns. Tiles
// 0-3 accumulate up to 2 row tiles x 2 token blocks, 4-5 hold activations,
// 6-7 weights: each loaded tile serves two multiplies.
constexpr int kAmxPairs = 16;  // column pairs per tile (A columns, B rows)

// Where an accumulator tile (16 tokens x 16 rows) at token t0, row row0 of
// y is stored: straight into y when the whole block exists, else into a
// buffer that finish() copies from. (_tile_stored needs a literal tile
// number, so the caller names the tile.)
class OutBlock {
 public:
  OutBlock(const Bf16Packed& w, int64_t n_tokens, int64_t t0, int64_t row0, float* y)
      : dst_(y + t0 * w.rows + row0),
        y_stride_(w.rows),
        n_t_(std::min<int64_t>(kAmxTokens, n_tokens - t0)),
        n_r_(std::min<int64_t>(kRows, w.rows - row0)) {}
  bool direct() const { return n_t_ == kAmxTokens && n_r_ == kRows; }
  float* data() { return direct() ? dst_ : block_; }
  int64_t stride_bytes() const { return (direct() ? y_stride_ : kRows) * 4; }
  void finish() {
    if (!direct())
      for (int64_t t = 0; t < n_t_; ++t)
        std::memcpy(dst_ + t * y_stride_, block_ + t * kRows, n_r_ * 4);
  }

 private:
  float* dst_;
  int64_t y_stride_, n_t_, n_r_;
  alignas(64) float block_[kAmxTokens * kRows];
};

#define HEARTH_AMX_STORE(T, t0, row0)                \
  do {                                               \
    OutBlock out(w, n_tokens, t0, row0, y);          \
    _tile_stored(T, out.data(), out.stride_bytes()); \
    out.finish();                                    \
  } while (0)

// RT row tiles (from `tile`) x TB token blocks (from t0) over all columns.
// xb: the activations as BF16, n_tokens rows padded with zero rows to whole
// token blocks, `stride` elements apart.
template <int RT, int TB>
__attribute__((target("amx-tile,amx-bf16"))) void amx_block(const Bf16Packed& w, int64_t tile,
                                                            const uint16_t* xb, int64_t stride,
                                                            int64_t t0, int64_t n_tokens,
                                                            float* y) {
  const uint16_t* b0 = reinterpret_cast<const uint16_t*>(w.data.get()) + tile * w.pairs * 32;
  const uint16_t* b1 = b0 + w.pairs * 32;
  const uint16_t* a0 = xb + t0 * stride;
  const uint16_t* a1 = a0 + kAmxTokens * stride;
  _tile_zero(0);
  if constexpr (TB == 2) _tile_zero(1);
  if constexpr (RT == 2) _tile_zero(2);
  if constexpr (RT == 2 && TB == 2) _tile_zero(3);
  for (int64_t p = 0; p < w.pairs; p += kAmxPairs) {
    _tile_loadd(4, a0 + 2 * p, stride * 2);
    _tile_loadd(6, b0 + p * 32, 64);
    if constexpr (TB == 2) _tile_loadd(5, a1 + 2 * p, stride * 2);
    if constexpr (RT == 2) _tile_loadd(7, b1 + p * 32, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (TB == 2) _tile_dpbf16ps(1, 5, 6);
    if constexpr (RT == 2) _tile_dpbf16ps(2, 4, 7);
    if constexpr (RT == 2 && TB == 2) _tile_dpbf16ps(3, 5, 7);
  }
  const int64_t row0 = tile * kRows;
  HEARTH_AMX_STORE(0, t0, row0);
  if constexpr (TB == 2) HEARTH_AMX_STORE(1, t0 + kAmxTokens, row0);
  if constexpr (RT == 2) HEARTH_AMX_STORE(2, t0, row0 + kRows);
  if constexpr (RT == 2 && TB == 2) HEARTH_AMX_STORE(3, t0 + kAmxTokens, row0 + kRows);
}
#undef HEARTH_AMX_STORE

// Whether the tile unit takes this call: enough tokens to fill its tiles,
// and whole 32-column tiles (true of every real model's widths).
bool use_amx(const Bf16Packed& w, int64_t n_tokens) {
  return n_tokens >= kAmxTokens && w.pairs % kAmxPairs == 0 && amx_bf16_available();
}

void amx_matmul(ThreadPool& pool, const Bf16Packed& w, const uint16_t* xb, int64_t stride,
                int64_t n_tokens, float* y) {
  const int64_t blocks = (n_tokens + kAmxTokens - 1) / kAmxTokens;
  // Each task takes pairs of row tiles and runs token blocks past them, a
  // super-block of tokens at a time: the super-block's activations (about
  // 512 KB) stay in L2 while the task's row tiles stream through, instead of
  // all activations being read again for every row tile pair.
  const int64_t super = std::max<int64_t>(2, (512 << 10) / (stride * 2 * kAmxTokens) / 2 * 2);
  pool.parallel_for((w.tiles + 1) / 2, 1, [&](int64_t b, int64_t e) {
    amx_configure();
    for (int64_t sb = 0; sb < blocks; sb += super)
      for (int64_t pair = b; pair < e; ++pair) {
        const int64_t tile = 2 * pair;
        const bool two_tiles = tile + 1 < w.tiles;
        for (int64_t blk = sb; blk < std::min(blocks, sb + super); blk += 2) {
          const int64_t t0 = blk * kAmxTokens;
          const bool two_blocks = blk + 1 < blocks;
          if (two_tiles && two_blocks)
            amx_block<2, 2>(w, tile, xb, stride, t0, n_tokens, y);
          else if (two_tiles)
            amx_block<2, 1>(w, tile, xb, stride, t0, n_tokens, y);
          else if (two_blocks)
            amx_block<1, 2>(w, tile, xb, stride, t0, n_tokens, y);
          else
            amx_block<1, 1>(w, tile, xb, stride, t0, n_tokens, y);
        }
      }
    amx_release();
  });
}

}  // namespace
#endif

void bf16_matmul(ThreadPool& pool, const Bf16Packed& w, const float* x, int64_t n_tokens,
                 float* y) {
  if (w.dtype == DType::F16 || kernel() == Kernel::widen) {
    // One token pairs tiles (bf16_widen::tiles): chunks of whole pairs.
    pool.parallel_for(w.tiles, n_tokens == 1 ? 2 : 1, [&](int64_t b, int64_t e) {
      bf16_widen::tiles(w, b, e, x, n_tokens, y);
    });
    return;
  }
#if defined(__x86_64__)
  // Activations as BF16 pairs, each row padded to a whole number of pairs.
  // The AMX path reads whole 16-token blocks: rows past n_tokens are zero.
  // Per calling thread: the engine and a transcription run matmuls at once.
  // (The pool's tasks use it through the reference: a thread_local named
  // inside them would be each worker's own.)
  thread_local std::vector<uint16_t> scratch;
  std::vector<uint16_t>& xb = scratch;
  const int64_t stride = 2 * w.pairs;
  const bool amx = use_amx(w, n_tokens);
  const int64_t padded = amx ? amx_padded_tokens(n_tokens) : n_tokens;
  xb.resize(size_t(padded * stride));
  pool.parallel_for(n_tokens, 8, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      uint16_t* row = xb.data() + t * stride;
      to_bf16(x + t * w.cols, w.cols, row);
      std::fill(row + w.cols, row + stride, uint16_t(0));  // an odd column count's last pair
    }
  });
  std::fill(xb.begin() + n_tokens * stride, xb.end(), uint16_t(0));
  if (amx) return amx_matmul(pool, w, xb.data(), stride, n_tokens, y);
  // Chunks of whole tile groups where there are many threads for few tiles.
  pool.parallel_for(w.tiles, tile_group(n_tokens), [&](int64_t b, int64_t e) {
    tiles(w, b, e, xb.data(), stride, n_tokens, y);
  });
#endif
}

}  // namespace hearth
