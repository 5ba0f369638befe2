// The sampler against hand-computed values and against a plain, unoptimized
// reimplementation of mlx-lm's sampler chain (mlx_lm/sample_utils.py) that
// works on whole-vocabulary masks and consumes random numbers in the same
// order, so both must pick the same token for the same seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "core/simd_sampling.h"
#include "core/thread_pool.h"
#include "engine/sampler.h"

namespace hearth {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> processed(const SamplingParams& p, std::vector<float> logits, std::vector<int32_t> history) {
  Sampler s(p);
  s.process(logits, history);
  return logits;
}

TEST(Sampler, DefaultsKeepGreedyBehaviour) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  std::vector<float> logits = {0.5f, 3.0f, -1.0f, 2.9f};
  EXPECT_EQ(s.sample(logits), 1);
  std::vector<int32_t> history = {1, 1, 1};
  logits = {0.5f, 3.0f, -1.0f, 2.9f};
  EXPECT_EQ(s.sample(logits, history), 1);  // no penalty configured: history is ignored
}

// Greedy's vector argmax against a plain loop: the first of the largest
// values, NaN never; on rows ending in every lane position, with the maximum
// tied in several lanes, in the tail, first or last, and rows of NaN and -inf.
TEST(Sampler, ArgmaxIsTheFirstLargestLogit) {
  auto plain = [](const std::vector<float>& x) {
    int32_t best = 0;
    float top = -kInf;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] > top) top = x[i], best = int32_t(i);
    return best;
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  int checked = 0;
  for (size_t n : {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 67, 1000, 151936})
    for (int kind = 0; kind < 7; ++kind) {
      std::vector<float> x(n);
      for (float& v : x) v = kind == 5 ? std::nanf("") : kind == 6 ? -kInf : normal(rng);
      if (n > 0 && kind >= 1 && kind <= 4) {
        // The maximum at several places: random ones, the first, the last.
        const size_t spots[] = {rng() % n, rng() % n, kind == 2 ? 0 : n - 1, rng() % n};
        for (size_t s : spots) x[s] = 9.0f;
        if (kind == 3) x[rng() % n] = std::nanf("");
        if (kind == 4) x[rng() % n] = kInf;
      }
      EXPECT_EQ(Sampler::argmax(x), plain(x)) << "n " << n << " kind " << kind;
      ++checked;
    }
  EXPECT_EQ(checked, 15 * 7);
}

// Top-p's vector passes against plain loops over bucket_of: the histogram's
// masses, and one bucket's logits (in order) with the count before it, for
// every bucket a row reaches, the far one included, on rows with a vector
// tail, -inf and NaN entries.
TEST(Sampler, TopPHistogramPassesMatchPlainLoops) {
  constexpr int kBuckets = simd::kBuckets, kLast = simd::kLastBucket;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 12.0f);
  int scanned = 0;
  for (int64_t n : {1, 7, 16, 37, 1000, 4099})
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = normal(rng);
      if (kind >= 1) x[rng() % n] = -kInf;  // at a lane or in the tail
      if (kind == 2) x[rng() % n] = std::nanf("");
      if (n == 1) x[0] = 1.5f;  // a row must have a finite top
      float top = -kInf;
      for (float v : x) top = std::max(top, v);  // NaN never is the max
      std::vector<double> mass(kBuckets, 7.0), plain_mass(kBuckets);  // overwritten
      double plain_total = 0;
      for (float v : x) {
        const double e = std::exp(double(v) - double(top));
        plain_mass[size_t(simd::bucket_of(v, top))] += e;
        plain_total += e;
      }
      const double total = simd::exp_histogram(x.data(), n, top, mass.data());
      if (kind < 2) {  // a NaN's mass is whatever the vector exp makes of it
        EXPECT_NEAR(total, plain_total, 1e-13 * plain_total);
        for (int b = 0; b < kBuckets; ++b) ASSERT_NEAR(mass[b], plain_mass[b], 1e-13 * plain_total) << b;
      }
      std::set<int> buckets = {0, kLast};
      for (float v : x) buckets.insert(simd::bucket_of(v, top));
      for (int b : buckets) {
        std::vector<int32_t> in, plain_in;
        int64_t plain_before = 0;
        for (int64_t i = 0; i < n; ++i) {
          const int vb = simd::bucket_of(x[size_t(i)], top);
          plain_before += vb < b;
          if (vb == b) plain_in.push_back(int32_t(i));
        }
        in.resize(size_t(n));
        const auto [before, count] = simd::scan_bucket(x.data(), n, top, b, in.data());
        in.resize(size_t(count));
        EXPECT_EQ(before, plain_before) << "n " << n << " bucket " << b;
        EXPECT_EQ(in, plain_in) << "n " << n << " bucket " << b;
        ++scanned;
      }
    }
  EXPECT_GT(scanned, 6 * 3 * 2);
}

TEST(Sampler, LogitBiasAdds) {
  SamplingParams p;
  p.logit_bias = {{0, 5.0f}, {3, -100.0f}, {99, 1.0f}};  // out-of-vocabulary ids are ignored
  auto out = processed(p, {1, 2, 3, 4}, {});
  EXPECT_FLOAT_EQ(out[0], 6);
  EXPECT_FLOAT_EQ(out[1], 2);
  EXPECT_FLOAT_EQ(out[2], 3);
  EXPECT_FLOAT_EQ(out[3], -96);
  p.temperature = 0;
  Sampler s(p);
  std::vector<float> logits = {1, 2, 3, 4};
  EXPECT_EQ(s.sample(logits), 0);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveMultipliesNegativeOncePerToken) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  auto out = processed(p, {2, -2, 1, 0.5}, {0, 1, 0, 0});
  EXPECT_FLOAT_EQ(out[0], 1);    // 2 / 2, once although it occurs three times
  EXPECT_FLOAT_EQ(out[1], -4);   // -2 * 2
  EXPECT_FLOAT_EQ(out[2], 1);    // untouched
  EXPECT_FLOAT_EQ(out[3], 0.5);
}

TEST(Sampler, PenaltyWindowsLookAtTheLastTokensOnly) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.repetition_context_size = 2;
  auto out = processed(p, {4, 4, 4, 4}, {0, 1, 2, 3});
  EXPECT_EQ(out, (std::vector<float>{4, 4, 2, 2}));

  SamplingParams q;
  q.presence_penalty = 1.0f;
  q.presence_context_size = 3;
  q.frequency_penalty = 0.5f;
  q.frequency_context_size = 4;
  // presence window {1, 1, 2}: 1 and 2 lose 1 each; frequency window {0, 1, 1, 2}.
  out = processed(q, {0, 0, 0, 0}, {3, 0, 1, 1, 2});
  EXPECT_FLOAT_EQ(out[0], -0.5f);
  EXPECT_FLOAT_EQ(out[1], -1.0f - 1.0f);
  EXPECT_FLOAT_EQ(out[2], -1.0f - 0.5f);
  EXPECT_FLOAT_EQ(out[3], 0.0f);
}

TEST(Sampler, ProcessorsRunInMlxOrderAndBeforeGreedy) {
  SamplingParams p;
  p.logit_bias = {{0, 1.0f}};
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.25f;
  // bias first: 1 + 1 = 2; then /2 = 1; then -0.25.
  auto out = processed(p, {1, 0}, {0});
  EXPECT_FLOAT_EQ(out[0], 0.75f);

  SamplingParams g;
  g.temperature = 0;
  g.repetition_penalty = 2.0f;
  Sampler s(g);
  std::vector<float> logits = {3.0f, 2.5f};
  std::vector<int32_t> history = {0};
  EXPECT_EQ(s.sample(logits, history), 1);  // 3 / 2 < 2.5
}

TEST(Sampler, EmptyHistoryMeansNoPenalty) {
  SamplingParams p;
  p.repetition_penalty = 3.0f;
  p.frequency_penalty = 1.0f;
  EXPECT_EQ(processed(p, {1, -1}, {}), (std::vector<float>{1, -1}));
}

// ---- A plain reimplementation of the whole chain ----

int32_t reference_sample(const SamplingParams& p, std::vector<float> l, const std::vector<int32_t>& hist,
                         std::mt19937_64& rng) {
  const int n = int(l.size());
  for (auto [id, b] : p.logit_bias) l[id] += b;
  auto tail = [&](int size) {
    return std::vector<int32_t>(hist.end() - std::min<ptrdiff_t>(size, ptrdiff_t(hist.size())), hist.end());
  };
  if (!hist.empty()) {
    if (p.repetition_penalty != 0) {
      auto w = tail(p.repetition_context_size);
      for (int32_t t : std::set<int32_t>(w.begin(), w.end()))
        l[t] = l[t] < 0 ? l[t] * p.repetition_penalty : l[t] / p.repetition_penalty;
    }
    if (p.presence_penalty != 0) {
      auto w = tail(p.presence_context_size);
      for (int32_t t : std::set<int32_t>(w.begin(), w.end())) l[t] -= p.presence_penalty;
    }
    if (p.frequency_penalty != 0)
      for (int32_t t : tail(p.frequency_context_size)) l[t] -= p.frequency_penalty;
  }
  if (p.temperature == 0) return int32_t(std::max_element(l.begin(), l.end()) - l.begin());

  // log-probabilities, then masks set entries to -inf.
  double mx = *std::max_element(l.begin(), l.end()), z = 0;
  for (float v : l) z += std::exp(double(v) - mx);
  std::vector<double> lp(n);
  for (int i = 0; i < n; ++i) lp[i] = double(l[i]) - mx - std::log(z);

  if (p.top_p > 0 && p.top_p < 1) {  // ascending cumulative mass > 1 - top_p survives
    std::vector<int> asc(n);
    std::iota(asc.begin(), asc.end(), 0);
    std::sort(asc.begin(), asc.end(), [&](int a, int b) { return lp[a] < lp[b]; });
    double cum = 0;
    std::vector<bool> keep(n);
    for (int i : asc) {
      cum += std::exp(lp[i]);
      keep[i] = cum > 1 - double(p.top_p);
    }
    for (int i = 0; i < n; ++i)
      if (!keep[i]) lp[i] = -kInf;
  }
  if (p.min_p != 0) {
    double top = *std::max_element(lp.begin(), lp.end());
    for (int i = 0; i < n; ++i)
      if (lp[i] < top + std::log(double(p.min_p))) lp[i] = -kInf;
  }
  if (p.xtc_probability > 0) {
    double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    if (!(u > p.xtc_probability)) {
      double zz = 0;
      for (double v : lp) zz += std::exp(v);
      double lowest = kInf;
      for (double v : lp)
        if (std::exp(v) / zz > p.xtc_threshold) lowest = std::min(lowest, std::exp(v) / zz);
      std::vector<double> out = lp;
      for (int i = 0; i < n; ++i) {
        bool special = std::count(p.xtc_special_tokens.begin(), p.xtc_special_tokens.end(), i) > 0;
        if (std::exp(lp[i]) / zz > lowest && !special) out[i] = -kInf;
      }
      lp = out;
    }
  }
  int survivors = 0;
  for (double v : lp) survivors += v > -kInf;
  const bool top_k_cuts = p.top_k > 0 && p.top_k < survivors;
  if (p.top_k > 0 && p.top_k < n) {
    std::vector<int> desc(n);
    std::iota(desc.begin(), desc.end(), 0);
    std::sort(desc.begin(), desc.end(), [&](int a, int b) { return lp[a] > lp[b]; });
    for (int r = p.top_k; r < n; ++r) lp[desc[r]] = -kInf;
  }
  // With top_p (and no XTC nor top_k cut), rejection from top_p's
  // histogram: a bucket of the row (simd::bucket_of) in proportion to its
  // untempered mass (the last survivors' bucket: its survivors' mass) times
  // the bound of exp(-(1/T - 1) d), d the distance below the top, over it,
  // widened by 1e-5 nats; accepted with probability (its survivors'
  // tempered mass) / that, then the inverse CDF inside it, in order of id,
  // with the same number. After four rejections, the plain draw below.
  if (p.top_p > 0 && p.top_p < 1 && p.xtc_probability == 0 && !top_k_cuts) {
    const float top = *std::max_element(l.begin(), l.end());
    float cut = kInf;
    for (int i = 0; i < n; ++i)
      if (lp[i] > -kInf) cut = std::min(cut, l[i]);
    const int last = simd::bucket_of(cut, top);
    const double a = 1.0 / p.temperature - 1.0, width = 1.0 / simd::kBucketsPerNat;
    std::vector<double> bound(size_t(last + 1));
    for (int i = 0; i < n; ++i) {
      const int b = simd::bucket_of(l[i], top);
      if (b < last || (b == last && lp[i] > -kInf)) bound[b] += std::exp(double(l[i]) - top);
    }
    double total = 0;
    for (int b = 0; b <= last; ++b)
      total += bound[b] *= std::exp(-a * (a >= 0 ? b * width - 1e-5 : (b + 1) * width + 1e-5)) * (1 + 1e-9);
    for (int round = 0; last < simd::kLastBucket && round < 4; ++round) {
      double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng) * total;
      int b = 0;
      while (b < last && u >= bound[b]) u -= bound[b++];
      std::vector<int> in;
      double mass = 0;
      for (int i = 0; i < n; ++i)
        if (lp[i] > -kInf && simd::bucket_of(l[i], top) == b) {
          in.push_back(i);
          mass += std::exp((double(l[i]) - top) / p.temperature);
        }
      if (u >= mass) continue;
      for (int i : in)
        if ((u -= std::exp((double(l[i]) - top) / p.temperature)) < 0) return i;
      return in.back();
    }
  }
  // Inverse-CDF draw over the survivors in order of token id (the order hearth uses).
  std::vector<int> ids;
  for (int i = 0; i < n; ++i)
    if (lp[i] > -kInf) ids.push_back(i);
  double best = -kInf;
  for (int i : ids) best = std::max(best, lp[i]);
  std::vector<double> w;
  double sum = 0;
  for (int i : ids) sum += w.emplace_back(std::exp((lp[i] - best) / p.temperature));
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng) * sum;
  for (size_t i = 0; i < ids.size(); ++i)
    if ((u -= w[i]) < 0) return ids[i];
  return ids.back();
}

struct ChainCase {
  const char* name;
  SamplingParams params;
};

class SamplerChain : public ::testing::TestWithParam<int> {};

std::vector<ChainCase> chain_cases() {
  std::vector<ChainCase> cases;
  auto add = [&](const char* name, auto set) {
    SamplingParams p;
    p.seed = 42;
    set(p);
    cases.push_back({name, p});
  };
  add("plain", [](SamplingParams& p) { p.temperature = 0.8f; });
  add("top_k", [](SamplingParams& p) { p.top_k = 5; });
  add("top_p", [](SamplingParams& p) { p.top_p = 0.7f; p.temperature = 1.3f; });
  add("top_p cold", [](SamplingParams& p) { p.top_p = 0.9f; p.temperature = 0.03f; });
  add("min_p", [](SamplingParams& p) { p.min_p = 0.05f; });
  add("min_p inside top_p", [](SamplingParams& p) { p.top_p = 0.99f; p.min_p = 0.3f; p.temperature = 0.9f; });
  add("all filters", [](SamplingParams& p) { p.top_p = 0.9f; p.min_p = 0.02f; p.top_k = 8; p.temperature = 0.7f; });
  add("xtc", [](SamplingParams& p) { p.xtc_probability = 0.5f; p.xtc_threshold = 0.05f; });
  add("xtc always + specials", [](SamplingParams& p) {
    p.xtc_probability = 1.0f; p.xtc_threshold = 0.02f; p.xtc_special_tokens = {0, 1, 2};
  });
  add("xtc + top_k + top_p", [](SamplingParams& p) {
    p.xtc_probability = 0.7f; p.xtc_threshold = 0.03f; p.top_k = 4; p.top_p = 0.95f;
  });
  add("penalties", [](SamplingParams& p) {
    p.repetition_penalty = 1.3f; p.repetition_context_size = 7;
    p.presence_penalty = 0.4f; p.presence_context_size = 5;
    p.frequency_penalty = 0.3f; p.frequency_context_size = 12;
    p.logit_bias = {{3, 2.0f}, {4, -1.5f}};
  });
  add("greedy + penalties", [](SamplingParams& p) {
    p.temperature = 0; p.repetition_penalty = 1.5f; p.frequency_penalty = 0.7f;
  });
  return cases;
}

// 64 candidates; 5000, where the sampler keeps a list of the few it draws
// from; a flat 150k vocabulary, where top_p keeps most of it (the histogram
// cut, the draw in place); and the same with two tokens in three refused
// (-inf), as a grammar's mask leaves them. Every other step spreads the
// sampler's passes over a pool of two threads: the draw must not change.
TEST(Sampler, MatchesPlainReimplementation) {
  ThreadPool pool(2);
  struct Size { int vocab, steps; float spread; bool masked; };
  for (auto [vocab, steps, spread, masked] :
       {Size{64, 400, 2.5f, false}, {5000, 120, 2.5f, false}, {150000, 6, 0.5f, false},
        {150000, 6, 0.5f, true}})
  for (const auto& c : chain_cases()) {
    SCOPED_TRACE(c.name + std::string(" vocab ") + std::to_string(vocab) + (masked ? " masked" : ""));
    Sampler sampler(c.params);
    std::mt19937_64 ref_rng(*c.params.seed);
    std::mt19937 gen(7);
    std::normal_distribution<float> normal(0.0f, spread);
    std::vector<int32_t> history;
    for (int step = 0; step < steps; ++step) {
      std::vector<float> logits(static_cast<size_t>(vocab));
      for (auto& v : logits) v = normal(gen);
      if (masked)
        for (size_t i = 0; i < logits.size(); ++i)
          if (i % 3 != 1) logits[i] = -kInf;
      int32_t expect = reference_sample(c.params, logits, history, ref_rng);
      int32_t got = sampler.sample(logits, history, step % 2 ? &pool : nullptr);
      ASSERT_EQ(got, expect) << "step " << step;
      history.push_back(got);
    }
  }
}

TEST(Sampler, XtcDropsTopChoicesButKeepsTheLeastLikelyAboveThreshold) {
  SamplingParams p;
  p.temperature = 1e-4f;  // nearly greedy over what XTC leaves
  p.xtc_probability = 1.0f;
  p.xtc_threshold = 0.1f;
  // probabilities ~ 0.5, 0.3, 0.15, 0.05: above 0.1 are tokens 0, 1, 2; the
  // least likely of them (2) stays, 0 and 1 go.
  std::vector<float> base = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  auto logits = base;
  EXPECT_EQ(Sampler(p).sample(logits), 2);
  // A special token is never dropped.
  p.xtc_special_tokens = {0};
  logits = base;
  EXPECT_EQ(Sampler(p).sample(logits), 0);
  // With a single token above the threshold nothing changes.
  p.xtc_special_tokens = {};
  p.xtc_threshold = 0.4f;
  logits = base;
  EXPECT_EQ(Sampler(p).sample(logits), 0);
}

// `draws` tokens from a sampler of p, each row normal(0, spread) logits over
// `vocab` tokens from a generator seeded with `rows`, each draw penalized
// by the ones before; release_every > 0: release_scratch() after every
// release_every-th draw.
std::vector<int32_t> draw_sequence(const SamplingParams& p, int draws, int vocab, float spread, uint32_t rows,
                                   int release_every = 0) {
  Sampler s(p);
  std::mt19937 gen(rows);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<int32_t> out;
  for (int i = 0; i < draws; ++i) {
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (auto& v : logits) v = normal(gen);
    out.push_back(s.sample(logits, out));
    if (release_every > 0 && i % release_every == 0) s.release_scratch();
  }
  return out;
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams p;
  p.seed = 1234;
  p.xtc_probability = 0.3f;
  EXPECT_EQ(draw_sequence(p, 100, 32, 1.0f, 3), draw_sequence(p, 100, 32, 1.0f, 3));
}

// Releasing the scratch (a kept generation checkpoint's sampler) keeps the
// parameters and the random state: the draws go on as they would have.
TEST(Sampler, ReleasingScratchKeepsTheSequence) {
  SamplingParams p;
  p.seed = 77;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  p.repetition_penalty = 1.1f;
  EXPECT_EQ(draw_sequence(p, 60, 5000, 2.0f, 5), draw_sequence(p, 60, 5000, 2.0f, 5, 3));
}

TEST(Sampler, FrequenciesFollowTheTemperedDistribution) {
  SamplingParams p;
  p.seed = 9;
  p.temperature = 0.5f;
  Sampler s(p);
  const std::vector<float> base = {1.0f, 0.5f, 0.0f, -1.0f};
  std::vector<double> expect(4);
  double z = 0;
  for (int i = 0; i < 4; ++i) z += expect[i] = std::exp(base[i] / 0.5);
  std::vector<int> count(4);
  const int draws = 40000;
  for (int i = 0; i < draws; ++i) {
    auto logits = base;
    ++count[s.sample(logits)];
  }
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(count[i] / double(draws), expect[i] / z, 0.01) << i;
}

// The top_p draw's frequencies against the exact distribution (the
// survivors' tempered probabilities), by a chi-square test: a bucket drawn
// in proportion to its bound alone, without the acceptance step, is off by
// up to exp(|1/T - 1| / 64) between buckets, several percent at the cold
// temperature. Logits 0.005 nats apart keep about three tokens to a bucket.
TEST(Sampler, TopPDrawFollowsTheTemperedDistribution) {
  struct Case { float temperature, top_p, min_p; };
  for (auto [temperature, top_p, min_p] :
       {Case{0.8f, 0.9f, 0.0f}, {2.5f, 0.95f, 0.0f}, {0.05f, 0.99f, 0.0f}, {0.1f, 0.97f, 0.5f}}) {
    SCOPED_TRACE("temperature " + std::to_string(temperature) + " top_p " + std::to_string(top_p));
    const int n = 400;
    std::vector<float> base(n);
    for (int i = 0; i < n; ++i) base[size_t(i)] = -0.005f * float((i * 37) % n);  // shuffled
    SamplingParams p;
    p.seed = 5;
    p.temperature = temperature, p.top_p = top_p, p.min_p = min_p;
    // The survivors as the reference above finds them, then their tempered probabilities.
    std::vector<double> expect(n);
    {
      std::vector<int> asc(n);
      std::iota(asc.begin(), asc.end(), 0);
      std::sort(asc.begin(), asc.end(), [&](int a, int b) { return base[a] < base[b]; });
      double z = 0, cum = 0;
      for (float v : base) z += std::exp(double(v));
      for (int i : asc) {
        cum += std::exp(double(base[i])) / z;
        const bool top_p_keeps = cum > 1 - double(top_p);
        const bool min_p_keeps = double(base[i]) >= std::log(double(min_p));  // the top logit is 0
        expect[i] = top_p_keeps && min_p_keeps ? std::exp(double(base[i]) / temperature) : 0;
      }
      const double sum = std::accumulate(expect.begin(), expect.end(), 0.0);
      for (double& e : expect) e /= sum;
    }
    Sampler sampler(p);
    const int draws = 200000;
    std::vector<int> count(n);
    for (int d = 0; d < draws; ++d) {
      auto logits = base;
      ++count[size_t(sampler.sample(logits))];
    }
    // Cells of at least 20 expected draws (the rarest tokens pooled).
    double chi2 = 0, pooled_expect = 0, pooled_count = 0;
    int cells = 0;
    for (int i = 0; i < n; ++i) {
      if (expect[i] == 0) {
        ASSERT_EQ(count[i], 0) << "token " << i << " did not survive the filters";
        continue;
      }
      const double e = expect[i] * draws;
      if (e < 20) {
        pooled_expect += e, pooled_count += count[i];
        continue;
      }
      chi2 += (count[i] - e) * (count[i] - e) / e, ++cells;
    }
    if (pooled_expect > 0) chi2 += (pooled_count - pooled_expect) * (pooled_count - pooled_expect) / pooled_expect, ++cells;
    ASSERT_GT(cells, 10);
    // Wilson-Hilferty: chi2 / df is about normal after a cube root.
    const double df = cells - 1, v = 2.0 / (9 * df);
    const double z = (std::cbrt(chi2 / df) - (1 - v)) / std::sqrt(v);
    EXPECT_LT(z, 4.5) << "z " << z << " chi2 " << chi2 << " over " << cells << " cells";
  }
}

}  // namespace
}  // namespace hearth
