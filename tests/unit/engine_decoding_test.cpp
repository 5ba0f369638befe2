// Decoding: what ends a sequence's generation, checked on hand-made logits
// where greedy sampling picks a known token.
#include "engine/decoding.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hearth
