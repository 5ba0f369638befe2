// Decoding: what ends a sequence's generation, checked on hand-made logits
// where greedy sampling picks a known token.
#include "engine/decoding.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace hearth {
namespace {

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0;
  return p;
}

std::vector<float> logits_picking(int32_t token, int vocab = 8) {
  std::vector<float> l(size_t(vocab), 0.0f);
  l[size_t(token)] = 5.0f;
  return l;
}

TEST(Decoding, AStopTokenEndsWithStop) {
  const std::vector<int32_t> prompt = {1, 2};
  Decoding d(prompt, greedy(), {{7}, -1, 100});
  EXPECT_EQ(d.next(logits_picking(3)), 3);
  EXPECT_FALSE(d.finished());
  EXPECT_EQ(d.next(logits_picking(7)), 7);
  EXPECT_EQ(d.finished(), FinishReason::Stop);
  EXPECT_EQ(d.generated_tokens(), 2);
  EXPECT_EQ(std::vector<int32_t>(d.history().begin(), d.history().end()),
            (std::vector<int32_t>{1, 2, 3, 7}));
}

TEST(Decoding, TheTokenLimitEndsWithLength) {
  const std::vector<int32_t> prompt = {1};
  Decoding d(prompt, greedy(), {{7}, 2, 100});
  d.next(logits_picking(3));
  EXPECT_FALSE(d.finished());
  d.next(logits_picking(4));
  EXPECT_EQ(d.finished(), FinishReason::Length);
}

TEST(Decoding, AFullContextEndsWithLength) {
  const std::vector<int32_t> prompt = {1, 2, 3};
  Decoding d(prompt, greedy(), {{}, -1, 5});  // room for 2 generated tokens
  d.next(logits_picking(3));
  EXPECT_FALSE(d.finished());
  d.next(logits_picking(3));
  EXPECT_EQ(d.finished(), FinishReason::Length);
}

TEST(Decoding, PenaltiesSeeThePromptAndTheOutput) {
  // Token 2 leads by a little; a strong repetition penalty on the history
  // (the prompt holds 2) moves greedy to token 5, and then away from 5.
  SamplingParams p = greedy();
  p.repetition_penalty = 10.0f;
  const std::vector<int32_t> prompt = {2};
  Decoding d(prompt, p, {{}, -1, 100});
  std::vector<float> l = {0, 0, 2.0f, 0, 0, 1.5f, 1.0f, 0};
  EXPECT_EQ(d.next(l), 5);
  EXPECT_EQ(d.next(l), 6);
}

// Decoding samples a row in place when nothing changes it (no grammar, no
// logits processor) and on a copy otherwise: either way it must draw what
// Sampler::sample draws on a copy with the same seed and history, and leave
// the caller's row as it was. Rows of 5000 (a survivor list) and 150k flat
// logits (the draw in place) under each filter.
TEST(Decoding, SamplesLikeTheSamplerAndLeavesTheRowAsItWas) {
  std::vector<SamplingParams> settings(6);
  settings[0].temperature = 0.8f;
  settings[1].top_p = 0.95f, settings[1].temperature = 0.8f;
  settings[2].min_p = 0.05f;
  settings[3].top_k = 20;
  settings[4].xtc_probability = 0.5f, settings[4].xtc_threshold = 0.05f;
  settings[5].top_p = 0.9f, settings[5].repetition_penalty = 1.3f;  // a processor: the copy
  for (int vocab : {5000, 150000})
    for (size_t c = 0; c < settings.size(); ++c) {
      SCOPED_TRACE("vocab " + std::to_string(vocab) + ", setting " + std::to_string(c));
      SamplingParams p = settings[c];
      p.seed = 9;
      const std::vector<int32_t> prompt = {1, 2, 3};
      Decoding decoding(prompt, p, {{}, -1, 1000});
      Sampler sampler(p);
      std::vector<int32_t> history = prompt;
      std::mt19937 gen(5);
      std::normal_distribution<float> normal(0.0f, vocab > 10000 ? 0.5f : 2.5f);
      for (int step = 0; step < 6; ++step) {
        std::vector<float> row(static_cast<size_t>(vocab));
        for (float& v : row) v = normal(gen);
        const std::vector<float> before = row;
        std::vector<float> copy = row;
        const int32_t expect = sampler.sample(copy, history);
        ASSERT_EQ(decoding.next(row), expect) << "step " << step;
        ASSERT_EQ(std::memcmp(row.data(), before.data(), row.size() * sizeof(float)), 0);
        history.push_back(expect);
      }
    }
}

}  // namespace
}  // namespace hearth
