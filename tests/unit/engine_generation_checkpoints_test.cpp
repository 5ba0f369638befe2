// The store of cancelled generations kept for resumption: bounded in
// entries and in bytes, oldest out first, and a too-large one not kept.
#include "engine/generation_checkpoints.h"

#include <gtest/gtest.h>

#include "engine/engine.h"

namespace hearth {
namespace {

GenerationCheckpoint checkpoint(size_t prompt_tokens, size_t events, size_t top) {
  GenerationCheckpoint c{Decoding(std::vector<int32_t>(prompt_tokens, 7), SamplingParams{}, StopRules{}), {}};
  TokenEvent ev;
  ev.top.assign(top, {1, -0.5f});
  c.events.assign(events, ev);
  return c;
}

std::vector<int32_t> prompt_of(size_t tokens) { return std::vector<int32_t>(tokens, 7); }

TEST(GenerationCheckpoints, TheOldestGoPastTheByteBudget) {
  GenerationCheckpoints store(64, 400000);
  for (uint64_t key = 0; key < 20; ++key) store.save(key, checkpoint(10000, 0, 0));  // 40 KB each
  EXPECT_LE(store.bytes(), 400000u);
  EXPECT_GE(store.entries(), 8);
  EXPECT_LT(store.entries(), 10);
  EXPECT_FALSE(store.take(0, prompt_of(10000)));
  EXPECT_TRUE(store.take(19, prompt_of(10000)));
}

TEST(GenerationCheckpoints, EventsWithTopLogprobsCount) {
  GenerationCheckpoints store(64, 1 << 20);
  store.save(1, checkpoint(10, 2000, 20));  // 2000 events of 20 alternatives: over 256 KB
  EXPECT_EQ(store.entries(), 0);
  EXPECT_FALSE(store.take(1, prompt_of(10)));
  store.save(2, checkpoint(10, 200, 20));
  EXPECT_EQ(store.entries(), 1);
  EXPECT_GT(store.bytes(), 200u * 20 * 8);
}

TEST(GenerationCheckpoints, SavingAKeyAgainReplacesIt) {
  GenerationCheckpoints store(2);
  store.save(1, checkpoint(4, 1, 0));
  store.save(1, checkpoint(8, 1, 0));
  EXPECT_EQ(store.entries(), 1);
  auto c = store.take(1, prompt_of(8));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->decoding.history().size(), 8u);
  EXPECT_EQ(store.bytes(), 0u);
}

// Another request whose key collides finds nothing, and leaves the
// checkpoint to its own; only a take counts as a resume.
TEST(GenerationCheckpoints, ATakeNeedsTheSamePrompt) {
  GenerationCheckpoints store;
  store.save(1, checkpoint(4, 1, 0));
  EXPECT_FALSE(store.take(1, prompt_of(5)));
  EXPECT_EQ(store.entries(), 1);
  EXPECT_EQ(store.resumed(), 0);
  EXPECT_TRUE(store.take(1, prompt_of(4)));
  EXPECT_EQ(store.resumed(), 1);
  EXPECT_EQ(store.saved(), 1);
}

}  // namespace
}  // namespace hearth
