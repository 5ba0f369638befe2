// The continuous-batching engine on the bundled model: concurrent requests
// give the same greedy tokens as running each alone; cancellation and
// completion return every KV block; admission limits hold.
#include "engine/engine.h"
#include "engine_test_support.h"
#include "engine/generator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <thread>

namespace hearth {
namespace {

const std::filesystem::path kModel =
    std::filesystem::path(HEARTH_SOURCE_DIR) / "models/stories260k";

// A prompt of n tokens: BOS, then a story-like run of ids.
std::vector<int32_t> story_prompt(int n) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(int32_t(260 + (i * 37) % 240));
  return p;
}

std::vector<int32_t> alone(const std::vector<int32_t>& prompt, int64_t max_tokens) {
  auto model = LlamaModel::load(kModel);
  ThreadPool pool(1);
  KvCache kv(model->kv_shape(), 32);
  Generator gen(*model, pool, kv);
  GenerateOptions opt;
  opt.max_tokens = max_tokens;
  opt.sampling.temperature = 0;
  std::vector<int32_t> out;
  gen.run(prompt, opt, [&](int32_t t, std::span<const float>) { return out.push_back(t), true; });
  return out;
}

TEST(Engine, ConcurrentRequestsMatchSingleRuns) {
  Engine engine(LlamaModel::load(kModel),
                EngineOptions{.threads = 2, .max_batch = 4, .prefill_chunk = 3});
  std::vector<std::vector<int32_t>> prompts = {
      {1}, {1, 403, 407, 261}, {1, 300, 7, 29, 100, 50, 60}, {1, 378}};
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (size_t i = 0; i < prompts.size(); ++i)
    handles.push_back(engine.submit(greedy(prompts[i], 20 + int(i))));
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(collect(*handles[i]), alone(prompts[i], 20 + int(i))) << "request " << i;
    EXPECT_EQ(handles[i]->finish().reason, FinishReason::Length);
    EXPECT_EQ(handles[i]->finish().generated_tokens, 20 + int(i));
    EXPECT_EQ(handles[i]->finish().prompt_tokens, int64_t(prompts[i].size()));
  }
  expect_kv_returned(engine);
}

// Prompt and output together fill the context exactly, then Length.
TEST(Engine, GenerationStopsWhenTheContextIsFull) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .ctx_size = 40});
  auto req = greedy(std::vector<int32_t>(30, 300), -1);
  req.prompt[0] = 1;
  auto h = engine.submit(req);
  auto got = collect(*h);
  EXPECT_EQ(got.size(), 10u);
  EXPECT_EQ(h->finish().reason, FinishReason::Length);
  EXPECT_THROW(engine.submit(greedy(std::vector<int32_t>(40, 300), 1)), std::invalid_argument);
}

TEST(Engine, StopTokensEndWithStop) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1});
  auto expected = alone({1}, 10);
  auto req = greedy({1}, 10);
  req.stop_ids = {expected[3]};
  auto h = engine.submit(req);
  auto got = collect(*h);
  EXPECT_EQ(got, std::vector<int32_t>(expected.begin(), expected.begin() + 4));
  EXPECT_EQ(h->finish().reason, FinishReason::Stop);
}

// The penalties see the prompt and the tokens generated so far.
TEST(Engine, PenaltiesSeeTheWholeHistory) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1});
  auto req = greedy({1, 403, 407, 261, 378}, 25);
  req.sampling.presence_penalty = 1000.0f;
  req.sampling.presence_context_size = 100;
  auto h = engine.submit(req);
  auto got = collect(*h);
  ASSERT_EQ(got.size(), 25u);
  std::set<int32_t> seen(req.prompt.begin(), req.prompt.end());
  for (int32_t t : got) EXPECT_TRUE(seen.insert(t).second) << "token " << t << " repeated";
  // Without the penalty the story repeats prompt tokens (" a" of "a time" in "a little girl").
  auto plain = collect(*engine.submit(greedy({1, 403, 407, 261, 378}, 25)));
  plain.insert(plain.end(), req.prompt.begin(), req.prompt.end());
  EXPECT_LT(std::set<int32_t>(plain.begin(), plain.end()).size(), plain.size());
}

TEST(Engine, CancelReleasesKv) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1});
  auto h = engine.submit(greedy({1}, -1));
  ASSERT_TRUE(h->next().has_value());
  h->cancel();
  while (h->next()) {
  }
  EXPECT_EQ(h->finish().reason, FinishReason::Cancelled);
  expect_kv_returned(engine);
  EXPECT_EQ(engine.stats().requests_cancelled, 1);
}

TEST(Engine, RejectsBadRequestsAndAFullQueue) {
  Engine engine(LlamaModel::load(kModel),
                EngineOptions{.threads = 1, .max_queue = 2, .max_batch = 1});
  EXPECT_THROW(engine.submit(greedy({}, 5)), std::invalid_argument);
  EXPECT_THROW(engine.submit(greedy({1, 9999}, 5)), std::invalid_argument);
  EXPECT_THROW(engine.submit(greedy(std::vector<int32_t>(512, 5), 5)), std::invalid_argument);
  EXPECT_THROW(engine.submit(greedy({1, 5}, 0)), std::invalid_argument);  // would sample one token
  // One runs and two wait, the fourth and fifth are refused, whether or not
  // the loop has admitted the first yet: a free batch slot is room too.
  std::vector<std::shared_ptr<RequestHandle>> hs;
  int refused = 0;
  for (int i = 0; i < 5; ++i) {
    try {
      hs.push_back(engine.submit(greedy({1}, -1)));  // until the context is full: still running
    } catch (const QueueFull&) {
      ++refused;
    }
  }
  EXPECT_EQ(hs.size(), 3u);
  EXPECT_EQ(refused, 2);
  for (auto& h : hs) h->cancel();
  for (auto& h : hs)
    while (h->next()) {
    }
  EXPECT_EQ(engine.stats().requests_rejected, refused);
}

TEST(Engine, ShutdownCancelsInFlight) {
  auto engine = std::make_unique<Engine>(LlamaModel::load(kModel), EngineOptions{.threads = 1});
  auto h = engine->submit(greedy({1}, -1));
  engine->shutdown();
  while (h->next()) {
  }
  EXPECT_EQ(h->finish().reason, FinishReason::Cancelled);
  EXPECT_TRUE(h->finish().error.empty());  // cancelled, not failed
  EXPECT_EQ(engine->stats().requests_failed, 0);
}

TEST(Engine, AStoppedRequestEndsAsStoppedNotCancelled) {
  // Also when the client leaves after the stop string matched.
  for (bool client_left : {false, true}) {
    SCOPED_TRACE(client_left ? "stopped, then the client left" : "stopped");
    Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1});
    const int64_t ctx = engine.admission().enforced_context_tokens;
    // Until the context is full (511 tokens). The engine does not wait for
    // its reader: a test thread held up that long finds it ended by length,
    // and tries again.
    std::shared_ptr<RequestHandle> h;
    for (int attempt = 0; attempt < 5; ++attempt) {
      h = engine.submit(greedy({1}, -1));
      for (int i = 0; i < 5; ++i) ASSERT_TRUE(h->next().has_value());
      h->stop();  // what the server does when a stop string matched
      if (client_left) h->cancel();
      while (h->next()) {
      }
      if (h->finish().generated_tokens < ctx - 1) break;
    }
    EXPECT_EQ(h->finish().reason, FinishReason::Stop);
    EXPECT_TRUE(h->finish().error.empty());
    expect_kv_returned(engine);
    EXPECT_EQ(engine.stats().requests_cancelled, 0);
    EXPECT_EQ(engine.stats().checkpoints_saved, 0);
  }
}

// A full batch does not keep a waiting request whose client has gone: it
// ends at the next step, long before the running one frees its slot.
TEST(Engine, AQueuedRequestWhoseClientLeftEndsWithoutWaitingForASlot) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .max_batch = 1});
  auto running = engine.submit(greedy({1}, -1));  // until the context is full
  ASSERT_TRUE(running->next().has_value());
  auto waiting = engine.submit(greedy({1, 300}, 5));
  waiting->cancel();
  while (waiting->next()) {
  }
  const int64_t generated_meanwhile = engine.stats().generated_tokens_total;
  EXPECT_EQ(waiting->finish().reason, FinishReason::Cancelled);
  EXPECT_EQ(waiting->finish().generated_tokens, 0);
  // The running request goes on to the context's end (511 tokens).
  const int64_t ctx = engine.admission().enforced_context_tokens;
  EXPECT_LT(generated_meanwhile, ctx - 1);
  const auto rest = collect(*running);
  EXPECT_EQ(int64_t(rest.size()) + 1, ctx - 1);
  expect_kv_returned(engine);
  EXPECT_EQ(engine.stats().requests_cancelled, 1);
}

TEST(Engine, AStepBudgetBelowTheBatchSizeIsRefused) {
  // Every decoding stream takes a token of a step first: a budget below the
  // batch size would leave a waiting prompt none, while the batch is full.
  EXPECT_THROW(Engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .max_batch = 4, .step_tokens = 3}),
               std::invalid_argument);
  Engine fits(LlamaModel::load(kModel), EngineOptions{.threads = 1, .max_batch = 4, .step_tokens = 4});
  EXPECT_EQ(collect(*fits.submit(greedy({1, 300}, 3))).size(), 3u);
}

TEST(Engine, APrefillChunkOfNoTokensIsRefused) {
  // It would plan no prompt tokens at all: the request would never start,
  // and the loop would spin on empty steps.
  EXPECT_THROW(Engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .prefill_chunk = 0}),
               std::invalid_argument);
}

TEST(Engine, ARequestThatFailsInAStepEndsAloneTheOthersGoOn) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2, .max_batch = 4});
  std::vector<std::vector<int32_t>> prompts = {{1, 403, 407}, {1, 300, 7}, {1, 378, 29}};
  auto bad = greedy(prompts[1], 20);
  bad.sampling.temperature = std::nanf("");  // fails when it samples, inside the batched step
  auto h0 = engine.submit(greedy(prompts[0], 20));
  auto h1 = engine.submit(bad);
  auto h2 = engine.submit(greedy(prompts[2], 20));
  EXPECT_EQ(collect(*h0), alone(prompts[0], 20));
  EXPECT_EQ(collect(*h2), alone(prompts[2], 20));
  collect(*h1);
  EXPECT_NE(h1->finish().error.find("temperature"), std::string::npos) << h1->finish().error;
  EXPECT_TRUE(h0->finish().error.empty());
  EXPECT_EQ(engine.stats().requests_failed, 1);
  expect_kv_returned(engine);
}

TEST(Engine, ShutdownRacingSubmitsLeavesNoReaderWaiting) {
  auto model_dir = kModel;
  for (int round = 0; round < 20; ++round) {
    auto engine = std::make_unique<Engine>(LlamaModel::load(model_dir), EngineOptions{.threads = 1});
    std::vector<std::shared_ptr<RequestHandle>> handles;
    std::thread submitter([&] {
      for (int i = 0; i < 20; ++i) try {
          handles.push_back(engine->submit(greedy({1, int32_t(300 + i)}, 50)));
        } catch (const std::exception&) {  // shutting down: refused, which is fine
        }
    });
    std::this_thread::sleep_for(std::chrono::microseconds(100 * round));
    engine->shutdown();
    submitter.join();
    for (auto& h : handles)  // every handle is closed: next() returns
      while (h->next()) {
      }
  }
}

TEST(Engine, AStepTokenBudgetChunksPrefillAndDecodeRowsKeepTheirPace) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2, .max_batch = 4, .step_tokens = 16});
  const std::vector<int32_t> streaming = {1, 403, 407}, long_prompt = story_prompt(300);
  // Submitted together, before anything is read; the stream runs until the
  // context is full, long after b: b's chunks always share their steps with it.
  const int64_t steps_before = engine.stats().steps;
  auto a = engine.submit(greedy(streaming, -1));
  auto b = engine.submit(greedy(long_prompt, 5));
  const std::vector<int32_t> got_b = collect(*b);
  // 300 prompt tokens at most 15 a step (the stream, still decoding, takes
  // one of the 16), then one step for each of b's 4 later tokens. Counted
  // once b has closed: a step's tokens reach the handles before the step is
  // counted, its finish after.
  EXPECT_GE(engine.stats().steps - steps_before, 300 / 15 + 4);
  EXPECT_EQ(got_b, alone(long_prompt, 5));
  const std::vector<int32_t> want_a = alone(streaming, 120);
  std::vector<int32_t> got_a;
  while (got_a.size() < want_a.size()) got_a.push_back(a->next().value().token);
  EXPECT_EQ(got_a, want_a);
  a->cancel();
  collect(*a);
  expect_kv_returned(engine);
}

// While a stream decodes, a prompt is fed in chunks held to the step-time
// target (here below any step's time: a block a step), so the stream gets a
// token at each of them instead of waiting for the whole prompt at once.
TEST(Engine, WhileStreamsDecodeAPromptIsFedInChunksThatKeepTheStepTime) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .max_batch = 4, .step_seconds = 1e-9});
  std::vector<int32_t> long_prompt = story_prompt(256);
  collect(*engine.submit(greedy(long_prompt, 1)));  // a step with prompt tokens is measured
  auto stream = engine.submit(greedy({1, 403, 407}, -1));
  ASSERT_TRUE(stream->next());  // decoding, until the context is full
  const int64_t steps_before = engine.stats().steps;
  long_prompt[1] = 261;  // not cached
  const std::vector<int32_t> got = collect(*engine.submit(greedy(long_prompt, 3)));
  // Its 256 tokens 32 a step, then a step for each of its 2 later tokens.
  EXPECT_GE(engine.stats().steps - steps_before, 256 / 32 + 2);
  EXPECT_EQ(got, alone(long_prompt, 3));
  stream->cancel();
  collect(*stream);
  expect_kv_returned(engine);
}

// Without a stream decoding beside it, a prompt takes the whole step budget.
TEST(Engine, ALonePromptIsNotHeldToTheStepTime) {
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .prompt_cache = 0, .step_seconds = 1e-9});
  const std::vector<int32_t> long_prompt = story_prompt(256);
  collect(*engine.submit(greedy(long_prompt, 1)));
  const int64_t steps_before = engine.stats().steps;
  collect(*engine.submit(greedy(long_prompt, 3)));
  EXPECT_EQ(engine.stats().steps - steps_before, 3);  // the prompt in one step, then one a token
  expect_kv_returned(engine);
}

}  // namespace
}  // namespace hearth
