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
// The sampler's top-p histogram: adds exp(x[i] - top) (in double) to
// mass[b] and 1 to count[b] for b = min(int((top - x[i]) * per_unit),
// buckets - 1) (in float); returns the sum of all. top is max(x).
double exp_histogram(const float* x, int64_t n, float top, float per_unit, int buckets,
                     double* mass, int32_t* count);
// Writes the x[i] with lo <= x[i] <= hi to out, in order; returns how many.
// out has room for n floats.
int64_t select_between(const float* x, int64_t n, float lo, float hi, float* out);

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
