#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hearth {

Sampler::Sampler(const SamplingParams& params)
    : params_(params), rng_(params.seed ? *params.seed : std::random_device{}()) {}

int32_t Sampler::argmax(std::span<const float> logits) {
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int32_t Sampler::sample(std::span<float> logits) {
  if (params_.temperature <= 0.0f) return argmax(logits);
  const int64_t n = int64_t(logits.size());

  // Candidates sorted by logit, highest first; filters shrink `keep`.
  order_.resize(size_t(n));
  std::iota(order_.begin(), order_.end(), 0);
  int64_t keep = n;
  if (params_.top_k > 0 && params_.top_k < n) {
    keep = params_.top_k;
    std::partial_sort(order_.begin(), order_.begin() + keep, order_.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  } else {
    std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  }

  // Probabilities of the untempered distribution for top_p and min_p.
  const float top = logits[order_[0]];
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += std::exp(double(logits[i]) - top);
  if (params_.min_p > 0.0f) {
    // Keep tokens with p >= min_p * p_max, i.e. logit >= top + log(min_p).
    const double floor = top + std::log(double(params_.min_p));
    int64_t k = 1;
    while (k < keep && logits[order_[k]] >= floor) ++k;
    keep = k;
  }
  if (params_.top_p > 0.0f && params_.top_p < 1.0f) {
    // Smallest prefix whose mass reaches top_p.
    double mass = 0;
    int64_t k = 0;
    while (k < keep) {
      mass += std::exp(double(logits[order_[k]]) - top) / total;
      ++k;
      if (mass >= params_.top_p) break;
    }
    keep = std::max<int64_t>(1, k);
  }

  // Sample among the survivors at the temperature.
  weights_.resize(static_cast<size_t>(keep));
  double sum = 0;
  for (int64_t i = 0; i < keep; ++i)
    sum += weights_[i] = std::exp((double(logits[order_[i]]) - top) / params_.temperature);
  // Inverse-CDF draw from one uniform number, so a seed fixes the sequence
  // independently of the standard library's distribution classes.
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * sum;
  for (int64_t i = 0; i < keep; ++i)
    if ((u -= weights_[i]) < 0) return order_[i];
  return order_[keep - 1];
}

}  // namespace hearth
