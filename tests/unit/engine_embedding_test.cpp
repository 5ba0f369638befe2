// Embedding requests in the engine, on the bundled model: a vector does not
// depend on what it was batched with or how its prompt was chunked, for
// every pooling; generation beside embeddings keeps its greedy tokens; the
// prompt cache serves last-token pooling and stays out of mean pooling;
// limits and cancellation. (The vectors' values are checked against the
// NumPy reference by the numerics suite.)
#include "engine/embedding.h"
#include "engine_test_support.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hearth {
namespace {

const std::filesystem::path kModel = std::filesystem::path(HEARTH_SOURCE_DIR) / "models/stories260k";

const std::vector<std::vector<int32_t>> kInputs = {
    {1}, {1, 403, 407, 261}, {1, 300, 7, 29, 100, 50, 60, 9, 11, 12, 13}, {1, 378, 90}};

void expect_near(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << what << " at " << i;
}

std::vector<float> embed_alone(const std::vector<int32_t>& ids, io::Pooling pooling) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .prompt_cache = 0, .max_batch = 1});
  return embed(engine, std::span(&ids, 1), pooling).vectors[0];
}

TEST(Embedding, FinishTruncatesThenNormalizes) {
  std::vector<float> v = {3, 4, 12};
  finish_embedding(v, 2);
  EXPECT_EQ(v.size(), 2u);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  std::vector<float> zero = {0, 0};
  finish_embedding(zero);
  EXPECT_EQ(zero, (std::vector<float>{0, 0}));
}

TEST(Embedding, BatchedAndChunkedEqualsAloneForEveryPooling) {
  for (io::Pooling pooling : {io::Pooling::Last, io::Pooling::Mean, io::Pooling::First}) {
    SCOPED_TRACE(io::pooling_name(pooling));
    // Prompts fed 3 tokens a step, batched with each other and with a generation.
    Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2, .max_batch = 8, .prefill_chunk = 3});
    auto gen = engine.submit(greedy({1, 403, 407}, 24));
    const EmbeddingBatch batch = embed(engine, kInputs, pooling);
    const std::vector<int32_t> generated = collect(*gen);
    ASSERT_EQ(batch.vectors.size(), kInputs.size());
    int64_t n = 0;
    for (size_t i = 0; i < kInputs.size(); ++i) {
      expect_near(batch.vectors[i], embed_alone(kInputs[i], pooling), "input " + std::to_string(i));
      double norm = 0;
      for (float x : batch.vectors[i]) norm += double(x) * x;
      EXPECT_NEAR(norm, 1.0, 1e-5);
      n += int64_t(kInputs[i].size());
    }
    EXPECT_EQ(batch.tokens, n);
    // The generation beside them is what it is alone.
    Engine solo(LlamaModel::load(kModel), EngineOptions{.threads = 1, .prompt_cache = 0});
    EXPECT_EQ(generated, collect(*solo.submit(greedy({1, 403, 407}, 24))));
    expect_kv_returned(engine);
  }
}

// Mean pooling computes every position, but the blocks it fills are the
// same as a generation's: they are published on the model's chain, where a
// later chat over the same tokens finds them.
TEST(Embedding, MeanPoolingPublishesBlocksAGenerationReuses) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1});
  std::vector<int32_t> input(100);
  for (size_t i = 0; i < input.size(); ++i) input[i] = int32_t(3 + i * 7 % 500);
  GenerationRequest r;
  r.prompt = input;
  r.embed = io::Pooling::Mean;
  auto embedded = engine.submit(r);
  while (embedded->next()) {
  }
  auto chat = engine.submit(greedy(input, 2));
  collect(*chat);
  EXPECT_GT(chat->finish().cached_tokens, 0);
  expect_kv_returned(engine);
}

TEST(Embedding, LastPoolingUsesThePromptCacheMeanPoolingDoesNot) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1});
  std::vector<int32_t> long_input(100);
  for (size_t i = 0; i < long_input.size(); ++i) long_input[i] = int32_t(3 + i * 7 % 500);
  for (io::Pooling pooling : {io::Pooling::Last, io::Pooling::Mean}) {
    GenerationRequest r;
    r.prompt = long_input;
    r.embed = pooling;
    auto first = engine.submit(r);
    while (first->next()) {
    }
    auto again = engine.submit(r);
    while (again->next()) {
    }
    EXPECT_EQ(again->finish().embedding.size(), first->finish().embedding.size());
    expect_near(again->finish().embedding, first->finish().embedding, io::pooling_name(pooling));
    if (pooling == io::Pooling::Last) EXPECT_GT(again->finish().cached_tokens, 0);
    else EXPECT_EQ(again->finish().cached_tokens, 0);
    EXPECT_EQ(again->finish().generated_tokens, 0);
  }
  expect_kv_returned(engine);
}

TEST(Embedding, AnInputMayFillTheWholeContextNotMore) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .ctx_size = 64});
  std::vector<std::vector<int32_t>> full = {std::vector<int32_t>(64, 5)};
  EXPECT_EQ(embed(engine, full, io::Pooling::Mean).vectors[0].size(), size_t(engine.model().config().hidden_size));
  full[0].push_back(5);
  EXPECT_THROW(embed(engine, full, io::Pooling::Mean), std::invalid_argument);
  std::vector<std::vector<int32_t>> bad = {{1, 2}, {1, 100000}};
  try {
    embed(engine, bad, io::Pooling::Last);
    FAIL() << "an id outside the vocabulary was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input 1"), std::string::npos) << e.what();
  }
  expect_kv_returned(engine);
}

TEST(Embedding, CancelledInputsFailTheBatchAndReturnTheirKv) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .max_queue = 4, .prefill_chunk = 2});
  std::vector<std::vector<int32_t>> inputs(40, std::vector<int32_t>(50, 7));
  int seen = 0;
  EXPECT_THROW(embed(engine, inputs, io::Pooling::Mean,
                     0, [&](const std::shared_ptr<RequestHandle>& h) {
                       if (++seen == 3) h->cancel();
                     }),
               std::runtime_error);
  expect_kv_returned(engine);
}

// A request of many inputs keeps at most one batch of them in the engine, so
// the queue has room for other clients while it runs.
TEST(Embedding, ARequestKeepsAtMostOneBatchInFlight) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .max_queue = 64, .max_batch = 4});
  std::vector<std::vector<int32_t>> inputs(40, std::vector<int32_t>{1, 403, 407, 261});
  int64_t most = 0;
  const EmbeddingBatch batch = embed(engine, inputs, io::Pooling::Mean, 0, [&](const std::shared_ptr<RequestHandle>&) {
    const EngineStats s = engine.stats();
    most = std::max(most, s.queued + s.running);
  });
  EXPECT_EQ(batch.vectors.size(), inputs.size());
  EXPECT_LE(most, 4);
  EXPECT_GE(most, 2);  // more than one at a time, all the same
  expect_kv_returned(engine);
}

}  // namespace
}  // namespace hearth
