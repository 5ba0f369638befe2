// token_logprobs against a plain double-precision log-softmax and a full
// stable sort of the row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "engine/logprobs.h"

namespace hearth {
namespace {

TEST(TokenLogprobs, MatchesAPlainLogSoftmaxAndStableSort) {
  std::mt19937 gen(11);
  for (int vocab : {5, 1000, 151936}) {
    for (int k : {0, 1, 3, 20}) {
      SCOPED_TRACE("vocab " + std::to_string(vocab) + " k " + std::to_string(k));
      std::normal_distribution<float> normal(0.0f, 2.0f);
      std::vector<float> logits(static_cast<size_t>(vocab));
      for (auto& v : logits) v = normal(gen);
      // Ties at the top, which the lower id must win, and a refused token.
      logits[size_t(vocab - 1)] = logits[0] = 9.0f;
      if (vocab > 2) logits[1] = -std::numeric_limits<float>::infinity();
      double max = *std::max_element(logits.begin(), logits.end()), sum = 0;
      for (float l : logits) sum += std::exp(double(l) - max);
      const double lse = max + std::log(sum);
      std::vector<int32_t> order(static_cast<size_t>(vocab));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });

      std::vector<std::pair<int32_t, float>> top;
      const int32_t token = vocab / 2;
      EXPECT_NEAR(token_logprobs(logits, token, k, top), logits[size_t(token)] - lse, 1e-5);
      ASSERT_EQ(int(top.size()), std::min(k, vocab));
      for (size_t i = 0; i < top.size(); ++i) {
        EXPECT_EQ(top[i].first, order[i]) << "rank " << i;
        const double want = logits[size_t(order[i])] - lse;
        if (std::isinf(want))
          EXPECT_EQ(top[i].second, want) << "rank " << i;
        else
          EXPECT_NEAR(top[i].second, want, 1e-5) << "rank " << i;
      }
    }
  }
}

TEST(TokenLogprobs, NaNIsNeverAmongTheTop) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> logits = {nan, 1.0f, nan, 3.0f, 2.0f};
  std::vector<std::pair<int32_t, float>> top;
  token_logprobs(logits, 3, 2, top);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].first, 3);
  EXPECT_EQ(top[1].first, 4);
}

}  // namespace
}  // namespace hearth
