#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace hearth {

Sampler::Sampler(const SamplingParams& params)
    : params_(params), rng_(params.seed ? *params.seed : std::random_device{}()) {}

int32_t Sampler::argmax(std::span<const float> logits) {
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void Sampler::process(std::span<float> logits, std::span<const int32_t> history) {
  const int64_t n = int64_t(logits.size());
  for (const auto& [id, bias] : params_.logit_bias)
    if (id >= 0 && id < n) logits[size_t(id)] += bias;
  if (history.empty()) return;

  // The last `size` tokens of the history; `distinct` sorts and dedupes them.
  auto window = [&](int size, bool distinct) {
    const size_t count = std::min(history.size(), size_t(std::max(size, 0)));
    window_.assign(history.end() - std::ptrdiff_t(count), history.end());
    if (distinct) {
      std::sort(window_.begin(), window_.end());
      window_.erase(std::unique(window_.begin(), window_.end()), window_.end());
    }
    return std::span<const int32_t>(window_);
  };
  auto valid = [&](int32_t id) { return id >= 0 && id < n; };

  const float rep = params_.repetition_penalty;
  if (rep != 0.0f && rep != 1.0f) {
    for (int32_t id : window(params_.repetition_context_size, true)) {
      if (!valid(id)) continue;
      float& l = logits[size_t(id)];
      l = l < 0 ? l * rep : l / rep;
    }
  }
  if (params_.presence_penalty != 0.0f) {
    for (int32_t id : window(params_.presence_context_size, true))
      if (valid(id)) logits[size_t(id)] -= params_.presence_penalty;
  }
  if (params_.frequency_penalty != 0.0f) {
    for (int32_t id : window(params_.frequency_context_size, false))
      if (valid(id)) logits[size_t(id)] -= params_.frequency_penalty;
  }
}

int32_t Sampler::sample(std::span<float> logits) { return sample(logits, {}); }

void Sampler::sort_prefix(std::span<const float> logits, int64_t k) {
  // Grows geometrically, so a walk down the order costs O(n log k) in all.
  const int64_t end = partitioned_ > 0 ? partitioned_ : int64_t(order_.size());
  k = std::min(end, std::max(k, std::min(end, 2 * sorted_)));
  if (k <= sorted_) return;
  auto by_logit = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; };
  const auto first = order_.begin() + sorted_;
  if (k < end) std::nth_element(first, order_.begin() + (k - 1), order_.begin() + end, by_logit);
  std::sort(first, order_.begin() + k, by_logit);
  sorted_ = k;
}

void Sampler::partition(std::span<const float> logits, int64_t keep) {
  if (keep >= int64_t(order_.size()) || keep <= sorted_) return;
  auto by_logit = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; };
  std::nth_element(order_.begin() + sorted_, order_.begin() + (keep - 1), order_.end(), by_logit);
  partitioned_ = keep;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  // The server validates its requests; the engine's own callers may not.
  if (std::isnan(params_.temperature)) throw std::invalid_argument("the temperature is not a number");
  if (params_.has_processors()) process(logits, history);
  if (params_.temperature <= 0.0f) return argmax(logits);
  const int64_t n = int64_t(logits.size());
  const bool xtc = params_.xtc_probability > 0.0f;

  // Candidates in order of logit, highest first, sorted only as far as the
  // filters and the draw look (sort_prefix): the mass of a vocabulary of
  // 150k entries is nearly always in its first few hundred. Without XTC the
  // prefix filters commute, so top_k may cut first; XTC sits between them
  // (after top_p and min_p, before top_k) and needs their survivors' order.
  order_.resize(size_t(n));
  std::iota(order_.begin(), order_.end(), 0);
  sorted_ = partitioned_ = 0;
  int64_t keep = n;
  if (!xtc && params_.top_k > 0 && params_.top_k < n) keep = params_.top_k;
  sort_prefix(logits, std::min<int64_t>(keep, 64));
  const float top = logits[size_t(order_[0])];

  if (params_.min_p > 0.0f) {
    // Keep tokens with p >= min_p * p_max, i.e. logit >= top + log(min_p).
    const double floor = top + std::log(double(params_.min_p));
    int64_t above = 0;
    for (float l : logits) above += l >= floor;
    keep = std::min(keep, std::max<int64_t>(1, above));
  }
  if (params_.top_p > 0.0f && params_.top_p < 1.0f) {
    // Probabilities of the untempered distribution: the smallest prefix whose mass reaches top_p.
    double total = 0;
    for (float l : logits) total += std::exp(double(l) - top);
    double mass = 0;
    int64_t k = 0;
    while (k < keep) {
      if (k == sorted_) sort_prefix(logits, std::min(keep, 2 * k));
      mass += std::exp(double(logits[size_t(order_[size_t(k)])]) - top) / total;
      ++k;
      if (mass >= params_.top_p) break;
    }
    keep = std::max<int64_t>(1, k);
  }

  if (xtc) {
    sort_prefix(logits, keep);
    // One uniform draw per step decides whether XTC applies (mlx-lm draws it
    // every step too). Probabilities are renormalized over the survivors.
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    if (u <= params_.xtc_probability) {
      double z = 0;
      for (int64_t i = 0; i < keep; ++i) z += std::exp(double(logits[order_[i]]) - top);
      // The least likely token above the threshold is the last one in order.
      int64_t last_above = -1;
      for (int64_t i = 0; i < keep; ++i)
        if (std::exp(double(logits[order_[i]]) - top) / z > params_.xtc_threshold) last_above = i;
      if (last_above > 0) {
        const float floor_logit = logits[order_[last_above]];
        const auto& special = params_.xtc_special_tokens;
        int64_t out = 0;
        for (int64_t i = 0; i < keep; ++i) {
          const int32_t id = order_[i];
          const bool removed = logits[id] > floor_logit &&
                               std::find(special.begin(), special.end(), id) == special.end();
          if (!removed) order_[out++] = id;
        }
        keep = out;
        sorted_ = out;  // the survivors stay in order
      }
    }
    if (params_.top_k > 0 && params_.top_k < keep) keep = params_.top_k;
  }

  // Sample among the survivors (the `keep` best) at the temperature,
  // relative to the best survivor, which XTC may have made another token
  // than `top`. Inverse-CDF draw from one uniform number in order of logit,
  // so a seed fixes the sequence independently of the standard library's
  // distribution classes.
  partition(logits, keep);
  const double best = logits[size_t(order_[0])];
  auto weight = [&](int32_t id) { return std::exp((double(logits[size_t(id)]) - best) / params_.temperature); };
  double sum = 0;
  for (int64_t i = 0; i < keep; ++i) sum += weight(order_[size_t(i)]);
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * sum;
  for (int64_t i = 0; i < keep; ++i) {
    if (i == sorted_) sort_prefix(logits, std::min(keep, 2 * i));
    if ((u -= weight(order_[size_t(i)])) < 0) return order_[size_t(i)];
  }
  sort_prefix(logits, keep);
  return order_[size_t(keep - 1)];
}

}  // namespace hearth
