#include "core/bf16_matmul.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/packed.h"

namespace hearth {

namespace {
constexpr int kRows = kPackedRows;
constexpr int kMaxTokens = 8;
}  // namespace

bool bf16_supported(const Matrix& w) {
#if defined(__x86_64__)
  static const bool available =
      cpu_features().avx512f && cpu_features().avx512bf16 && !std::getenv("HEARTH_NO_BF16_DOT");
  return available && !w.quantized() && w.dtype == DType::BF16;
#else
  return false;
#endif
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
  p->data = aligned_bytes(p->bytes());
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
            out[pair * 32 + r * 2 + i] = col < w.cols ? src[col] : 0;  // storage is zeroed
          }
        }
    }
  });
  return p;
}

#if defined(__x86_64__)
namespace {

// NT tokens, A independent accumulators per token to hide vdpbf16ps latency.
template <int NT, int A>
__attribute__((target("avx512f,avx512bf16"))) void tile_kernel(const Bf16Packed& w, int64_t tile,
                                                               const uint16_t* xb, int64_t x_stride,
                                                               int64_t t0, float* y) {
  const uint16_t* blk = reinterpret_cast<const uint16_t*>(w.data.get()) + tile * w.pairs * 32;
  __m512 acc[NT][A];
  for (int t = 0; t < NT; ++t)
    for (int a = 0; a < A; ++a) acc[t][a] = _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + A <= w.pairs; p += A) {
    if (t0 == 0) prefetch_ahead(reinterpret_cast<const uint8_t*>(blk + p * 32), A * 64);
#pragma GCC unroll 4
    for (int a = 0; a < A; ++a) {
      const __m512bh wv = (__m512bh)_mm512_load_si512(blk + (p + a) * 32);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t)
        acc[t][a] = _mm512_dpbf16_ps(acc[t][a], wv,
                                     (__m512bh)broadcast4(xb + (t0 + t) * x_stride + 2 * (p + a)));
    }
  }
  for (; p < w.pairs; ++p) {
    const __m512bh wv = (__m512bh)_mm512_load_si512(blk + p * 32);
    for (int t = 0; t < NT; ++t)
      acc[t][0] =
          _mm512_dpbf16_ps(acc[t][0], wv, (__m512bh)broadcast4(xb + (t0 + t) * x_stride + 2 * p));
  }
  const int64_t row0 = tile * kRows;
  const __mmask16 valid =
      w.rows - row0 >= kRows ? __mmask16(0xffff) : __mmask16((1u << (w.rows - row0)) - 1);
  for (int t = 0; t < NT; ++t) {
    __m512 sum = acc[t][0];
    for (int a = 1; a < A; ++a) sum = _mm512_add_ps(sum, acc[t][a]);
    _mm512_mask_storeu_ps(y + (t0 + t) * w.rows + row0, valid, sum);
  }
}

void tile_any(const Bf16Packed& w, int64_t tile, const uint16_t* xb, int64_t x_stride, int64_t t0,
              int nt, float* y) {
  switch (nt) {
    case 1:
      return tile_kernel<1, 4>(w, tile, xb, x_stride, t0, y);
    case 2:
      return tile_kernel<2, 2>(w, tile, xb, x_stride, t0, y);
    case 3:
      return tile_kernel<3, 2>(w, tile, xb, x_stride, t0, y);
    case 4:
      return tile_kernel<4, 1>(w, tile, xb, x_stride, t0, y);
    case 5:
      return tile_kernel<5, 1>(w, tile, xb, x_stride, t0, y);
    case 6:
      return tile_kernel<6, 1>(w, tile, xb, x_stride, t0, y);
    case 7:
      return tile_kernel<7, 1>(w, tile, xb, x_stride, t0, y);
    default:
      return tile_kernel<8, 1>(w, tile, xb, x_stride, t0, y);
  }
}

}  // namespace

void bf16_matmul(ThreadPool& pool, const Bf16Packed& w, const float* x, int64_t n_tokens,
                 float* y) {
  // Activations as BF16 pairs, each row padded to a whole number of pairs.
  static std::vector<uint16_t> xb;  // engine-thread scratch
  const int64_t stride = 2 * w.pairs;
  xb.assign(size_t(n_tokens * stride), 0);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t c = 0; c < w.cols; ++c) xb[t * stride + c] = f32_to_bf16(x[t * w.cols + c]);
  pool.parallel_for(w.tiles, 1, [&](int64_t b, int64_t e) {
    for (int64_t tile = b; tile < e; ++tile)
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens)
        tile_any(w, tile, xb.data(), stride, t0, int(std::min<int64_t>(kMaxTokens, n_tokens - t0)),
                 y);
  });
}
#else
void bf16_matmul(ThreadPool&, const Bf16Packed&, const float*, int64_t, float*) {}
#endif

}  // namespace hearth
