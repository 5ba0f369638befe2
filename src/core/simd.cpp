// Highway compiles this file once per target (foreach_target.h re-includes
// it); HWY_EXPORT / HWY_DYNAMIC_DISPATCH pick the best one at run time.
#include "core/hwy_targets.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format off
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
// clang-format on

#include <algorithm>
#include <cmath>

#include "core/simd.h"

HWY_BEFORE_NAMESPACE();
namespace hearth::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

template <typename T>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(df, p);
  } else if constexpr (std::is_same_v<T, int8_t>) {
    const hn::Rebind<int32_t, DF> di;
    return hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(hn::Rebind<int8_t, DF>(), p)));
  } else {
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<T, DF>(), p));
  }
}

template <typename T>
HWY_INLINE float ScalarF32(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, int8_t>) {
    return float(p[i]);
  } else if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
  } else {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
  }
}

float Dot(const float* a, const float* b, int64_t n) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
    acc1 = hn::MulAdd(hn::LoadU(d, a + i + N), hn::LoadU(d, b + i + N), acc1);
  }
  for (; i + N <= n; i += N) acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <typename T, int NR, int NT>
void DotTileFixed(const void* const* w_rows, const float* const* x, int64_t n, float* out) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  const T* w[NR];
  for (int r = 0; r < NR; ++r) w[r] = static_cast<const T*>(w_rows[r]);
  hn::Vec<DF> acc[NT][NR];
  for (int t = 0; t < NT; ++t)
    for (int r = 0; r < NR; ++r) acc[t][r] = hn::Zero(d);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    hn::Vec<DF> wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = LoadF32(d, w[r] + i);
    for (int t = 0; t < NT; ++t) {
      const auto xv = hn::LoadU(d, x[t] + i);
      for (int r = 0; r < NR; ++r) acc[t][r] = hn::MulAdd(wv[r], xv, acc[t][r]);
    }
  }
  for (int t = 0; t < NT; ++t)
    for (int r = 0; r < NR; ++r) {
      float s = hn::GetLane(hn::SumOfLanes(d, acc[t][r]));
      for (int64_t j = i; j < n; ++j) s += ScalarF32(w[r], j) * x[t][j];
      out[t * NR + r] = s;
    }
}

template <typename T>
void DotTileTyped(const void* const* w, int n_rows, const float* const* x, int n_tok, int64_t n,
                  float* out) {
#define HEARTH_TILE(R, C) \
  if (n_rows == R && n_tok == C) return DotTileFixed<T, R, C>(w, x, n, out);
  HEARTH_TILE(4, 4)
  HEARTH_TILE(4, 3) HEARTH_TILE(4, 2) HEARTH_TILE(4, 1) HEARTH_TILE(3, 4) HEARTH_TILE(3, 3)
      HEARTH_TILE(3, 2) HEARTH_TILE(3, 1) HEARTH_TILE(2, 4) HEARTH_TILE(2, 3) HEARTH_TILE(2, 2)
          HEARTH_TILE(2, 1) HEARTH_TILE(1, 4) HEARTH_TILE(1, 3) HEARTH_TILE(1, 2) HEARTH_TILE(1, 1)
#undef HEARTH_TILE
}

void DotTile(DType w_type, const void* const* w, int n_rows, const float* const* x, int n_tok,
             int64_t n, float* out) {
  switch (w_type) {
    case DType::BF16:
      return DotTileTyped<hwy::bfloat16_t>(w, n_rows, x, n_tok, n, out);
    case DType::F16:
      return DotTileTyped<hwy::float16_t>(w, n_rows, x, n_tok, n, out);
    default:
      return DotTileTyped<float>(w, n_rows, x, n_tok, n, out);
  }
}

float SumSquares(const float* x, int64_t n) {
  return Dot(x, x, n);
}

float Sum(const float* x, int64_t n) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + N));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * N));
  }
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) s += x[i];
  return s;
}

void ScaleMul(const float* x, float s, const float* w, float* out, int64_t n) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, s);
  int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + i), vs), hn::LoadU(d, w + i)), d, out + i);
  for (; i < n; ++i) out[i] = x[i] * s * w[i];
}

void SiluMul(const float* gate, const float* up, float* out, int64_t n) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  const auto one = hn::Set(d, 1.0f);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(d, gate + i);
    const auto sig = hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(g))));
    hn::StoreU(hn::Mul(hn::Mul(g, sig), hn::LoadU(d, up + i)), d, out + i);
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

float MaxValue(const float* x, int64_t n) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  auto m = hn::Set(d, -INFINITY);
  int64_t i = 0;
  for (; i + N <= n; i += N) m = hn::Max(m, hn::LoadU(d, x + i));
  float s = hn::GetLane(hn::MaxOfLanes(d, m));
  for (; i < n; ++i) s = std::max(s, x[i]);
  return s;
}

float ExpShiftSum(float* x, float shift, int64_t n) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, shift);
  auto acc = hn::Zero(d);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vs));
    hn::StoreU(e, d, x + i);
    acc = hn::Add(acc, e);
  }
  float s = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) s += (x[i] = std::exp(x[i] - shift));
  return s;
}

void Scale(float* x, float s, int64_t n) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, s);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vs), d, x + i);
  for (; i < n; ++i) x[i] *= s;
}

// Query rows that read the same kv head (a GQA group's heads, of one token or
// of several consecutive tokens of one sequence) share each key and value
// load; up to kMaxRows at once.
constexpr int kMaxRows = 8;

// I8 entries (T = int8_t) carry a scale per group of dimensions (ops.h
// KvView); a vector of lanes lies within one group (32 of them, or the
// whole head).
static_assert(32 % HWY_LANES(float) == 0);
template <typename T>
constexpr bool kScaled = std::is_same_v<T, int8_t>;

// A block's I8 scales (kv_scales_offset bytes in).
inline const float* BlockScales(const void* block, size_t offset) {
  return reinterpret_cast<const float*>(static_cast<const int8_t*>(block) + offset);
}

// Scores of keys [j0, ...) of one block (kb: its keys of one kv head,
// transposed; ks: their scales, I8 only) in passes of V key vectors while
// they fit in the block: scores[r * stride + j] = q[r] . K[j] * scale.
// Prefetches the same keys of the next block (kb_next). Returns the next j0.
template <typename T, int R, int V>
int64_t ScorePasses(const T* kb, const float* ks, const T* kb_next, int bt, int hd,
                    const float* const* q, float scale, float* scores, int64_t stride, int64_t j0) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  // I8: the dot product over a group of dimensions, whose codes share each
  // key's scale, is scaled once and added to the score.
  const int group = kScaled<T> ? kv_scale_group(hd) : hd;
  for (; j0 + V * N <= bt; j0 += V * N) {
    for (int k0 = 0; k0 < hd; k0 += group) {
      hn::Vec<DF> acc[R][V];
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v) acc[r][v] = hn::Zero(d);
      for (int k = k0; k < k0 + group; ++k) {
        hn::Vec<DF> kv[V];
        for (int v = 0; v < V; ++v) {
          hwy::Prefetch(kb_next + k * bt + j0 + v * N);
          kv[v] = LoadF32(d, kb + k * bt + j0 + v * N);
        }
        for (int r = 0; r < R; ++r) {
          const auto qv = hn::Set(d, q[r][k]);
          for (int v = 0; v < V; ++v) acc[r][v] = hn::MulAdd(qv, kv[v], acc[r][v]);
        }
      }
      for (int v = 0; v < V; ++v) {
        auto s = hn::Set(d, scale);
        if constexpr (kScaled<T>) s = hn::Mul(hn::LoadU(d, ks + k0 / group * bt + j0 + v * N), s);
        for (int r = 0; r < R; ++r) {
          float* out = scores + r * stride + j0 + v * N;
          hn::StoreU(k0 == 0 ? hn::Mul(acc[r][v], s) : hn::MulAdd(acc[r][v], s, hn::LoadU(d, out)), d, out);
        }
      }
    }
  }
  return j0;
}

// Row j of the values of one kv head, through the block table, and for I8
// its scales (one per `group` columns).
template <typename T>
struct ValueRows {
  const void* const* blocks;
  int bt, hd, kv_heads, kv_head;
  int group = kv_scale_group(hd);
  struct Row {
    const T* entries;
    const float* scales;  // I8 only
  };
  Row row(int64_t j) const {
    const void* block = blocks[j / bt];
    const int64_t i = int64_t(kv_head) * bt + j % bt;  // the row's index in the block
    const T* entries = static_cast<const T*>(block) + i * hd;
    if constexpr (kScaled<T>) return {entries, BlockScales(block, kv_scales_offset(kv_heads, bt, hd)) + i * (hd / group)};
    return {entries, nullptr};
  }
  float at(int64_t j, int64_t k) const {
    const Row r = row(j);
    const float x = ScalarF32(r.entries, k);
    if constexpr (kScaled<T>) return x * r.scales[k / group];
    return x;
  }
};

// Passes of C vectors from column k0 while they fit in hd:
// rows[r].out[cols] = sum_j scores[r][j] * V[j][cols]. Returns the next k0.
template <typename T, int R, int C>
int64_t ValuePasses(const ValueRows<T>& values, const float* scores, int64_t stride, int64_t lo,
                    int64_t hi, const AttentionRow* rows, int64_t k0) {
  const DF d;
  const int64_t N = hn::Lanes(d);
  constexpr int64_t kAhead = 8;  // rows prefetched ahead: crosses into the next block early
  for (; k0 + C * N <= values.hd; k0 += C * N) {
    hn::Vec<DF> acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = hn::Zero(d);
    // I8: the group of each vector of the pass (a vector lies within one),
    // and whether it is the first of its group in the pass.
    [[maybe_unused]] int64_t group_of[C];
    [[maybe_unused]] bool group_starts[C];
    if constexpr (kScaled<T>)
      for (int c = 0; c < C; ++c) {
        group_of[c] = (k0 + c * N) / values.group;
        group_starts[c] = c == 0 || group_of[c] != group_of[c - 1];
      }
    // Block by block: a block's rows are hd entries (and hd / group
    // scales) apart, so only a block's first row goes through the table.
    const int64_t hd = values.hd, groups = hd / values.group;
    for (int64_t j = lo; j < hi;) {
      const int64_t end = std::min(hi, (j / values.bt + 1) * values.bt);
      const auto here = values.row(j), next = end < hi ? values.row(end) : here;
      for (int64_t i = 0; j < end; ++j, ++i) {
        const T* v = here.entries + i * hd + k0;
        // (Not past the next block, which smaller blocks than kAhead would reach.)
        if (j + kAhead < hi && j + kAhead < end + values.bt) {
          const T* ahead = j + kAhead < end ? v + kAhead * hd : next.entries + (j + kAhead - end) * hd + k0;
          for (int c = 0; c < C; ++c) hwy::Prefetch(ahead + c * N);
        }
        hn::Vec<DF> vv[C];
        for (int c = 0; c < C; ++c) vv[c] = LoadF32(d, v + c * N);
        if constexpr (kScaled<T>) {
          // Each row's weight times the group's scale, once per group.
          const float* sv = here.scales + i * groups;
          hn::Vec<DF> p[R];
          for (int c = 0; c < C; ++c) {
            if (group_starts[c])
              for (int r = 0; r < R; ++r) p[r] = hn::Set(d, scores[r * stride + j] * sv[group_of[c]]);
            for (int r = 0; r < R; ++r) acc[r][c] = hn::MulAdd(p[r], vv[c], acc[r][c]);
          }
        } else {
          for (int r = 0; r < R; ++r) {
            const auto p = hn::Set(d, scores[r * stride + j]);
            for (int c = 0; c < C; ++c) acc[r][c] = hn::MulAdd(p, vv[c], acc[r][c]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) hn::StoreU(acc[r][c], d, rows[r].out + k0 + c * N);
  }
  return k0;
}

// R rows at once (a compile-time count, so the accumulators stay in
// registers). Scores are computed over the union of the rows' ranges; each
// row's softmax covers its own range, and its probabilities outside it are
// zero, so one pass over the values serves every row.
template <typename T, int R>
void AttendRows(const AttentionRow* rows, const void* const* k_blocks, const void* const* v_blocks,
                int bt, int hd, int kv_heads, int kv_head, float scale, float* scores) {
  int64_t lo = rows[0].first, hi = rows[0].n_ctx;
  const float* q[R];
  for (int r = 0; r < R; ++r) {
    lo = std::min(lo, rows[r].first);
    hi = std::max(hi, rows[r].n_ctx);
    q[r] = rows[r].q;
  }
  const int64_t n_blocks = (hi + bt - 1) / bt, stride = n_blocks * bt;  // scores row per row
  // Scores: keys are transposed within a block, so lanes are keys and each
  // dimension is one multiply-add. Whole blocks are computed (their tails
  // are allocated); only [lo, hi) is used.
  const size_t scales_at = kv_scales_offset(kv_heads, bt, hd);
  const int group = kv_scale_group(hd);
  for (int64_t b = lo / bt; b < n_blocks; ++b) {
    const T* kb = static_cast<const T*>(k_blocks[b]) + int64_t(kv_head) * hd * bt;
    const float* ks =
        kScaled<T> ? BlockScales(k_blocks[b], scales_at) + int64_t(kv_head) * (hd / group) * bt : nullptr;
    // Blocks lie anywhere in the pool, beyond the hardware prefetcher's
    // reach: fetch the next one's keys while this one is read.
    const T* kb_next =
        b + 1 < n_blocks ? static_cast<const T*>(k_blocks[b + 1]) + int64_t(kv_head) * hd * bt : kb;
    // Two key vectors per pass (each broadcast query element serves both),
    // then one, then single keys.
    int64_t j0 = ScorePasses<T, R, 2>(kb, ks, kb_next, bt, hd, q, scale, scores + b * bt, stride, 0);
    j0 = ScorePasses<T, R, 1>(kb, ks, kb_next, bt, hd, q, scale, scores + b * bt, stride, j0);
    for (int r = 0; r < R; ++r)
      for (int64_t j = j0; j < bt; ++j) {
        float s = 0;
        for (int k = 0; k < hd; ++k)
          if constexpr (kScaled<T>)
            s += q[r][k] * ScalarF32(kb, k * bt + j) * ks[k / group * bt + j];
          else
            s += q[r][k] * ScalarF32(kb, k * bt + j);
        scores[r * stride + b * bt + j] = s * scale;
      }
  }
  for (int r = 0; r < R; ++r) {
    float* sr = scores + r * stride;
    const int64_t first = rows[r].first, n = rows[r].n_ctx - first;
    Scale(sr + first, 1.0f / ExpShiftSum(sr + first, MaxValue(sr + first, n), n), n);
    std::fill(sr + lo, sr + first, 0.0f);
    std::fill(sr + rows[r].n_ctx, sr + hi, 0.0f);
  }
  // out = sum_j p_j V_j, in passes over j of C vectors of every row's
  // output (in registers): each broadcast weight p serves C vectors, and
  // with few rows one pass covers whole value rows, read in order.
  const ValueRows<T> values{v_blocks, bt, hd, kv_heads, kv_head};
  int64_t k0 = 0;
  if constexpr (R <= 2) k0 = ValuePasses<T, R, 8>(values, scores, stride, lo, hi, rows, k0);
  if constexpr (R <= 4) k0 = ValuePasses<T, R, 4>(values, scores, stride, lo, hi, rows, k0);
  k0 = ValuePasses<T, R, 2>(values, scores, stride, lo, hi, rows, k0);
  k0 = ValuePasses<T, R, 1>(values, scores, stride, lo, hi, rows, k0);
  for (; k0 < hd; ++k0)
    for (int r = 0; r < R; ++r) {
      float a = 0;
      for (int64_t j = lo; j < hi; ++j) a += scores[r * stride + j] * values.at(j, k0);
      rows[r].out[k0] = a;
    }
}

template <typename T>
void AttendTyped(const AttentionRow* rows, int n, const void* const* k_blocks,
                 const void* const* v_blocks, int bt, int hd, int kv_heads, int kv_head,
                 float scale, float* scratch) {
  switch (n) {
#define HEARTH_ROWS(R) \
  case R:              \
    return AttendRows<T, R>(rows, k_blocks, v_blocks, bt, hd, kv_heads, kv_head, scale, scratch);
    HEARTH_ROWS(1)
    HEARTH_ROWS(2) HEARTH_ROWS(3) HEARTH_ROWS(4) HEARTH_ROWS(5) HEARTH_ROWS(6) HEARTH_ROWS(7)
        HEARTH_ROWS(8)
#undef HEARTH_ROWS
  }
}

void Attend(const AttentionRow* rows, int n_rows, const void* const* k_blocks,
            const void* const* v_blocks, DType kv_type, int bt, int hd, int kv_heads, int kv_head,
            float scale, float* scratch) {
  for (int r0 = 0; r0 < n_rows; r0 += kMaxRows) {
    const int n = std::min(kMaxRows, n_rows - r0);
    auto attend = [&]<typename T>(T) {
      AttendTyped<T>(rows + r0, n, k_blocks, v_blocks, bt, hd, kv_heads, kv_head, scale, scratch);
    };
    if (kv_type == DType::BF16)
      attend(hwy::bfloat16_t{});
    else if (kv_type == DType::I8)
      attend(int8_t{});
    else
      attend(float{});
  }
}

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace hearth::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hearth::simd {
HWY_EXPORT(DotTile);
HWY_EXPORT(SumSquares);
HWY_EXPORT(Sum);
HWY_EXPORT(ScaleMul);
HWY_EXPORT(SiluMul);
HWY_EXPORT(MaxValue);
HWY_EXPORT(ExpShiftSum);
HWY_EXPORT(Scale);
HWY_EXPORT(Attend);
HWY_EXPORT(TargetName);

void dot_tile(DType w_type, const void* const* w, int n_rows, const float* const* x, int n_tok,
              int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(DotTile)(w_type, w, n_rows, x, n_tok, n, out);
}
float sum_squares(const float* x, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(SumSquares)(x, n);
}
float sum(const float* x, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(Sum)(x, n);
}
void scale_mul(const float* x, float s, const float* w, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ScaleMul)(x, s, w, out, n);
}
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, out, n);
}
float max_value(const float* x, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(MaxValue)(x, n);
}
float exp_shift_sum(float* x, float shift, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ExpShiftSum)(x, shift, n);
}
void scale(float* x, float s, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Scale)(x, s, n);
}
void attend(const AttentionRow* rows, int n_rows, const void* const* k_blocks,
            const void* const* v_blocks, DType kv_type, int block_tokens, int head_dim,
            int kv_heads, int kv_head, float scale, float* scratch) {
  HWY_DYNAMIC_DISPATCH(Attend)
  (rows, n_rows, k_blocks, v_blocks, kv_type, block_tokens, head_dim, kv_heads, kv_head, scale,
   scratch);
}
const char* target_name() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}
}  // namespace hearth::simd
#endif
