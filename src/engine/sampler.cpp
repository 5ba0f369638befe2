#include "engine/sampler.h"

#include "core/simd.h"
#include "core/simd_sampling.h"
#include "core/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace hearth {

namespace {

// fn(task) for each task in [0, n), over the pool's threads where there is
// one. Each task writes only its own results, so they do not depend on it.
void run_tasks(ThreadPool* pool, int64_t n, const std::function<void(int64_t)>& fn) {
  if (pool && pool->size() > 1 && n > 1)
    pool->run(int(n), [&](int task, int) { fn(task); });
  else
    for (int64_t t = 0; t < n; ++t) fn(t);
}

}  // namespace

Sampler::Sampler(const SamplingParams& params)
    : Sampler(params, std::mt19937_64(params.seed ? *params.seed : std::random_device{}())) {}

Sampler::Sampler(const SamplingParams& params, std::mt19937_64 rng) : params_(params), rng_(rng) {}

void Sampler::release_scratch() {
  // All but the parameters and the random state is scratch: a fresh
  // sampler with those has none (nor can a new buffer be forgotten here).
  *this = Sampler(params_, rng_);
}

int32_t Sampler::argmax(std::span<const float> logits) {
  return int32_t(simd::argmax(logits.data(), int64_t(logits.size())));
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

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history,
                        ThreadPool* pool) {
  if (params_.has_processors()) process(logits, history);
  return choose(logits, pool);
}

int32_t Sampler::choose(std::span<const float> logits, ThreadPool* pool) {
  // The server validates its requests; the engine's own callers may not.
  if (std::isnan(params_.temperature)) throw std::invalid_argument("the temperature is not a number");
  if (params_.temperature <= 0.0f) return argmax(logits);
  const int64_t n = int64_t(logits.size());
  const float top = simd::max_value(logits.data(), n);

  // min_p and top_p keep the tokens at or above a logit, top_k the k best:
  // each keeps an upper set of the logit order, so without XTC they commute
  // and the survivors are those at or above the highest cut. XTC sits
  // between them (after top_p and min_p, before top_k). Nothing sorts the
  // vocabulary.
  int64_t keep = n;
  const float at_least = min_p_top_p_cut(logits, top, keep, pool);
  if (params_.xtc_probability > 0.0f) return sample_xtc(logits, at_least);
  if (params_.top_k > 0 && params_.top_k < keep) {
    // The k-th best logit; of the tokens tied at it, the first in id order.
    const int64_t k = params_.top_k;
    gathered_.clear();
    for (float l : logits)
      if (l >= at_least) gathered_.push_back(l);
    std::nth_element(gathered_.begin(), gathered_.begin() + (k - 1), gathered_.end(), std::greater<>());
    const float kth = gathered_[size_t(k - 1)];
    const int64_t above = std::count_if(gathered_.begin(), gathered_.begin() + (k - 1),
                                        [&](float l) { return l > kth; });
    collect(logits, kth, k - above);
    return draw_listed(logits, int64_t(order_.size()));
  }
  if (edge_bucket_ >= 0) return draw_by_bucket(logits, top, at_least, pool);
  // Some survivors are drawn from a list; most of the vocabulary in place.
  if (keep * 4 < n) {
    collect(logits, at_least, n);
    return draw_listed(logits, int64_t(order_.size()));
  }
  return draw_above(logits, top, at_least, pool);
}

float Sampler::min_p_top_p_cut(std::span<const float> logits, float top, int64_t& keep,
                               ThreadPool* pool) {
  const int64_t n = int64_t(logits.size());
  float at_least = -std::numeric_limits<float>::infinity();
  edge_bucket_ = -1;
  if (params_.min_p > 0.0f) {
    // p >= min_p * p_max, i.e. logit >= top + log(min_p): as a float, the
    // least one at or above that.
    const double floor = top + std::log(double(params_.min_p));
    float f = float(floor);
    if (double(f) < floor) f = std::nextafter(f, std::numeric_limits<float>::infinity());
    at_least = std::min(f, top);
    int64_t above = 0;
    for (float l : logits) above += l >= at_least;
    keep = above;
  }
  if (params_.top_p > 0.0f && params_.top_p < 1.0f) {
    // The smallest prefix (in order of logit) of the untempered distribution
    // whose mass reaches top_p, in linear time: a histogram of the
    // probabilities by distance below the top (simd::kBucketsPerNat to a
    // nat), then a sort of the one bucket where the mass reaches top_p. Each
    // chunk of the row has a histogram of its own (they add up in chunk
    // order), so the pool's threads can share the pass.
    constexpr int kBuckets = simd::kBuckets;
    constexpr int64_t kChunk = 32768;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    bucket_mass_.resize(size_t(chunks * kBuckets));
    chunk_mass_.resize(size_t(chunks));
    run_tasks(pool, chunks, [&](int64_t c) {
      chunk_mass_[size_t(c)] = simd::exp_histogram(logits.data() + c * kChunk, std::min(kChunk, n - c * kChunk),
                                                   top, bucket_mass_.data() + size_t(c * kBuckets));
    });
    const double total = std::accumulate(chunk_mass_.begin(), chunk_mass_.end(), 0.0);
    const double target = double(params_.top_p) * total;
    double mass = 0;
    int edge = 0;
    bucket_total_.resize(size_t(kBuckets));
    for (;; ++edge) {
      double& in_bucket = bucket_total_[size_t(edge)] = 0;
      for (int64_t c = 0; c < chunks; ++c) in_bucket += bucket_mass_[size_t(c * kBuckets + edge)];
      if (edge == simd::kLastBucket || mass + in_bucket >= target) break;
      mass += in_bucket;
    }
    // The edge bucket's logits, and how many tokens the buckets above it hold.
    bucket_ids_.resize(size_t(n));
    const auto [k, in_edge] = simd::scan_bucket(logits.data(), n, top, edge, bucket_ids_.data());
    edge_.resize(size_t(in_edge));
    for (int64_t i = 0; i < in_edge; ++i) edge_[size_t(i)] = logits[size_t(bucket_ids_[size_t(i)])];
    std::sort(edge_.begin(), edge_.end(), std::greater<>());
    edge_bucket_ = edge;
    int64_t m = 0;
    while (m < in_edge && mass < target) mass += std::exp(double(edge_[size_t(m++)]) - top);
    // m = 0 only when the edge is the empty far bucket: all above it stay.
    if (m > 0 && edge_[size_t(m - 1)] > at_least) at_least = edge_[size_t(m - 1)];
    keep = std::min(keep, std::max<int64_t>(1, k + m));
  }
  return at_least;
}

void Sampler::collect(std::span<const float> logits, float at_least, int64_t ties) {
  const int32_t n = int32_t(logits.size());
  order_.resize(size_t(n));
  int64_t k = 0;
  if (ties >= n) {  // every tie
    k = simd::ids_at_least(logits.data(), n, at_least, order_.data());
  } else {
    for (int32_t id = 0; id < n; ++id) {
      const float l = logits[size_t(id)];
      if (l > at_least || (l == at_least && ties-- > 0)) order_[size_t(k++)] = id;
    }
  }
  order_.resize(size_t(k));
  sorted_ = partitioned_ = 0;
  by_id_ = true;
}

int32_t Sampler::sample_xtc(std::span<const float> logits, float at_least) {
  collect(logits, at_least, int64_t(logits.size()));
  int64_t keep = int64_t(order_.size());
  sort_prefix(logits, keep);
  // One uniform draw per step decides whether XTC applies (mlx-lm draws it
  // every step too). Probabilities are renormalized over the survivors.
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  if (u <= params_.xtc_probability) {
    const float top = logits[size_t(order_[0])];
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
      order_.resize(size_t(keep));
      sorted_ = out;  // the survivors stay in order
    }
  }
  if (params_.top_k > 0 && params_.top_k < keep) keep = params_.top_k;
  partition(logits, keep);
  return draw_listed(logits, keep);
}

// Sample among order_[0, keep) at the temperature, relative to the best of
// them, which XTC may have made another token than the top. Inverse-CDF
// draw from one uniform number over the survivors in order of token id (no
// sorting by logit), so a seed fixes the sequence independently of the
// standard library's distribution classes.
int32_t Sampler::draw_listed(std::span<const float> logits, int64_t keep) {
  const int64_t n = int64_t(logits.size());
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

// The same draw over every token at or above at_least, in place: block sums
// first, then the weights of the one block the draw falls in.
int32_t Sampler::draw_above(std::span<const float> logits, float top, float at_least,
                            ThreadPool* pool) {
  constexpr int64_t kBlock = 4096;
  const int64_t n = int64_t(logits.size()), blocks = (n + kBlock - 1) / kBlock;
  const double inv_t = 1.0 / params_.temperature;
  block_sums_.resize(size_t(blocks));
  run_tasks(pool, blocks, [&](int64_t b) {
    block_sums_[size_t(b)] = simd::exp_sum(logits.data() + b * kBlock,
                                           std::min(kBlock, n - b * kBlock), top, inv_t, nullptr,
                                           at_least);
  });
  const double sum = std::accumulate(block_sums_.begin(), block_sums_.end(), 0.0);
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * sum;
  int64_t b = 0;
  while (b < blocks - 1 && u >= block_sums_[size_t(b)]) u -= block_sums_[size_t(b++)];
  if (!(u < block_sums_[size_t(b)])) {  // rounding left u past the last survivor: that one
    while (b > 0 && block_sums_[size_t(b)] == 0) --b;
    u = std::numeric_limits<double>::infinity();
  }
  const int64_t first = b * kBlock, len = std::min(kBlock, n - first);
  weights_.resize(size_t(len));
  simd::exp_sum(logits.data() + first, len, top, inv_t, weights_.data(), at_least);
  int64_t last = -1;
  for (int64_t i = 0; i < len; ++i) {
    if (weights_[size_t(i)] == 0) continue;
    if ((u -= weights_[size_t(i)]) < 0) return int32_t(first + i);
    last = i;
  }
  return int32_t(first + last);
}

// With top_p the histogram holds M_b, each bucket's untempered mass
// sum exp(x - top). A survivor's tempered weight exp((x - top) / T) is
// exp(x - top) exp(-a d), with d = top - x and a = 1/T - 1, and exp(-a d)
// has a bound h_b over a bucket: so U_b = M_b h_b bounds W_b, the tempered
// mass of the bucket's survivors. Rejection sampling then draws with no
// exp per token of the row: pick a bucket in proportion to U_b, weigh its
// survivors exactly (one scan of the row), accept with probability
// W_b / U_b and draw among them by the inverse CDF in id order, all with
// one uniform number. Exact: a bucket comes out in proportion to
// U_b W_b / U_b = W_b. After kRounds rejections (only at a tiny
// temperature) the in-place draw, exact too, takes over.
int32_t Sampler::draw_by_bucket(std::span<const float> logits, float top, float at_least,
                                ThreadPool* pool) {
  const int last = simd::bucket_of(at_least, top);  // the survivors lie in buckets [0, last]
  if (last == simd::kLastBucket) return draw_above(logits, top, at_least, pool);
  const int64_t n = int64_t(logits.size());
  const double inv_t = 1.0 / params_.temperature, a = inv_t - 1.0;

  // The survivors in bucket b (all its tokens but in the last) to bucket_ids_,
  // gathered_ their logits; returns how many.
  auto survivors_in = [&](int b) {
    const int64_t k = simd::scan_bucket(logits.data(), n, top, b, bucket_ids_.data()).in;
    gathered_.resize(size_t(k));
    int64_t m = 0;
    for (int64_t i = 0; i < k; ++i) {
      const int32_t id = bucket_ids_[size_t(i)];
      if (logits[size_t(id)] < at_least) continue;
      bucket_ids_[size_t(m)] = id;
      gathered_[size_t(m++)] = logits[size_t(id)];
    }
    return m;
  };
  // The last bucket's untempered mass counts its survivors only (top_p's
  // edge bucket is sorted already), so the cut costs no rejections.
  double last_mass = 0;
  if (last == edge_bucket_) {
    for (size_t i = 0; i < edge_.size() && edge_[i] >= at_least; ++i) last_mass += std::exp(double(edge_[i]) - top);
  } else {
    const int64_t m = survivors_in(last);
    last_mass = simd::exp_sum(gathered_.data(), m, top, 1.0);
  }
  // h_b = exp(-a d) at the bucket's near end (a >= 0) or far end, with
  // slack for a float bucket that misses d's range (4e-6 nats at most, see
  // simd::exp_histogram); kMargin covers the rounding of M_b and W_b.
  constexpr double kSlack = 1e-5, kMargin = 1 + 1e-9, kWidth = 1.0 / simd::kBucketsPerNat;
  const double ratio = std::exp(-a * kWidth);
  double h = std::exp(a >= 0 ? a * kSlack : -a * (kWidth + kSlack)) * kMargin, total = 0;
  envelope_.resize(size_t(last + 1));
  for (int b = 0; b <= last; ++b, h *= ratio)
    total += envelope_[size_t(b)] = (b == last ? last_mass : bucket_total_[size_t(b)]) * h;

  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * total;
    int b = 0;
    while (b < last && u >= envelope_[size_t(b)]) u -= envelope_[size_t(b++)];
    const int64_t m = survivors_in(b);
    weights_.resize(size_t(m));
    if (u >= simd::exp_sum(gathered_.data(), m, top, inv_t, weights_.data())) continue;
    for (int64_t i = 0; i < m; ++i)
      if ((u -= weights_[size_t(i)]) < 0) return bucket_ids_[size_t(i)];
    return bucket_ids_[size_t(m - 1)];
  }
  return draw_above(logits, top, at_least, pool);
}

}  // namespace hearth
