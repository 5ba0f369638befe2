// Highway compiles this file once per target (foreach_target.h re-includes
// it); HWY_EXPORT / HWY_DYNAMIC_DISPATCH pick the best one at run time.
#include "core/hwy_targets.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/simd_sampling.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format off
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
// clang-format on

#include <algorithm>
#include <array>
#include <cmath>

#include "core/simd.h"
#include "core/simd_sampling.h"

HWY_BEFORE_NAMESPACE();
namespace hearth::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

double ExpSum(const float* x, int64_t n, double shift, double scale, double* out, float at_least) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // half as many floats, one per double lane
  const int64_t N = hn::Lanes(dd);
  const auto vs = hn::Set(dd, shift), vk = hn::Set(dd, scale);
  const auto floor = hn::Set(dd, double(at_least));
  auto acc = hn::Zero(dd);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::PromoteTo(dd, hn::LoadU(df, x + i));
    const auto e = hn::IfThenElseZero(hn::Ge(v, floor), hn::Exp(dd, hn::Mul(hn::Sub(v, vs), vk)));
    if (out) hn::StoreU(e, dd, out + i);
    acc = hn::Add(acc, e);
  }
  double s = hn::GetLane(hn::SumOfLanes(dd, acc));
  for (; i < n; ++i) {
    const double e = x[i] >= at_least ? std::exp((double(x[i]) - shift) * scale) : 0.0;
    if (out) out[i] = e;
    s += e;
  }
  return s;
}

// exp(-b / kBucketsPerNat) for each bucket b but the last, whose sums are
// plain exps.
const double* BucketScales() {
  static const auto scales = [] {
    std::array<double, kBuckets> s;
    for (int b = 0; b < kLastBucket; ++b) s[size_t(b)] = std::exp(-double(b) / kBucketsPerNat);
    s[kLastBucket] = 1.0;
    return s;
  }();
  return scales.data();
}

// A token at distance top - x = b / kBucketsPerNat + r (b its bucket, r less
// than a bucket's width) has exp(x - top) = exp(-b / kBucketsPerNat) exp(-r):
// each token adds exp(-r), a short polynomial, to its bucket, and each
// bucket's sum is scaled once at the end. Only the far bucket's tokens,
// whose r is not small, take a full exp.
double ExpHistogram(const float* x, int64_t n, float top, double* mass) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const hn::Rebind<int32_t, decltype(dd)> di;
  constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(double);
  const int64_t N = hn::Lanes(dd);
  const auto vtop = hn::Set(df, top), vper = hn::Set(df, float(kBucketsPerNat));
  const auto vlast = hn::Set(df, float(kLastBucket));
  const auto vtop_d = hn::Set(dd, double(top)), vwidth = hn::Set(dd, 1.0 / kBucketsPerNat);
  // exp(-r) = sum (-r)^k / k!, k <= 6: below a double's rounding for
  // |r| <= 1/64 (the float bucket may miss r's range by 4e-6 at most).
  const auto c2 = hn::Set(dd, 1.0 / 2), c3 = hn::Set(dd, 1.0 / 6), c4 = hn::Set(dd, 1.0 / 24),
             c5 = hn::Set(dd, 1.0 / 120), c6 = hn::Set(dd, 1.0 / 720), one = hn::Set(dd, 1.0);
  std::fill(mass, mass + kBuckets, 0.0);
  auto acc_last = hn::Zero(dd);
  HWY_ALIGN double e_lanes[kMaxLanes];
  HWY_ALIGN int32_t b_lanes[kMaxLanes];
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(df, x + i);
    const auto below = hn::Sub(hn::PromoteTo(dd, v), vtop_d);  // x - top, exact in double
    // The bucket as bucket_of(); the far tail (most of a very peaked
    // vocabulary) sums in a register instead of one memory cell.
    const auto dist = hn::Mul(hn::Sub(vtop, v), vper);
    const auto d = hn::IfThenElse(hn::Lt(dist, vlast), dist, vlast);  // NaN too: the far bucket
    const auto b = hn::ConvertTo(di, d);
    const auto far = hn::Ge(d, vlast);
    if (hn::AllTrue(df, far)) {
      acc_last = hn::Add(acc_last, hn::Exp(dd, below));
      continue;
    }
    const auto nr = hn::MulAdd(hn::PromoteTo(dd, b), vwidth, below);  // -r
    auto e = hn::MulAdd(hn::MulAdd(hn::MulAdd(hn::MulAdd(c6, nr, c5), nr, c4), nr, c3), nr, c2);
    e = hn::MulAdd(hn::MulAdd(e, nr, one), nr, one);
    if (!hn::AllFalse(df, far))  // the far mask again, on double lanes
      e = hn::IfThenElse(hn::Ge(hn::PromoteTo(dd, d), hn::Set(dd, double(kLastBucket))),
                         hn::Exp(dd, below), e);
    hn::Store(e, dd, e_lanes);
    hn::Store(b, di, b_lanes);
    for (int64_t l = 0; l < N; ++l) mass[b_lanes[l]] += e_lanes[l];
  }
  mass[kLastBucket] += hn::GetLane(hn::SumOfLanes(dd, acc_last));
  for (; i < n; ++i) {
    const int b = bucket_of(x[i], top);
    const double nr = double(x[i]) - double(top) + (b < kLastBucket ? double(b) / kBucketsPerNat : 0.0);
    mass[b] += std::exp(nr);
  }
  const double* scales = BucketScales();
  double s = 0;
  for (int b = 0; b < kBuckets; ++b) s += mass[b] *= scales[b];
  return s;
}

BucketScan ScanBucket(const float* x, int64_t n, float top, int bucket, int32_t* ids) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const int64_t N = hn::Lanes(df);
  const auto vtop = hn::Set(df, top), vper = hn::Set(df, float(kBucketsPerNat));
  const auto vb = hn::Set(df, float(bucket)), vnext = hn::Set(df, float(bucket + 1));
  // For a distance d >= 0 (in buckets), bucket_of < bucket is d < bucket;
  // the bucket itself is bucket <= d < bucket + 1, or for the far one
  // anything not before it (NaN too).
  int64_t before = 0, k = 0, i = 0;
  for (; i + N <= n; i += N) {
    const auto d = hn::Mul(hn::Sub(vtop, hn::LoadU(df, x + i)), vper);
    const auto ahead = hn::Lt(d, vb);
    before += int64_t(hn::CountTrue(df, ahead));
    const auto in = bucket == kLastBucket ? hn::Not(ahead) : hn::AndNot(ahead, hn::Lt(d, vnext));
    if (!hn::AllFalse(df, in))
      k += int64_t(hn::CompressBlendedStore(hn::Iota(di, int32_t(i)), hn::RebindMask(di, in), di, ids + k));
  }
  for (; i < n; ++i) {
    const int b = bucket_of(x[i], top);
    before += b < bucket;
    if (b == bucket) ids[k++] = int32_t(i);
  }
  return {before, k};
}

int64_t IdsAtLeast(const float* x, int64_t n, float at_least, int32_t* ids) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const int64_t N = hn::Lanes(df);
  const auto floor = hn::Set(df, at_least);
  int64_t k = 0, i = 0;
  for (; i + N <= n; i += N) {
    const auto in = hn::Ge(hn::LoadU(df, x + i), floor);
    if (!hn::AllFalse(df, in))
      k += int64_t(hn::CompressBlendedStore(hn::Iota(di, int32_t(i)), hn::RebindMask(di, in), di, ids + k));
  }
  for (; i < n; ++i)
    if (x[i] >= at_least) ids[k++] = int32_t(i);
  return k;
}

int64_t ArgMax(const float* x, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
  const int64_t N = hn::Lanes(df);
  // Per lane, the first of its largest values (Gt: a later equal one, or a
  // NaN, never replaces it); -inf lanes keep their own first index.
  auto best = hn::Set(df, -std::numeric_limits<float>::infinity());
  auto best_i = hn::Iota(di, 0), at = best_i;
  const auto step = hn::Set(di, int32_t(N));
  int64_t i = 0;
  for (; i + N <= n; i += N, at = hn::Add(at, step)) {
    const auto v = hn::LoadU(df, x + i);
    const auto gt = hn::Gt(v, best);
    best = hn::IfThenElse(gt, v, best);
    best_i = hn::IfThenElse(hn::RebindMask(di, gt), at, best_i);
  }
  HWY_ALIGN float lane_max[kMaxLanes];
  HWY_ALIGN int32_t lane_at[kMaxLanes];
  hn::Store(best, df, lane_max);
  hn::Store(best_i, di, lane_at);
  float top = -std::numeric_limits<float>::infinity();
  int64_t arg = 0;
  for (int64_t l = 0; l < N; ++l)
    if (lane_max[l] > top || (lane_max[l] == top && lane_at[l] < arg)) top = lane_max[l], arg = lane_at[l];
  for (; i < n; ++i)
    if (x[i] > top) top = x[i], arg = i;
  return arg;
}

}  // namespace hearth::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hearth::simd {
HWY_EXPORT(ExpSum);
HWY_EXPORT(ExpHistogram);
HWY_EXPORT(ScanBucket);
HWY_EXPORT(IdsAtLeast);
HWY_EXPORT(ArgMax);

double exp_sum(const float* x, int64_t n, double shift, double scale, double* out, float at_least) {
  return HWY_DYNAMIC_DISPATCH(ExpSum)(x, n, shift, scale, out, at_least);
}
double exp_histogram(const float* x, int64_t n, float top, double* mass) {
  return HWY_DYNAMIC_DISPATCH(ExpHistogram)(x, n, top, mass);
}
BucketScan scan_bucket(const float* x, int64_t n, float top, int bucket, int32_t* ids) {
  return HWY_DYNAMIC_DISPATCH(ScanBucket)(x, n, top, bucket, ids);
}
int64_t ids_at_least(const float* x, int64_t n, float at_least, int32_t* ids) {
  return HWY_DYNAMIC_DISPATCH(IdsAtLeast)(x, n, at_least, ids);
}
int64_t argmax(const float* x, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ArgMax)(x, n);
}
double log_sum_exp(const float* x, int64_t n) {
  const float m = max_value(x, n);
  if (n == 0 || m == -std::numeric_limits<float>::infinity()) return -std::numeric_limits<double>::infinity();
  return double(m) + std::log(exp_sum(x, n, m, 1.0));
}
}  // namespace hearth::simd
#endif
