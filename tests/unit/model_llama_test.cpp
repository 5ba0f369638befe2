// The Llama forward on the bundled stories260k model: its documented greedy
// opening, and that batching (whole-prompt prefill, ragged multi-sequence
// batches) gives the same logits as feeding tokens one at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "model/llama.h"

namespace hearth {
namespace {

const std::filesystem::path kModel =
    std::filesystem::path(HEARTH_SOURCE_DIR) / "models/stories260k";

struct Fixture {
  std::unique_ptr<LlamaModel> model = LlamaModel::load(kModel);
  ThreadPool pool{2};
  KvCache kv{model->kv_shape(), 64};
  std::vector<float> logits;

  std::vector<float> run(int seq, std::vector<int32_t> tokens, bool all = false) {
    EXPECT_TRUE(kv.reserve(seq, kv.length(seq) + int64_t(tokens.size())));
    BatchRow row{seq, tokens, all};
    model->forward(pool, kv, std::span(&row, 1), logits);
    return logits;
  }
};

int32_t argmax(const float* p, int n) {
  return int32_t(std::max_element(p, p + n) - p);
}

TEST(Llama, GreedyOpeningFromBos) {
  Fixture f;
  int seq = f.kv.create_sequence();
  std::vector<int32_t> out;
  int32_t token = 1;  // <s>
  for (int i = 0; i < 4; ++i) {
    auto logits = f.run(seq, {token});
    token = argmax(logits.data(), 512);
    out.push_back(token);
  }
  // "Once upon a time" per the model's README: ▁Once ▁upon ▁a ▁time.
  EXPECT_EQ(out, (std::vector<int32_t>{403, 407, 261, 378}));
}

TEST(Llama, PrefillEqualsTokenByToken) {
  Fixture f;
  std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 29, 300, 100, 7};
  int a = f.kv.create_sequence(), b = f.kv.create_sequence();
  auto batched = f.run(a, prompt, true);
  ASSERT_EQ(batched.size(), prompt.size() * 512);
  for (size_t i = 0; i < prompt.size(); ++i) {
    auto one = f.run(b, {prompt[i]});
    for (int v = 0; v < 512; ++v) ASSERT_NEAR(batched[i * 512 + v], one[v], 1e-4) << "pos " << i;
  }
  EXPECT_EQ(f.kv.length(a), int64_t(prompt.size()));
}

TEST(Llama, RaggedBatchEqualsSeparateRuns) {
  Fixture f;
  std::vector<int32_t> p1 = {1, 403, 407}, p2 = {1, 261, 378, 29, 300}, p3 = {1};
  // Separately.
  std::vector<std::vector<float>> want;
  for (auto* p : {&p1, &p2, &p3}) want.push_back(f.run(f.kv.create_sequence(), *p));
  // Together, in one forward: the last-token logits of each row.
  int s1 = f.kv.create_sequence(), s2 = f.kv.create_sequence(), s3 = f.kv.create_sequence();
  for (auto [s, p] : {std::pair{s1, &p1}, {s2, &p2}, {s3, &p3}})
    ASSERT_TRUE(f.kv.reserve(s, int64_t(p->size()) + 1));
  BatchRow rows[] = {{s1, p1, false}, {s2, p2, false}, {s3, p3, false}};
  f.model->forward(f.pool, f.kv, rows, f.logits);
  ASSERT_EQ(f.logits.size(), 3u * 512);
  for (int r = 0; r < 3; ++r)
    for (int v = 0; v < 512; ++v)
      ASSERT_NEAR(f.logits[r * 512 + v], want[r][v], 1e-4) << "row " << r;
  // A decode step for two of them at once continues each correctly.
  int32_t t1 = 261, t2 = 7;
  BatchRow step[] = {{s1, std::span(&t1, 1), false}, {s2, std::span(&t2, 1), false}};
  f.model->forward(f.pool, f.kv, step, f.logits);
  const std::vector<float> both = f.logits;
  auto c1 = p1, c2 = p2;
  c1.push_back(t1);
  c2.push_back(t2);
  auto w1 = f.run(f.kv.create_sequence(), c1), w2 = f.run(f.kv.create_sequence(), c2);
  for (int v = 0; v < 512; ++v) {
    ASSERT_NEAR(both[v], w1[v], 1e-4);
    ASSERT_NEAR(both[512 + v], w2[v], 1e-4);
  }
}

// Logits with `dtype` KV entries against F32 ones over a 12-token prompt:
// different (the entries really are rounded), within `tolerance` of the
// logits' range, and the same greedy choice at every position, or with
// `near_ties_may_flip` wherever F32's best two are further apart than twice
// the largest difference.
void expect_close_to_f32_kv(DType dtype, float tolerance, bool near_ties_may_flip) {
  Fixture f;
  KvCache kv(f.model->kv_shape(dtype), 8);
  std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 29, 300, 100, 7, 50, 60, 70};
  auto want = f.run(f.kv.create_sequence(), prompt, true);
  int seq = kv.create_sequence();
  ASSERT_TRUE(kv.reserve(seq, int64_t(prompt.size())));
  BatchRow row{seq, prompt, true};
  std::vector<float> got;
  f.model->forward(f.pool, kv, std::span(&row, 1), got);
  ASSERT_EQ(got.size(), want.size());
  float worst = 0, range = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]));
    range = std::max(range, std::fabs(want[i]));
  }
  EXPECT_GT(worst, 0.0f);
  EXPECT_LT(worst, tolerance * range);
  int compared = 0;
  for (size_t p = 0; p < prompt.size(); ++p) {
    std::vector<float> top(want.begin() + p * 512, want.begin() + (p + 1) * 512);
    std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<>());
    if (near_ties_may_flip && top[0] - top[1] <= 2 * worst) continue;
    ++compared;
    EXPECT_EQ(argmax(&got[p * 512], 512), argmax(&want[p * 512], 512)) << "position " << p;
  }
  EXPECT_GE(compared, 6) << "largest difference " << worst;
}

TEST(Llama, Bf16KvCacheStaysCloseToF32) {
  expect_close_to_f32_kv(DType::BF16, 0.01f, false);  // keys and values to ~3 significant digits
}

TEST(Llama, Int8KvCacheStaysCloseToF32) {
  // stories260k's heads have 8 dimensions: one scale each, codes of 1/254
  // of the largest magnitude.
  expect_close_to_f32_kv(DType::I8, 0.02f, true);
}

TEST(Llama, KvBlocksReturnToThePool) {
  Fixture f;
  int64_t before = f.kv.blocks_free();
  int seq = f.kv.create_sequence();
  f.run(seq, std::vector<int32_t>(70, 5));
  EXPECT_EQ(f.kv.blocks_free(), before - 3);  // 70 tokens in blocks of 32
  f.kv.release(seq);
  EXPECT_EQ(f.kv.blocks_free(), before);
}

TEST(Llama, ForwardNeedsReservedBlocks) {
  Fixture f;
  int seq = f.kv.create_sequence();
  const std::vector<int32_t> tokens = {1, 2};
  BatchRow row{seq, tokens, false};
  EXPECT_THROW(f.model->forward(f.pool, f.kv, std::span(&row, 1), f.logits), std::logic_error);
}

TEST(Llama, RefusesABadTokenId) {
  Fixture f;
  int seq = f.kv.create_sequence();
  EXPECT_THROW(f.run(seq, {512}), std::out_of_range);
}

}  // namespace
}  // namespace hearth
