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
  const size_t group_bytes = p->group_bytes();
  p->tile_bytes = group_bytes * size_t(w.groups_per_row());
  p->data = aligned_bytes(p->bytes());  // zeroed: padding rows get zero codes, scales and biases
  uint8_t* base = p->data.get();

  const int64_t groups = w.groups_per_row();
  const int64_t row_bytes = w.cols * w.bits / 8;
  pool.parallel_for(p->tiles, 1, [&](int64_t tb, int64_t te) {
    uint8_t q[128];  // one group's codes of one row
    for (int64_t tile = tb; tile < te; ++tile)
      for (int64_t g = 0; g < groups; ++g) {
        uint8_t* blk = base + tile * p->tile_bytes + g * group_bytes;
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
                  for (int k = 0; k < 4; ++k)
                    b |= uint8_t((q[(4 * m + k) * 4 + i] >> 4) << (2 * k));
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
  if (int8::amx_takes(w, n_tokens)) {
    // The tile path reads whole 16-token blocks: zero tokens pad the last.
    const int64_t padded = amx_padded_tokens(n_tokens);
    a.q.resize(size_t(padded * w.cols));
    a.step.resize(size_t(padded * (w.cols / w.group_size)));
    a.sum.resize(a.step.size());
    return int8::amx_matmul(pool, w, a, n_tokens, y);
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
