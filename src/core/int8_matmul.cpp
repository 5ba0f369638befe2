#include "core/int8_matmul.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/amx.h"
#include "core/cpu_features.h"
#include "core/int8_kernels.h"
#include "core/packed.h"

namespace hearth {

namespace {
constexpr int kRows = kPackedRows;
constexpr int kMaxTokens = 8;  // tokens per kernel call (accumulators in registers)
}  // namespace

namespace {
// The kernels for this CPU's effective features (cpu_features.h), chosen once;
// null where there are none (the float path then takes MLX weights).
const int8::Kernels* int8_kernels() {
  static const int8::Kernels* const kernels = []() -> const int8::Kernels* {
    [[maybe_unused]] const CpuFeatures& f = cpu_features();
    // HEARTH_NO_INT8=1 forces the float path, to compare the two.
    if (std::getenv("HEARTH_NO_INT8")) return nullptr;
#if defined(__x86_64__)
    if (f.avx512f && f.avx512bw && f.avx512vnni) return &int8::kAvx512;
    if (f.avx2 && f.fma && f.f16c) return f.avxvnni ? &int8::kAvxVnni : &int8::kAvx2;
#elif defined(__aarch64__)
    if (f.asimd) return f.dotprod ? &int8::kNeonDot : &int8::kNeon;
#endif
    return nullptr;
  }();
  return kernels;
}
}  // namespace

const char* int8_target() {
  return int8_kernels() ? int8_kernels()->name : "none";
}

bool int8_supported(const Matrix& w) {
  return int8_kernels() && w.quantized() && w.bits >= 2 && w.bits <= 8 && w.bits != 7 &&
         (w.group_size == 32 || w.group_size == 64 || w.group_size == 128);
}

namespace {
// One group's codes of a row, one byte each. Little-endian words make the
// row one LSB-first bit stream: code c is bits [c * bits, (c + 1) * bits),
// within one byte or across two (3, 5 and 6 bits).
void unpack_group(const uint8_t* row, int bits, int64_t col0, int n, uint8_t* codes) {
  const unsigned mask = (1u << bits) - 1;
  for (int c = 0; c < n; ++c) {
    const int64_t bit = (col0 + c) * bits;
    const int shift = int(bit % 8);
    unsigned v = row[bit / 8];
    if (shift + bits > 8) v |= unsigned(row[bit / 8 + 1]) << 8;
    codes[c] = uint8_t((v >> shift) & mask);
  }
}
}  // namespace

std::shared_ptr<const Int8Packed> int8_pack(const Matrix& w, ThreadPool& pool) {
  const Matrix* parts[] = {&w};
  return int8_pack(parts, pool);
}

std::shared_ptr<const Int8Packed> int8_pack(std::span<const Matrix* const> parts,
                                            ThreadPool& pool) {
  const RowStack stack(parts);
  const Matrix& w = stack.first();
  if (!stack.uniform() ||
      !std::all_of(parts.begin(), parts.end(), [](const Matrix* m) { return int8_supported(*m); }))
    return nullptr;
  auto p = std::make_shared<Int8Packed>();
  p->rows = stack.rows();
  p->cols = w.cols;
  // Narrower codes ride a wider layout: exact, as wide. AMX tiles take whole
  // bytes, so with AMX 5- and 6-bit codes keep the 8-bit layout's prefill.
  p->bits = w.bits <= 4 ? 4 : w.bits <= 6 && !amx_int8_available() ? 6 : 8;
  p->group_size = w.group_size;
  p->scale_dtype = w.scale_dtype;
  p->tiles = (p->rows + kRows - 1) / kRows;
  const size_t esize = dtype_size(w.scale_dtype);
  const size_t code_bytes = size_t(w.group_size) * kRows * p->bits / 8;
  p->group_bytes = code_bytes + 2 * kRows * esize;
  p->tile_bytes = p->group_bytes * size_t(w.groups_per_row());
  p->data = aligned_bytes(p->bytes());  // zeroed: padding rows get zero codes, scales and biases
  uint8_t* base = p->data.get();

  const int64_t groups = w.groups_per_row();
  const int64_t row_bytes = w.cols * w.bits / 8;
  pool.parallel_for(p->tiles, 1, [&](int64_t tb, int64_t te) {
    uint8_t q[128];  // one group's codes of one row
    for (int64_t tile = tb; tile < te; ++tile)
      for (int64_t g = 0; g < groups; ++g) {
        uint8_t* blk = base + tile * p->tile_bytes + g * p->group_bytes;
        for (int r = 0; r < kRows; ++r) {
          const int64_t row = tile * kRows + r;
          if (row >= p->rows) break;
          const auto [m, local] = stack.locate(row);
          unpack_group(static_cast<const uint8_t*>(m->data) + local * row_bytes, w.bits,
                       g * w.group_size, w.group_size, q);
          if (p->bits == 8) {
            const uint8_t flip = int8_kernels()->code8_flip;
            for (int quad = 0; quad < w.group_size / 4; ++quad)
              for (int i = 0; i < 4; ++i) blk[quad * 64 + r * 4 + i] = q[quad * 4 + i] ^ flip;
          } else {
            // Vector j takes quad 2j (columns 8j..8j+3) in its low nibbles and
            // quad 2j+1 (8j+4..8j+7) in its high ones.
            for (int j = 0; j < w.group_size / 8; ++j)
              for (int i = 0; i < 4; ++i)
                blk[j * 64 + r * 4 + i] = uint8_t((q[8 * j + i] & 15) | (q[8 * j + 4 + i] << 4));
            if (p->bits == 6) {  // then vector m of the top bits: quads 4m..4m+3
              uint8_t* top = blk + w.group_size * kRows / 2;
              for (int m = 0; m < w.group_size / 16; ++m)
                for (int i = 0; i < 4; ++i) {
                  uint8_t b = 0;
                  for (int k = 0; k < 4; ++k) b |= uint8_t((q[(4 * m + k) * 4 + i] >> 4) << (2 * k));
                  top[m * 64 + r * 4 + i] = b;
                }
            }
          }
          const int64_t gi = local * groups + g;
          std::memcpy(blk + code_bytes + r * esize,
                      static_cast<const uint8_t*>(m->scales) + gi * esize, esize);
          std::memcpy(blk + code_bytes + (kRows + r) * esize,
                      static_cast<const uint8_t*>(m->biases) + gi * esize, esize);
        }
      }
  });
  return p;
}

#if defined(__x86_64__) || defined(__aarch64__)
namespace {

using int8::QuantizedActivations;

#if defined(__x86_64__)
// Activations are quantized with AVX2 for every x86 kernel (all CPUs that
// run one have it; it is under 1% of a matmul's time). Group sizes are
// multiples of 16 (32, 64, 128).
__attribute__((target("avx2,fma"))) float group_amax(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8)
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 r = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  r = _mm_max_ps(r, _mm_movehl_ps(r, r));
  return _mm_cvtss_f32(_mm_max_ss(r, _mm_movehdup_ps(r)));
}

// q = round_half_even(x * inv), returns sum q.
__attribute__((target("avx2,fma"))) int32_t quantize_group(const float* x, int n, float inv,
                                                           int8_t* q) {
  const __m256 vinv = _mm256_set1_ps(inv);
  __m256i sum = _mm256_setzero_si256();
  for (int i = 0; i < n; i += 16) {
    // cvtps rounds to nearest even under the default rounding mode; |v| <= 127,
    // so the saturating packs are exact.
    const __m256i v0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    const __m256i v1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vinv));
    // packs works per 128-bit lane: [v0 0-3, v1 0-3 | v0 4-7, v1 4-7], reordered to v0, v1.
    const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xd8);
    const __m128i b =
        _mm_packs_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), b);
    sum = _mm256_add_epi32(sum, _mm256_add_epi32(v0, v1));
  }
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
}

#else
// On 64-bit Arm with NEON (every such CPU; HEARTH_SIMD=scalar does not reach
// here, it has no int8 kernel). The same q, step and sum as the AVX2 code:
// the same product x * inv, rounded to nearest with ties to even (FCVTNS,
// whatever the rounding mode), and |v| <= 127 so the narrowing is exact.
float group_amax(const float* x, int n) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int i = 0; i < n; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + i)));
  return vmaxvq_f32(m);
}

// q = round_half_even(x * inv), returns sum q.
int32_t quantize_group(const float* x, int n, float inv, int8_t* q) {
  const float32x4_t vinv = vdupq_n_f32(inv);
  int32x4_t sum = vdupq_n_s32(0);
  for (int i = 0; i < n; i += 16) {
    int32x4_t v[4];
    for (int k = 0; k < 4; ++k) v[k] = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + i + 4 * k), vinv));
    const int16x8_t lo = vqmovn_high_s32(vqmovn_s32(v[0]), v[1]);
    const int16x8_t hi = vqmovn_high_s32(vqmovn_s32(v[2]), v[3]);
    vst1q_s8(q + i, vqmovn_high_s16(vqmovn_s16(lo), hi));
    sum = vaddq_s32(sum, vaddq_s32(vaddq_s32(v[0], v[1]), vaddq_s32(v[2], v[3])));
  }
  return vaddvq_s32(sum);
}
#endif

void quantize_activations(ThreadPool& pool, const Int8Packed& w, const float* x, int64_t n_tokens,
                          QuantizedActivations& a) {
  const int64_t cols = w.cols, groups = cols / w.group_size;
  const int gs = w.group_size;
  a.q.resize(size_t(n_tokens * cols));
  a.step.resize(size_t(n_tokens * groups));
  a.sum.resize(size_t(n_tokens * groups));
  pool.parallel_for(n_tokens * groups, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* xg = x + i * gs;  // token t, group g: i = t * groups + g
      const float amax = group_amax(xg, gs);
      const float inv = amax > 0 ? 127.0f / amax : 0.0f, step = amax / 127.0f;
      const int32_t qsum = quantize_group(xg, gs, inv, a.q.data() + i * gs);
      a.step[i] = step;
      // The bias term uses the same rounded activations as the code term, so
      // the result is exactly sum w * x_rounded: its error is bounded by
      // sum |w| * step / 2. (With the exact float sum the error would scale
      // with |scale * q|, which MLX's edge-anchored bias makes much larger.)
      a.sum[i] = step * float(qsum);
    }
  });
}

}  // namespace
#endif

#if defined(__x86_64__)
namespace {

using int8::QuantizedActivations;

__attribute__((target("avx512f,avx512bw"))) inline __m512 load16_f32(DType t, const uint8_t* p) {
  if (t == DType::F32) return _mm512_loadu_ps(p);
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if (t == DType::F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));  // BF16
}

// One group's contribution for one token: acc + (Σ q·xq) * scale * step +
// bias * (step * Σ xq), lanes being the tile's 16 rows.
__attribute__((target("avx512f"), always_inline)) inline __m512 add_group(__m512 acc, __m512i dot,
                                                                          __m512 scale, __m512 bias,
                                                                          float step, float sum) {
  acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), scale), _mm512_set1_ps(step), acc);
  return _mm512_fmadd_ps(bias, _mm512_set1_ps(sum), acc);
}

// One tile of 16 rows against NT tokens, group size GS (a compile-time
// constant, so the inner loops unroll fully and the accumulators stay in
// registers); writes y[t0 + t][row0 .. row0+16).
//
// With few tokens, each token has two chains of vpdpbusd (even and odd
// quads) to hide its latency, and the odd quads' 4-bit codes are used in
// place, as 16 * code: the chain is divided by 16 once per group (exactly, it
// is a multiple of 16), which saves a shift per vector. With more tokens the
// tokens' chains already overlap, and the unpacking is shared by all of them.
template <int Bits, int NT, int GS>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void tile_kernel(
    const Int8Packed& w, int64_t tile, const QuantizedActivations& a, int64_t t0, float* y) {
  constexpr int kChains = NT < 4 ? 2 : 1;
  constexpr bool kHighInPlace = Bits == 4 && kChains == 2;
  constexpr size_t kCodeBytes = size_t(GS) * kRows * Bits / 8;
  const int64_t groups = w.cols / GS;
  const size_t esize = dtype_size(w.scale_dtype);
  const uint8_t* blk = w.data.get() + tile * w.tile_bytes;
  const __m512i low4 = _mm512_set1_epi8(0x0f), high4 = _mm512_set1_epi8(char(0xf0));
  const __m512i top2 = _mm512_set1_epi8(0x30);  // a 6-bit code's top two bits
  const int8_t* xq[NT];
  for (int t = 0; t < NT; ++t) xq[t] = a.q.data() + (t0 + t) * w.cols;
  __m512 acc[NT];
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();

  for (int64_t g = 0; g < groups; ++g, blk += w.group_bytes) {
    // Later token blocks find the tile in cache.
    if (t0 == 0) prefetch_ahead(blk, w.group_bytes);
    __m512i isum[NT][kChains];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
#pragma GCC unroll 2
      for (int c = 0; c < kChains; ++c) isum[t][c] = _mm512_setzero_si512();
    const int64_t col0 = g * GS;
#pragma GCC unroll 16
    for (int j = 0; j < GS / 8; ++j) {
      __m512i first, second;  // the codes of quads 2j and 2j+1 of all 16 rows
      if constexpr (Bits == 4) {
        const __m512i v = _mm512_load_si512(blk + j * 64);
        first = _mm512_and_si512(v, low4);
        second = kHighInPlace ? _mm512_and_si512(v, high4)
                              : _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      } else if constexpr (Bits == 6) {
        // Quads 2j and 2j+1 have their top bits in bits 4(j%2) .. 4(j%2)+3
        // of top-bit vector j/2; each pair is shifted to bits 4-5 and OR-ed
        // under the mask onto the nibble (vpternlogd 0xF8: a | (b & c)).
        const __m512i v = _mm512_load_si512(blk + j * 64);
        const __m512i top = _mm512_load_si512(blk + GS * kRows / 2 + (j / 2) * 64);
        const __m512i top_first = j % 2 ? top : _mm512_slli_epi16(top, 4);
        const __m512i top_second = j % 2 ? _mm512_srli_epi16(top, 2) : _mm512_slli_epi16(top, 2);
        first = _mm512_ternarylogic_epi32(_mm512_and_si512(v, low4), top_first, top2, 0xF8);
        second = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4),
                                           top_second, top2, 0xF8);
      } else {
        first = _mm512_load_si512(blk + j * 128);
        second = _mm512_load_si512(blk + j * 128 + 64);
      }
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        isum[t][0] = _mm512_dpbusd_epi32(isum[t][0], first, broadcast4(xq[t] + col0 + 8 * j));
        isum[t][kChains - 1] =
            _mm512_dpbusd_epi32(isum[t][kChains - 1], second, broadcast4(xq[t] + col0 + 8 * j + 4));
      }
    }
    const __m512 scale = load16_f32(w.scale_dtype, blk + kCodeBytes);
    const __m512 bias = load16_f32(w.scale_dtype, blk + kCodeBytes + kRows * esize);
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

// tile_kernel for 1..kMaxTokens tokens, indexed by token count - 1.
template <int Bits, int GS, size_t... I>
constexpr auto token_kernels(std::index_sequence<I...>) {
  return std::array{&tile_kernel<Bits, int(I) + 1, GS>...};
}

template <int Bits, int GS>
void tile_for_tokens(const Int8Packed& w, int64_t tile, const QuantizedActivations& a, int64_t t0,
                     int nt, float* y) {
  static constexpr auto kKernels = token_kernels<Bits, GS>(std::make_index_sequence<kMaxTokens>());
  kKernels[size_t(nt - 1)](w, tile, a, t0, y);
}

template <int Bits>
void tile_any(const Int8Packed& w, int64_t tile, const QuantizedActivations& a, int64_t t0, int nt,
              float* y) {
  switch (w.group_size) {
    case 32:
      return tile_for_tokens<Bits, 32>(w, tile, a, t0, nt, y);
    case 64:
      return tile_for_tokens<Bits, 64>(w, tile, a, t0, nt, y);
    default:
      return tile_for_tokens<Bits, 128>(w, tile, a, t0, nt, y);
  }
}

void run_tile(const Int8Packed& w, int64_t tile, const QuantizedActivations& a, int64_t n_tokens,
              float* y) {
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens) {
    const int nt = int(std::min<int64_t>(kMaxTokens, n_tokens - t0));
    if (w.bits == 4)
      tile_any<4>(w, tile, a, t0, nt, y);
    else if (w.bits == 6)
      tile_any<6>(w, tile, a, t0, nt, y);
    else
      tile_any<8>(w, tile, a, t0, nt, y);
  }
}

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

// Whether the tile unit takes this call: enough tokens to fill a tile, and
// groups of whole 64-column tiles.
bool use_amx(const Int8Packed& w, int64_t n_tokens) {
  return n_tokens >= kAmxTokens && (w.group_size == 64 || w.group_size == 128) &&
         amx_int8_available();
}

// A row tile's 4-bit codes as bytes, in quad order: GS * 16 bytes per group.
__attribute__((target("avx512f,avx512bw"))) void unpack_codes(const Int8Packed& w, int64_t tile,
                                                              uint8_t* out) {
  const uint8_t* blk = w.data.get() + tile * w.tile_bytes;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const int64_t groups = w.cols / w.group_size;
  for (int64_t g = 0; g < groups; ++g, blk += w.group_bytes)
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
  const size_t esize = dtype_size(w.scale_dtype);
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
    amx_scale_group(w.scale_dtype, meta + g * w.group_bytes, esize, dot[0], a, t0, g, groups, acc);
    if (g + 1 < groups) {
      if (g + 2 < groups) HEARTH_AMX_GROUP_DOT(0, 4, 6, g + 2);
      _tile_stored(1, dot[1], kRows * 4);
      amx_scale_group(w.scale_dtype, meta + (g + 1) * w.group_bytes, esize, dot[1], a, t0, g + 1,
                      groups, acc);
    }
  }
  const int64_t row0 = tile * kRows;
  const __mmask16 valid = tile_row_mask(w.rows, row0);
  for (int t = 0; t < kAmxTokens && t0 + t < n_tokens; ++t)
    _mm512_mask_storeu_ps(y + (t0 + t) * w.rows + row0, valid, acc[t]);
}
#undef HEARTH_AMX_GROUP_DOT

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
      size_t stride = w.group_bytes;
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

}  // namespace

const int8::Kernels int8::kAvx512{"avx512-vnni", 0, &run_tile};
#endif

#if defined(__x86_64__) || defined(__aarch64__)
void int8_matmul(ThreadPool& pool, const Int8Packed& w, const float* x, int64_t n_tokens,
                 float* y) {
  // Reused across calls, per calling thread: the engine and a transcription
  // run matmuls at once. (The pool's tasks use it through the reference: a
  // thread_local named inside them would be each worker's own.)
  thread_local QuantizedActivations scratch;
  QuantizedActivations& a = scratch;
  const int8::Kernels& k = *int8_kernels();
  quantize_activations(pool, w, x, n_tokens, a);
#if defined(__x86_64__)
  if (use_amx(w, n_tokens)) {
    // The tile path reads whole 16-token blocks: zero tokens pad the last.
    const int64_t padded = amx_padded_tokens(n_tokens);
    a.q.resize(size_t(padded * w.cols));
    a.step.resize(size_t(padded * (w.cols / w.group_size)));
    a.sum.resize(a.step.size());
    return amx_matmul(pool, w, a, n_tokens, y);
  }
#endif
  pool.parallel_for(w.tiles, 1, [&](int64_t b, int64_t e) {
    for (int64_t tile = b; tile < e; ++tile) k.tile(w, tile, a, n_tokens, y);
  });
}
#else
void int8_matmul(ThreadPool&, const Int8Packed&, const float*, int64_t, float*) {}
#endif

}  // namespace hearth
