#include "engine/sampler.h"

#include "core/simd.h"

#include <algorithm>
#include <cmath>
#include <limits>
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
  by_id_ = false;
}

void Sampler::partition(std::span<const float> logits, int64_t keep) {
  if (keep >= int64_t(order_.size()) || keep <= sorted_ || keep == partitioned_) return;
  auto by_logit = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; };
  const auto end = partitioned_ > 0 ? order_.begin() + partitioned_ : order_.end();
  std::nth_element(order_.begin() + sorted_, order_.begin() + (keep - 1), end, by_logit);
  partitioned_ = keep;
  by_id_ = false;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  // The server validates its requests; the engine's own callers may not.
  if (std::isnan(params_.temperature)) throw std::invalid_argument("the temperature is not a number");
  if (params_.has_processors()) process(logits, history);
  if (params_.temperature <= 0.0f) return argmax(logits);
  const int64_t n = int64_t(logits.size());
  const bool xtc = params_.xtc_probability > 0.0f;

  // Candidates are found without sorting the vocabulary: a count for min_p,
  // a histogram of the probabilities for top_p, a selection for top_k.
  // order_[0, keep) holds the survivors (sorted only where XTC needs their
  // order: sort_prefix). Without XTC the prefix filters commute, so top_k
  // may cut first; XTC sits between them (after top_p and min_p, before
  // top_k).
  order_.resize(size_t(n));
  std::iota(order_.begin(), order_.end(), 0);
  sorted_ = partitioned_ = 0;
  by_id_ = true;
  int64_t keep = n;
  if (!xtc && params_.top_k > 0 && params_.top_k < n) keep = params_.top_k;
  const float top = simd::max_value(logits.data(), n);

  if (params_.min_p > 0.0f) {
    // Keep tokens with p >= min_p * p_max, i.e. logit >= top + log(min_p).
    const double floor = top + std::log(double(params_.min_p));
    int64_t above = 0;
    for (float l : logits) above += l >= floor;
    keep = std::min(keep, std::max<int64_t>(1, above));
  }
  if (params_.top_p > 0.0f && params_.top_p < 1.0f) {
    // Probabilities of the untempered distribution: the smallest prefix (in
    // order of logit) whose mass reaches top_p.
    probs_.resize(size_t(n));
    const double total = simd::exp_sum(logits.data(), n, top, 1.0, probs_.data());
    keep = std::max<int64_t>(1, std::min(keep, top_p_by_histogram(logits, top, total)));
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
  // than `top`. Inverse-CDF draw from one uniform number over the survivors
  // in order of token id (no sorting by logit), so a seed fixes the sequence
  // independently of the standard library's distribution classes.
  partition(logits, keep);
  const std::span<int32_t> survivors(order_.data(), size_t(keep));
  if (by_id_) {
  } else if (keep * 16 < n) {
    std::sort(survivors.begin(), survivors.end());
  } else {  // most of the vocabulary: one pass over a membership mask
    member_.assign(size_t(n), 0);
    for (int32_t id : survivors) member_[size_t(id)] = 1;
    size_t at = 0;
    for (int32_t id = 0; id < n; ++id)
      if (member_[size_t(id)]) survivors[at++] = id;
  }
  float best = -std::numeric_limits<float>::infinity();
  for (int32_t id : survivors) best = std::max(best, logits[size_t(id)]);
  gathered_.resize(size_t(keep));
  weights_.resize(size_t(keep));
  for (int64_t i = 0; i < keep; ++i) gathered_[size_t(i)] = logits[size_t(survivors[size_t(i)])];
  const double sum = simd::exp_sum(gathered_.data(), keep, best, 1.0 / params_.temperature, weights_.data());
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * sum;
  for (int64_t i = 0; i < keep; ++i)
    if ((u -= weights_[size_t(i)]) < 0) return survivors[size_t(i)];
  return survivors.back();
}

int64_t Sampler::top_p_by_histogram(std::span<const float> logits, float top, double total) {
  // probs_ holds exp(logit - top) for every candidate (sample() filled it).
  // Buckets of logit distance below the top, kBucketsPerNat to a nat; the
  // last one holds everything further down (a mass of e^-32 each at most).
  constexpr int kBucketsPerNat = 64, kBuckets = 32 * kBucketsPerNat + 1;
  const int64_t n = int64_t(logits.size());
  bucket_.resize(size_t(n));
  bucket_mass_.assign(kBuckets, 0.0);
  for (int64_t id = 0; id < n; ++id) {
    const float d = (top - logits[size_t(id)]) * kBucketsPerNat;
    const int b = d < float(kBuckets - 1) ? int(d) : kBuckets - 1;  // also for -inf (d = inf)
    bucket_[size_t(id)] = uint16_t(b);
    bucket_mass_[size_t(b)] += probs_[size_t(id)];
  }
  // The bucket where the mass reaches top_p; all above it survive.
  const double target = double(params_.top_p) * total;
  double mass = 0;
  int edge = 0;
  while (edge < kBuckets - 1 && mass + bucket_mass_[size_t(edge)] < target) mass += bucket_mass_[size_t(edge++)];
  // The survivors in token-id order: those above the edge bucket, merged
  // with the best of the edge bucket until the mass reaches top_p.
  int64_t k = 0;
  edge_ids_.clear();
  for (int32_t id = 0; id < n; ++id) {
    if (bucket_[size_t(id)] < edge) order_[size_t(k++)] = id;
    else if (bucket_[size_t(id)] == edge) edge_ids_.push_back(id);
  }
  std::sort(edge_ids_.begin(), edge_ids_.end(),
            [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  size_t m = 0;
  while (m < edge_ids_.size() && mass < target) mass += probs_[size_t(edge_ids_[m++])];
  std::sort(edge_ids_.begin(), edge_ids_.begin() + ptrdiff_t(m));
  std::copy(edge_ids_.begin(), edge_ids_.begin() + ptrdiff_t(m), order_.begin() + k);
  std::inplace_merge(order_.begin(), order_.begin() + k, order_.begin() + k + ptrdiff_t(m));
  k += int64_t(m);
  // order_[0, k) are the k best, in order of id; what follows is stale.
  sorted_ = 0;
  partitioned_ = std::max<int64_t>(k, 1);
  by_id_ = true;
  return k;
}

}  // namespace hearth
