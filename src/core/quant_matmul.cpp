#include "core/quant_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/cpu_features.h"
#include "core/simd.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip its own uninitialized-value warnings
// (_mm512_undefined_* inside the intrinsics); they are false positives.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace hearth {

namespace {

constexpr int kTileRows = 4;
constexpr int kTileTokens = 4;
constexpr int kChunk = 64;  // columns per integer dot: one 512-bit register of u8 codes

// Scales and biases of rows [r0, r0 + nr) as floats, [nr][groups].
void row_params_f32(const Matrix& w, int64_t r0, int nr, float* scales, float* biases) {
  const int64_t groups = w.groups_per_row();
  simd::to_f32(w.scale_dtype, w.scales, r0 * groups, nr * groups, scales);
  simd::to_f32(w.scale_dtype, w.biases, r0 * groups, nr * groups, biases);
}

// ---- generic path: dequantize a tile of rows, then the dense float kernel ----

void generic_matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y) {
  int64_t row_tiles = (w.rows + kTileRows - 1) / kTileRows;
  pool.parallel_for(row_tiles, 1, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> rows;
    rows.resize(size_t(kTileRows * w.cols));
    float out[kTileRows * kTileTokens];
    for (int64_t tile = b; tile < e; ++tile) {
      int64_t r0 = tile * kTileRows;
      int nr = int(std::min<int64_t>(kTileRows, w.rows - r0));
      const void* wp[kTileRows];
      for (int r = 0; r < nr; ++r) {
        dequantize_row(w, r0 + r, rows.data() + r * w.cols);
        wp[r] = rows.data() + r * w.cols;
      }
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
        int nt = int(std::min<int64_t>(kTileTokens, n_tokens - t0));
        const float* xp[kTileTokens];
        for (int t = 0; t < nt; ++t) xp[t] = x + (t0 + t) * w.cols;
        simd::dot_tile(DType::F32, wp, nr, xp, nt, w.cols, out);
        for (int t = 0; t < nt; ++t)
          for (int r = 0; r < nr; ++r) y[(t0 + t) * w.rows + r0 + r] = out[t * nr + r];
      }
    }
  });
}

#if defined(__x86_64__)

// ---- int8 path ----

// Activations quantized per weight group: q is laid out chunk by chunk in the
// order the unpacked weight codes come out of a register (for 4-bit codes:
// the 32 even columns of a 64-column chunk, then the 32 odd ones).
struct QuantizedActivations {
  std::vector<int8_t> q;     // [n_tokens, cols]
  std::vector<float> scale;  // [n_tokens, groups]
  std::vector<float> sum;    // [n_tokens, groups]: exact float sums, for the bias term
};

void quantize_activations(const Matrix& w, const float* x, int64_t n_tokens,
                          QuantizedActivations& a) {
  const int64_t cols = w.cols, groups = w.groups_per_row();
  const int gs = w.group_size;
  a.q.resize(size_t(n_tokens * cols));
  a.scale.resize(size_t(n_tokens * groups));
  a.sum.resize(size_t(n_tokens * groups));
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = x + t * cols + g * gs;
      float amax = 0, sum = 0;
      for (int i = 0; i < gs; ++i) {
        amax = std::max(amax, std::fabs(xg[i]));
        sum += xg[i];
      }
      float d = amax / 127.0f, inv = amax > 0 ? 127.0f / amax : 0.0f;
      a.scale[t * groups + g] = d;
      a.sum[t * groups + g] = sum;
      int8_t* qg = a.q.data() + t * cols + g * gs;
      for (int i = 0; i < gs; ++i) {
        int j = i % kChunk, pos = w.bits == 4 ? (j % 2 ? 32 + j / 2 : j / 2) : j;
        qg[i - j + pos] = int8_t(std::nearbyint(xg[i] * inv));
      }
    }
}

// One tile: NR weight rows times NT tokens. Per group, each row's codes are
// unpacked once and dotted with every token's int8 activations; the integer
// sums become floats scaled by the row's weight scale and the token's
// activation scale. The bias terms are added as vectors over 16 groups.
// Accumulators stay in registers: NR * NT <= 16 of the 32 zmm registers.
template <int Bits, int NR, int NT, int Chunks>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void int8_tile(
    const Matrix& w, int64_t r0, const QuantizedActivations& a, int64_t t0, const float* scales,
    const float* biases, float* out) {
  const int64_t groups = w.groups_per_row(), cols = w.cols;
  const int64_t row_bytes = cols * Bits / 8, group_bytes = int64_t(Chunks) * kChunk * Bits / 8;
  const uint8_t* rows[NR];
  for (int r = 0; r < NR; ++r) rows[r] = static_cast<const uint8_t*>(w.data) + (r0 + r) * row_bytes;
  const int8_t* xq[NT];
  const float* xscale[NT];
  for (int t = 0; t < NT; ++t) {
    xq[t] = a.q.data() + (t0 + t) * cols;
    xscale[t] = a.scale.data() + (t0 + t) * groups;
  }
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc[NT][NR];
#pragma GCC unroll 16
  for (int t = 0; t < NT; ++t)
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) acc[t][r] = _mm512_setzero_ps();

  for (int64_t g = 0; g < groups; ++g) {
    __m512 dv[NT];
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) dv[t] = _mm512_set1_ps(xscale[t][g]);
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      const uint8_t* wg = rows[r] + g * group_bytes;
      // Stream ahead: decode is bound by how many lines are in flight.
      _mm_prefetch(reinterpret_cast<const char*>(wg) + 8 * group_bytes, _MM_HINT_T0);
      __m512i isum[NT];
#pragma GCC unroll 16
      for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int c = 0; c < Chunks; ++c) {
        __m512i wv;
        if constexpr (Bits == 4) {
          __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + c * 32));
          __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(packed),
                                            _mm256_srli_epi16(packed, 4), 1);
          wv = _mm512_and_si512(both, low4);
        } else {
          wv = _mm512_loadu_si512(wg + c * 64);
        }
#pragma GCC unroll 16
        for (int t = 0; t < NT; ++t)
          isum[t] = _mm512_dpbusd_epi32(isum[t], wv, _mm512_loadu_si512(xq[t] + g * Chunks * kChunk + c * kChunk));
      }
      const __m512 sv = _mm512_set1_ps(scales[r * groups + g]);
#pragma GCC unroll 16
      for (int t = 0; t < NT; ++t)
        acc[t][r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(isum[t]), sv), dv[t], acc[t][r]);
    }
  }
  // sum_g bias[r][g] * xsum[t][g], 16 groups per vector, into the same lanes.
  for (int64_t g0 = 0; g0 < groups; g0 += 16) {
    const __mmask16 m = groups - g0 >= 16 ? __mmask16(0xffff) : __mmask16((1u << (groups - g0)) - 1);
    __m512 xs[NT];
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) xs[t] = _mm512_maskz_loadu_ps(m, a.sum.data() + (t0 + t) * groups + g0);
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      const __m512 bv = _mm512_maskz_loadu_ps(m, biases + r * groups + g0);
#pragma GCC unroll 16
      for (int t = 0; t < NT; ++t) acc[t][r] = _mm512_fmadd_ps(bv, xs[t], acc[t][r]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < NT; ++t)
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) out[t * NR + r] = _mm512_reduce_add_ps(acc[t][r]);
}

template <int Bits, int Chunks>
void int8_tile_any(const Matrix& w, int64_t r0, int nr, const QuantizedActivations& a, int64_t t0,
                   int nt, const float* scales, const float* biases, float* out) {
#define HEARTH_TILE(R, T) \
  if (nr == R && nt == T) return int8_tile<Bits, R, T, Chunks>(w, r0, a, t0, scales, biases, out);
  HEARTH_TILE(4, 4) HEARTH_TILE(4, 3) HEARTH_TILE(4, 2) HEARTH_TILE(4, 1)
  HEARTH_TILE(3, 4) HEARTH_TILE(3, 3) HEARTH_TILE(3, 2) HEARTH_TILE(3, 1)
  HEARTH_TILE(2, 4) HEARTH_TILE(2, 3) HEARTH_TILE(2, 2) HEARTH_TILE(2, 1)
  HEARTH_TILE(1, 4) HEARTH_TILE(1, 3) HEARTH_TILE(1, 2) HEARTH_TILE(1, 1)
#undef HEARTH_TILE
}

void int8_matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y) {
  static QuantizedActivations a;  // engine-thread scratch, reused across calls
  quantize_activations(w, x, n_tokens, a);
  const int64_t groups = w.groups_per_row();
  int64_t row_tiles = (w.rows + kTileRows - 1) / kTileRows;
  pool.parallel_for(row_tiles, 1, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> params;
    params.resize(size_t(2 * kTileRows * groups));
    float* scales = params.data();
    float* biases = params.data() + kTileRows * groups;
    float out[kTileRows * kTileTokens];
    for (int64_t tile = b; tile < e; ++tile) {
      int64_t r0 = tile * kTileRows;
      int nr = int(std::min<int64_t>(kTileRows, w.rows - r0));
      row_params_f32(w, r0, nr, scales, biases);
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
        int nt = int(std::min<int64_t>(kTileTokens, n_tokens - t0));
        const bool two = w.group_size == 2 * kChunk;
        if (w.bits == 4 && !two) int8_tile_any<4, 1>(w, r0, nr, a, t0, nt, scales, biases, out);
        if (w.bits == 4 && two) int8_tile_any<4, 2>(w, r0, nr, a, t0, nt, scales, biases, out);
        if (w.bits == 8 && !two) int8_tile_any<8, 1>(w, r0, nr, a, t0, nt, scales, biases, out);
        if (w.bits == 8 && two) int8_tile_any<8, 2>(w, r0, nr, a, t0, nt, scales, biases, out);
        for (int t = 0; t < nt; ++t)
          for (int r = 0; r < nr; ++r) y[(t0 + t) * w.rows + r0 + r] = out[t * nr + r];
      }
    }
  });
}
#endif  // __x86_64__

}  // namespace

bool quant_matmul_uses_int8(const Matrix& w) {
#if defined(__x86_64__)
  // HEARTH_NO_INT8=1 forces the float path, to compare the two.
  static const bool available = cpu_features().avx512f && cpu_features().avx512bw &&
                                cpu_features().avx512vnni && !std::getenv("HEARTH_NO_INT8");
  return available && (w.bits == 4 || w.bits == 8) && (w.group_size == 64 || w.group_size == 128);
#else
  return false;
#endif
}

void quant_matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y) {
#if defined(__x86_64__)
  if (quant_matmul_uses_int8(w)) return int8_matmul(pool, w, x, n_tokens, y);
#endif
  generic_matmul(pool, w, x, n_tokens, y);
}

void dequantize_row(const Matrix& w, int64_t row, float* out) {
  const int gs = w.group_size;
  for (int64_t g = 0; g < w.groups_per_row(); ++g) {
    int64_t i = row * w.groups_per_row() + g;
    float s = load_as_f32(w.scale_dtype, w.scales, i);
    float b = load_as_f32(w.scale_dtype, w.biases, i);
    for (int c = 0; c < gs; ++c) out[g * gs + c] = s * float(quant_code(w, row, g * gs + c)) + b;
  }
}

}  // namespace hearth
