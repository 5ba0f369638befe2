// StepTiming: the prompt tokens a step may carry beside its decode rows to
// take about a target time, from the steps measured before.
#include "engine/step_timing.h"

#include <gtest/gtest.h>

namespace hearth {
namespace {

TEST(StepTiming, BeforeAnyPromptStepTheCeilingHolds) {
  StepTiming t;
  EXPECT_EQ(t.prompt_budget(0.5, 32, 512), 512);
  t.record(0.030, 0);  // decode rows alone say nothing of a prompt token's cost
  EXPECT_EQ(t.prompt_budget(0.5, 32, 512), 512);
}

// Times in binary fractions (1/32 s, 1/256 s a token), so that the
// arithmetic is exact and the budgets whole.
TEST(StepTiming, TheBudgetFillsWhatTheTargetLeavesBesideTheDecodeRows) {
  StepTiming t;
  t.record(1.0 / 32, 0);
  t.record(1.0 / 32 + 512.0 / 256, 512);
  EXPECT_EQ(t.prompt_budget(0.5, 32, 512), 120);  // (0.5 - 1/32) * 256
  EXPECT_EQ(t.prompt_budget(10, 32, 512), 512);   // at most the ceiling
  EXPECT_EQ(t.prompt_budget(0.01, 32, 512), 32);  // at least the floor, even below the decode rows' time
  EXPECT_EQ(t.prompt_budget(0.01, 32, 16), 16);   // a ceiling below the floor wins
}

TEST(StepTiming, AveragesFollowAChangeOfLoadGradually) {
  StepTiming t;
  t.record(1.0 / 32, 0);
  t.record(1.0 / 32 + 100 * (1.0 / 256), 100);
  t.record(1.0 / 32 + 100 * (3.0 / 256), 100);  // prompt tokens got dearer (a longer context)
  // A quarter of the way from 1/256 s to 3/256 s: 1.5/256 s a token.
  EXPECT_EQ(t.prompt_budget(1.0 / 32 + 60 * (1.5 / 256), 1, 512), 60);
  for (int i = 0; i < 40; ++i) t.record(1.0 / 32 + 100 * (3.0 / 256), 100);
  EXPECT_EQ(t.prompt_budget(1.0 / 32 + 60 * (3.0 / 256), 1, 512), 60);
}

// A flow of prompts leaves no decode-only step to measure the fixed part
// on: steps with prompt tokens pull a fixed part that grew too high (one
// slow step, or more streams than now) back down, and one slow step counts
// as at most 4 times the average.
TEST(StepTiming, AFixedPartTooHighComesDownWithoutDecodeOnlySteps) {
  StepTiming t;
  t.record(1.0 / 32, 0);
  t.record(1.0 / 32 + 64.0 / 256, 64);  // 1/256 s a prompt token
  t.record(10, 0);                      // descheduled for 10 s: counts as 4/32 s
  EXPECT_EQ(t.prompt_budget(0.125, 1, 512), 18);  // the fixed part (1/32 + 3/32 / 4 = 7/128 s) leaves 18
  for (int i = 0; i < 60; ++i) t.record(1.0 / 32 + 32.0 / 256, 32);  // the fixed part is 1/32 s again
  EXPECT_GE(t.prompt_budget(0.125, 1, 512), 23);  // (1/8 - 1/32) * 256 = 24, give or take the averages
  EXPECT_EQ(t.prompt_budget(1e9, 32, 512), 512);
}

}  // namespace
}  // namespace hearth
