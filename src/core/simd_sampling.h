// The sampler's passes over a row of logits, compiled for every SIMD target
// Highway knows and dispatched at run time (as core/simd.h).
#pragma once

#include <cstdint>
#include <limits>

namespace hearth::simd {

// In double precision: out[i] = exp((x[i] - shift) * scale) where out is
// not null, 0 where x[i] < at_least; returns their sum (the sampler's
// probabilities: exact enough that a top-p cut matches a double-precision
// reference).
double exp_sum(const float* x, int64_t n, double shift, double scale, double* out = nullptr,
               float at_least = -std::numeric_limits<float>::infinity());
// The sampler's top-p histogram: probabilities by distance below the top
// logit, kBucketsPerNat buckets to a nat, the last holding everything
// further down (e^-32 each at most).
constexpr int kBucketsPerNat = 64, kBuckets = 32 * kBucketsPerNat + 1, kLastBucket = kBuckets - 1;

// The bucket of a logit x (in float; NaN is in the last).
inline int bucket_of(float x, float top) {
  const float d = (top - x) * float(kBucketsPerNat);
  return d < float(kLastBucket) ? int(d) : kLastBucket;
}

// mass[b] = the sum of exp(x[i] - top) (in double) over the x[i] in bucket
// b, for each of the kBuckets; returns the sum of all. top is max(x).
double exp_histogram(const float* x, int64_t n, float top, double* mass);

// The indices i of the x[i] in one bucket, written to ids in order (room
// for n), and how many x[i] lie in the buckets before it.
struct BucketScan {
  int64_t before, in;
};
BucketScan scan_bucket(const float* x, int64_t n, float top, int bucket, int32_t* ids);

// Writes the indices i with x[i] >= at_least to ids, in order; returns how
// many. ids has room for n.
int64_t ids_at_least(const float* x, int64_t n, float at_least, int32_t* ids);

// log Σ exp(x[i]), in double from the largest x (-inf when every x is -inf
// or n is 0): the normalizer of a log-softmax.
double log_sum_exp(const float* x, int64_t n);

// The first index of the largest value (NaN never is; 0 when every value is
// NaN or -inf, or n is 0): greedy decoding's pick.
int64_t argmax(const float* x, int64_t n);

}  // namespace hearth::simd
