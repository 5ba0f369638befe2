// The engine with the prompt cache, on the bundled model: a cache hit gives
// the same greedy tokens as a cold run and logprobs within float rounding;
// follow-up turns, fully cached histories, shared prefixes running together,
// eviction and preemption under a tiny KV budget; no block is leaked.
#include "engine/engine.h"
#include "engine_test_support.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <thread>

namespace hearth {
namespace {

const std::filesystem::path kModel =
    std::filesystem::path(HEARTH_SOURCE_DIR) / "models/stories260k";

struct Output {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  FinishInfo info;
};

Output drain(RequestHandle& h) {
  Output out;
  while (auto ev = h.next()) {
    out.tokens.push_back(ev->token);
    out.logprobs.push_back(ev->logprob);
  }
  out.info = h.finish();
  return out;
}

Output collect(Engine& engine, GenerationRequest r) { return drain(*engine.submit(std::move(r))); }

// Greedy, with the chosen tokens' logprobs.
GenerationRequest greedy_request(std::vector<int32_t> prompt, int64_t max_tokens, std::string session = {}) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.top_logprobs = 0;
  r.session = std::move(session);
  return r;
}

Output run(Engine& engine, std::vector<int32_t> prompt, int64_t max_tokens, std::string session = {}) {
  return collect(engine, greedy_request(std::move(prompt), max_tokens, std::move(session)));
}

// A prompt of n tokens: BOS, then a story-like run of ids.
std::vector<int32_t> prompt_of(int n, int seed = 0) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(int32_t(260 + (i * 37 + seed * 11) % 240));
  return p;
}

void expect_same(const Output& got, const Output& want) {
  EXPECT_EQ(got.tokens, want.tokens);
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size());
  for (size_t i = 0; i < got.logprobs.size(); ++i) EXPECT_NEAR(got.logprobs[i], want.logprobs[i], 1e-4) << i;
}

// One KV block of the bundled model, for budgets counted in blocks.
size_t kv_block_bytes() { return KvCache::block_bytes(LlamaModel::load(kModel)->kv_shape()); }

std::unique_ptr<Engine> cold_engine() {
  return std::make_unique<Engine>(LlamaModel::load(kModel), EngineOptions{.threads = 2, .prompt_cache = 0});
}

TEST(PromptCache, ARepeatedPromptHitsAndMatchesAColdRun) {
  auto cold = cold_engine();
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2});
  const auto prompt = prompt_of(75);
  const Output want = run(*cold, prompt, 20);
  EXPECT_EQ(want.info.cached_tokens, 0);
  const Output first = run(engine, prompt, 20);
  EXPECT_EQ(first.info.cached_tokens, 0);
  expect_same(first, want);
  const Output again = run(engine, prompt, 20);
  EXPECT_EQ(again.info.cached_tokens, 64);  // two whole blocks of 32
  expect_same(again, want);
  auto cs = engine.cache_stats();
  ASSERT_TRUE(cs);
  EXPECT_EQ(cs->hits, 1);
  EXPECT_EQ(cs->misses, 1);
  EXPECT_FALSE(cold->cache_stats());
  expect_kv_returned(engine);
}

TEST(PromptCache, AFollowUpTurnReusesThePromptAndTheReply) {
  auto cold = cold_engine();
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2});
  auto turn = prompt_of(40);
  const Output reply = run(engine, turn, 40, "chat");
  // The next turn: everything so far plus a new message.
  turn.insert(turn.end(), reply.tokens.begin(), reply.tokens.end());
  for (int i = 0; i < 12; ++i) turn.push_back(300 + i);
  const Output second = run(engine, turn, 15, "chat");
  // 40 + 39 positions were computed (the last reply token never is): 2 blocks.
  EXPECT_EQ(second.info.cached_tokens, 64);
  expect_same(second, run(*cold, turn, 15));
  EXPECT_EQ(engine.cache_stats()->session_hits, 1);
  expect_kv_returned(engine);
}

TEST(PromptCache, AFullyCachedHistoryRecomputesOnlyItsLastToken) {
  auto cold = cold_engine();
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2});
  const auto prompt = prompt_of(64);  // exactly two blocks
  run(engine, prompt, 1);
  const Output again = run(engine, prompt, 12);
  EXPECT_EQ(again.info.cached_tokens, 63);  // the shared last block was copied, not rewritten
  expect_same(again, run(*cold, prompt, 12));
  // The copy left the cached block intact: a third run still matches.
  expect_same(run(engine, prompt, 12), again);
  expect_kv_returned(engine);
}

TEST(PromptCache, SharedPrefixRequestsRunTogether) {
  auto cold = cold_engine();
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2, .max_batch = 4, .prefill_chunk = 16});
  const auto shared = prompt_of(70);
  run(engine, shared, 1);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(shared);
    for (int j = 0; j <= i * 5; ++j) prompts.back().push_back(280 + i * 20 + j);
  }
  std::vector<Output> got(prompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i)
    threads.emplace_back([&, i] { got[i] = run(engine, prompts[i], 25); });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].info.cached_tokens, 64);
    expect_same(got[i], run(*cold, prompts[i], 25));
  }
  expect_kv_returned(engine);
}

TEST(PromptCache, ATinyBudgetEvictsAndPreemptsYetEveryRequestCompletes) {
  auto cold = cold_engine();
  // Six blocks of 32 positions for four requests that each grow to 4 blocks.
  const size_t block = kv_block_bytes();
  Engine engine(LlamaModel::load(kModel),
                EngineOptions{.threads = 2, .ctx_size = 128, .kv_budget = 6 * block, .max_batch = 4});
  EXPECT_EQ(engine.admission().max_safe_context, 6 * 32);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(prompt_of(40, i + 1));
  // All four are submitted before any is read: they overlap whatever the
  // scheduling (the engine does not wait for readers).
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const auto& p : prompts) handles.push_back(engine.submit(greedy_request(p, 80)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE(i);
    const Output got = drain(*handles[i]);
    EXPECT_EQ(got.info.reason, FinishReason::Length);
    EXPECT_EQ(got.tokens.size(), 80u);
    expect_same(got, run(*cold, prompts[i], 80));
  }
  EXPECT_GT(engine.stats().preemptions, 0);
  EXPECT_GT(engine.cache_stats()->evictions, 0);
  // Each prompt is new: a miss once, though a preempted one attaches its own
  // blocks again when it resumes.
  EXPECT_EQ(engine.cache_stats()->hits, 0);
  EXPECT_EQ(engine.cache_stats()->misses, 4);
  expect_kv_returned(engine);
}

// A request that waits for room looks the cache up at each step it is tried;
// the lookup counts once, when it is admitted (and not again if it resumes
// after a preemption).
TEST(PromptCache, ARequestWaitingForRoomIsCountedOnceWhenAdmitted) {
  const size_t block = kv_block_bytes();
  Engine engine(LlamaModel::load(kModel),
                EngineOptions{.threads = 1, .ctx_size = 192, .kv_budget = 6 * block, .max_batch = 2});
  const auto shared = prompt_of(70);
  run(engine, shared, 1);  // its two whole blocks are cached: one miss
  // Five blocks, growing to six: the second request (three blocks, two of
  // them cached but reclaimable) waits for the first to finish.
  auto long_handle = engine.submit(greedy_request(prompt_of(150, 5), 30));
  auto waiting = engine.submit(greedy_request(shared, 5, "chat"));
  drain(*long_handle);
  const Output second = drain(*waiting);
  EXPECT_EQ(second.info.reason, FinishReason::Length);
  const auto cs = engine.cache_stats();
  EXPECT_EQ(cs->hits + cs->misses, 3);
  EXPECT_EQ(cs->session_hits + cs->session_misses, 0);  // the session was new
  expect_kv_returned(engine);
}

// A try looks the cache up (and may copy a block and scan the index), so a
// waiting request is tried again once a block was freed or indexed, not at
// each of the 30-odd steps of the request it waits for.
TEST(PromptCache, AWaitingRequestIsTriedAgainOnlyWhenRoomMayHaveCome) {
  const size_t block = kv_block_bytes();
  Engine engine(LlamaModel::load(kModel),
                EngineOptions{.threads = 1, .ctx_size = 192, .kv_budget = 6 * block, .max_batch = 2});
  const auto shared = prompt_of(70);
  run(engine, shared, 1);
  auto long_handle = engine.submit(greedy_request(prompt_of(150, 5), 30));
  auto waiting = engine.submit(greedy_request(shared, 5));
  const Output first = drain(*long_handle);
  const Output second = drain(*waiting);
  EXPECT_EQ(first.info.reason, FinishReason::Length);
  EXPECT_EQ(second.info.reason, FinishReason::Length);
  // One lookup each for the first two; the waiting one's first try, one
  // after the long prefill indexed its blocks, one when its fifth block
  // filled, one when its sixth evicted the cache's, one once it finished,
  // and slack for a submission that lands mid-step or a pass under memory
  // pressure.
  EXPECT_LE(engine.cache_stats()->prefix_scans, 2 + 8);
  expect_kv_returned(engine);
}

// Requests admitted together with one new prefix compute it once: the
// younger waits while the older computes a block of it, then shares it.
TEST(PromptCache, RequestsAdmittedTogetherComputeTheirNewPrefixOnce) {
  auto cold = cold_engine();
  const size_t block = kv_block_bytes();
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .ctx_size = 384, .kv_budget = 12 * block,
                                                        .max_batch = 4, .prefill_chunk = 32});
  // It holds the KV the next two need: they are admitted in one step once
  // it ends (and share as much if either comes later).
  auto holder = engine.submit(greedy_request(prompt_of(300, 7), 40));
  ASSERT_TRUE(holder->next());
  const auto prompt = prompt_of(140, 8);  // four whole blocks and 12 tokens
  auto first = engine.submit(greedy_request(prompt, 10));
  auto second = engine.submit(greedy_request(prompt, 10));
  drain(*holder);
  const Output want = run(*cold, prompt, 10);
  const Output a = drain(*first), b = drain(*second);
  expect_same(a, want);
  expect_same(b, want);
  EXPECT_EQ(a.info.cached_tokens, 0);
  EXPECT_EQ(b.info.cached_tokens, 4 * 32);
  EXPECT_EQ(engine.stats().prompt_tokens_total, 300 + 140 + 12);
  EXPECT_EQ(engine.stats().cached_tokens_total, 4 * 32);
  // The one that shared is a hit, though its lookup found nothing.
  EXPECT_EQ(engine.cache_stats()->hits, 1);
  EXPECT_EQ(engine.cache_stats()->misses, 2);  // (the holder's too)
  expect_kv_returned(engine);
}

TEST(PromptCache, TheContextShrinksToWhatTheBudgetHolds) {
  const size_t block = kv_block_bytes();
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1, .kv_budget = 10 * block});
  EXPECT_EQ(engine.ctx_size(), 10 * 32);
  EXPECT_EQ(engine.admission().enforced_context_tokens, 10 * 32);
  EXPECT_THROW(run(engine, prompt_of(330), 1), std::invalid_argument);
}

TEST(PromptCache, UnderMemoryPressureTheCacheGivesItsBlocksBack) {
  // A floor no machine meets: the engine is always under pressure.
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2, .min_available_bytes = size_t(1) << 60});
  const Output first = run(engine, prompt_of(100, 9), 30);
  EXPECT_EQ(first.info.reason, FinishReason::Length);  // requests are never failed for it
  // The housekeeping thread empties the cache, then counts what it freed:
  // wait for both.
  for (int i = 0; i < 1000 && (engine.cache_stats()->entries > 0 || engine.stats().pressure_evictions < 4); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(engine.cache_stats()->entries, 0);
  EXPECT_GE(engine.stats().pressure_evictions, 4);
  const Output again = run(engine, prompt_of(100, 9), 30);
  expect_same(again, first);  // discarded pages come back as fresh memory
  expect_kv_returned(engine);
}

// Cancels a request after `after` tokens and waits until the engine closed it.
void cancel_after(Engine& engine, GenerationRequest r, int after) {
  auto h = engine.submit(std::move(r));
  for (int i = 0; i < after; ++i) ASSERT_TRUE(h->next().has_value());
  h->cancel();
  while (h->next()) {
  }
  ASSERT_EQ(h->finish().reason, FinishReason::Cancelled);
}

TEST(GenerationCheckpoints, ACancelledRequestSentAgainResumesAndMatchesAnUninterruptedRun) {
  auto cold = cold_engine();
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2});
  for (float temperature : {0.0f, 0.9f}) {
    SCOPED_TRACE(temperature);
    GenerationRequest r;
    r.prompt = prompt_of(50, int(temperature * 10));
    r.max_tokens = 400;  // far more than the engine can run ahead of the reader before the cancel
    r.sampling.temperature = temperature;
    r.sampling.seed = 1234;
    r.top_logprobs = 2;
    const Output want = collect(*cold, r);
    const int64_t saved = engine.stats().checkpoints_saved;
    cancel_after(engine, r, 45);
    EXPECT_EQ(engine.stats().checkpoints_saved, saved + 1);
    EXPECT_EQ(engine.stats().checkpoints, 1);
    const Output again = collect(engine, r);
    expect_same(again, want);
    EXPECT_EQ(again.info.cached_tokens, 50);  // all of the prompt, and only the prompt, counts
    EXPECT_EQ(again.info.generated_tokens, 400);
    EXPECT_EQ(engine.stats().checkpoints, 0);  // completion leaves nothing behind
    EXPECT_EQ(engine.stats().checkpoints_resumed, saved + 1);
  }
  expect_kv_returned(engine);
}

// Clients retry when the server is busy: a retry turned away by a full
// queue neither takes the checkpoint nor counts it, and the next retry
// that is queued still resumes it.
TEST(GenerationCheckpoints, ARetryTurnedAwayLeavesTheCheckpointForTheNext) {
  auto cold = cold_engine();
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2, .max_queue = 0, .max_batch = 1});
  GenerationRequest r;
  r.prompt = prompt_of(50, 3);
  r.max_tokens = 400;
  r.sampling.temperature = 0;
  const Output want = collect(*cold, r);
  cancel_after(engine, r, 45);
  ASSERT_EQ(engine.stats().checkpoints_saved, 1);
  GenerationRequest busy;
  busy.prompt = prompt_of(10, 4);
  busy.max_tokens = -1;
  busy.sampling.temperature = 0;
  auto blocker = engine.submit(std::move(busy));
  ASSERT_TRUE(blocker->next().has_value());  // running: the one slot is taken
  EXPECT_THROW(engine.submit(r), QueueFull);
  EXPECT_EQ(engine.stats().checkpoints, 1);
  EXPECT_EQ(engine.stats().checkpoints_saved, 1);
  EXPECT_EQ(engine.stats().checkpoints_resumed, 0);
  blocker->cancel();
  while (blocker->next()) {
  }
  expect_same(collect(engine, r), want);
  EXPECT_EQ(engine.stats().checkpoints_resumed, 1);
  expect_kv_returned(engine);
}

TEST(GenerationCheckpoints, UnseededSamplingAndShortRunsAreNotKept) {
  GenerationRequest r;
  r.prompt = prompt_of(20);
  r.max_tokens = 400;  // far more than the engine can run ahead of the reader before the cancel
  r.sampling.temperature = 0.8f;  // no seed: another run would differ anyway
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2});
  cancel_after(engine, r, 30);
  EXPECT_EQ(engine.stats().checkpoints_saved, 0);
  // Fewer generated tokens than the minimum (the engine may run ahead of the
  // reader, so the minimum is above anything this request can generate).
  r.sampling.temperature = 0;
  Engine short_runs(LlamaModel::load(kModel), EngineOptions{.threads = 2, .generation_checkpoint_tokens = 1000});
  cancel_after(short_runs, r, 5);
  EXPECT_EQ(short_runs.stats().checkpoints_saved, 0);
  EngineOptions off{.threads = 2, .generation_checkpoint_tokens = 0};
  Engine disabled(LlamaModel::load(kModel), off);
  cancel_after(disabled, r, 30);
  EXPECT_EQ(disabled.stats().checkpoints_saved, 0);
}

EngineOptions with_ssd(const std::filesystem::path& dir) {
  return EngineOptions{.threads = 2, .ssd_dir = dir, .ssd_demote_idle_seconds = 1e9};
}

// What a cold engine makes of the prompt; an engine with `opt` has run it
// meanwhile and made its blocks durable, for a restarted one to read back.
Output run_and_spill(const std::vector<int32_t>& prompt, int64_t max_tokens, const EngineOptions& opt) {
  const Output want = run(*cold_engine(), prompt, max_tokens);
  Engine first(LlamaModel::load(kModel), opt);
  run(first, prompt, max_tokens);
  first.flush_cache();
  return want;
}

EngineOptions with_ssd_and_chunk(const std::filesystem::path& dir, int64_t prefill_chunk) {
  EngineOptions opt = with_ssd(dir);
  opt.prefill_chunk = prefill_chunk;
  return opt;
}

TEST(PromptCacheSsd, ARestartedEngineServesThePrefixFromDisk) {
  TempDir dir;
  auto cold = cold_engine();
  const auto prompt = prompt_of(100);
  const Output want = run(*cold, prompt, 20);
  {
    Engine first(LlamaModel::load(kModel), with_ssd(dir.path()));
    expect_same(run(first, prompt, 20), want);
    ASSERT_TRUE(first.flush_cache());
    EXPECT_EQ(first.ssd_stats()->entries, 3);  // 100 prompt + 19 fed tokens: three whole blocks
  }
  Engine second(LlamaModel::load(kModel), with_ssd(dir.path()));
  EXPECT_EQ(second.ssd_stats()->entries, 3);
  EXPECT_EQ(second.longest_durable_prefix_tokens(), 96);
  const Output again = run(second, prompt, 20);
  EXPECT_EQ(again.info.cached_tokens, 96);
  expect_same(again, want);
  EXPECT_EQ(second.cache_stats()->restored_blocks, 3);
  EXPECT_EQ(second.cache_stats()->hits, 1);
  EXPECT_EQ(second.ssd_stats()->restores, 3);
  expect_kv_returned(second);
}

// A restore is read a step's worth at a time, like a prompt chunk (here 64
// tokens: two blocks a step), so it shares its steps with other streams'
// decode rows instead of holding the engine for the whole read.
TEST(PromptCacheSsd, ALongRestoreIsReadAStepsWorthAtATime) {
  TempDir dir;
  const auto prompt = prompt_of(300, 7);
  const EngineOptions opt = with_ssd_and_chunk(dir.path(), 64);
  const Output want = run_and_spill(prompt, 5, opt);
  Engine second(LlamaModel::load(kModel), opt);
  const int64_t steps_before = second.stats().steps;
  const Output again = run(second, prompt, 5);
  EXPECT_EQ(again.info.cached_tokens, 288);  // nine blocks; the last 12 prompt tokens are computed
  expect_same(again, want);
  // Reads of 2, 2, 2, 2 and 1 blocks, the 12 tokens (the first token), four decodes.
  EXPECT_EQ(second.stats().steps - steps_before, 10);
  EXPECT_EQ(second.cache_stats()->restored_blocks, 9);
  // The writer waited while the blocks were read, once, and goes on after.
  EXPECT_EQ(second.ssd_stats()->pauses, 1);
  EXPECT_FALSE(second.ssd_stats()->paused);
  expect_kv_returned(second);
}

// Requests that need the same blocks from disk at once read them once:
// the later ones share what the first read back.
TEST(PromptCacheSsd, RequestsRestoringOnePrefixTogetherReadItOnce) {
  TempDir dir;
  const auto prompt = prompt_of(300, 8);
  const EngineOptions opt = with_ssd_and_chunk(dir.path(), 64);
  const Output want = run_and_spill(prompt, 5, opt);
  Engine second(LlamaModel::load(kModel), opt);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r = greedy(prompt, 5);
    r.top_logprobs = 0;
    handles.push_back(second.submit(std::move(r)));
  }
  for (auto& h : handles) {
    Output out;
    while (auto ev = h->next()) out.tokens.push_back(ev->token), out.logprobs.push_back(ev->logprob);
    expect_same(out, want);
  }
  EXPECT_EQ(second.ssd_stats()->restores, 9);
  EXPECT_EQ(second.cache_stats()->restored_blocks, 9);
  // Each found it on disk only: those that shared what another read are hits too.
  EXPECT_EQ(second.cache_stats()->hits, 3);
  EXPECT_EQ(second.cache_stats()->misses, 0);
  expect_kv_returned(second);
}

// A prompt of whole blocks, all on disk, computes only its last token, as
// a RAM hit of it does.
TEST(PromptCacheSsd, ABlockAlignedPromptOnDiskComputesOnlyItsLastToken) {
  TempDir dir;
  const auto prompt = prompt_of(288, 9);
  const Output want = run_and_spill(prompt, 3, with_ssd(dir.path()));
  Engine second(LlamaModel::load(kModel), with_ssd(dir.path()));
  const Output again = run(second, prompt, 3);
  EXPECT_EQ(again.info.cached_tokens, 287);
  expect_same(again, want);
  EXPECT_EQ(second.cache_stats()->restored_blocks, 9);
  expect_kv_returned(second);
}

// A request preempted while it reads its prompt back from disk (an older
// request needed a block) counts every block it took from the cache,
// before the preemption and after it resumes, as cached; its own blocks
// attached again when it resumes are not counted twice.
TEST(PromptCacheSsd, ARestorePreemptedMidwayCountsAllItTookAsCached) {
  TempDir dir;
  const auto prompt = prompt_of(456, 3);  // 14 whole blocks and 8 tokens
  EngineOptions opt = with_ssd_and_chunk(dir.path(), 32);  // one block read a step
  const Output want = run_and_spill(prompt, 5, opt);
  opt.ctx_size = 512;
  opt.kv_budget = 17 * kv_block_bytes();
  opt.max_batch = 4;
  // The holder takes 16 of the 17 blocks until it ends, 20 short steps
  // later; the two requests sent meanwhile are then admitted in one step
  // and fill the budget (2 and 15 blocks), until the older one's third
  // block, a few steps in, is the restoring one's to give, after it read
  // some. Sent again should the holder end before both were queued (a
  // descheduled test): then they are not admitted together.
  bool together = false;
  for (int attempt = 0; attempt < 5 && !together; ++attempt) {
    Engine engine(LlamaModel::load(kModel), opt);
    auto holder = engine.submit(greedy_request(prompt_of(490, 5), 20));
    ASSERT_TRUE(holder->next());
    auto older = engine.submit(greedy_request(prompt_of(63, 4), 10));
    auto restoring = engine.submit(greedy_request(prompt, 5));
    together = engine.stats().generated_tokens_total < 20;  // the holder had not ended
    drain(*holder);
    drain(*older);
    const Output got = drain(*restoring);
    expect_same(got, want);
    EXPECT_EQ(got.info.cached_tokens, 14 * 32) << "attempt " << attempt;
    if (together) {
      EXPECT_EQ(got.info.preemptions, 1);
      EXPECT_EQ(engine.cache_stats()->restored_blocks, 14) << "what it read before, attached again";
    }
    expect_kv_returned(engine);
  }
  EXPECT_TRUE(together) << "the holder ended before both requests were queued, five times";
}

TEST(PromptCacheSsd, ACorruptBlockIsSkippedAndRecomputed) {
  TempDir dir;
  const auto prompt = prompt_of(100, 3);
  const Output want = run_and_spill(prompt, 10, with_ssd(dir.path()));
  // Flip a payload byte of every block on disk.
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path()))
    if (e.path().extension() == ".kvb") files.push_back(e.path());
  ASSERT_EQ(files.size(), 3u);  // 100 prompt + 9 fed tokens
  for (const auto& f : files) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(-100, std::ios::end);
    io.put('\x5a');
  }
  Engine second(LlamaModel::load(kModel), with_ssd(dir.path()));
  const Output again = run(second, prompt, 10);
  EXPECT_EQ(again.info.cached_tokens, 0);  // the first block fails its checksum
  expect_same(again, want);
  EXPECT_EQ(second.cache_stats()->hits, 0);  // found on disk, but nothing was reused
  EXPECT_EQ(second.cache_stats()->misses, 1);
  EXPECT_EQ(second.ssd_stats()->skipped, 3);  // the blocks are read together: each is found bad and removed
  expect_kv_returned(second);
}

TEST(PromptCacheSsd, IdleBlocksLeaveRamOnceDurableAndComeBack) {
  TempDir dir;
  EngineOptions opt = with_ssd(dir.path());
  opt.ssd_demote_idle_seconds = 0;
  Engine engine(LlamaModel::load(kModel), opt);
  const auto prompt = prompt_of(80, 5);
  const Output first = run(engine, prompt, 10);
  engine.flush_cache();
  // The engine demotes at least once a second while idle: wait for both blocks.
  for (int i = 0; i < 1000 && (engine.cache_stats()->entries > 0 || engine.cache_stats()->demotions < 2); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(engine.cache_stats()->entries, 0);
  EXPECT_EQ(engine.cache_stats()->demotions, 2);
  const Output again = run(engine, prompt, 10);
  EXPECT_EQ(again.info.cached_tokens, 64);
  expect_same(again, first);
  expect_kv_returned(engine);
}

// Int8 entries (codes, then scales) go to disk and come back as they were:
// a restarted engine continues as the int8 engine itself did, and an engine
// keeping BF16 entries in the same directory takes none of them.
TEST(PromptCacheSsd, Int8EntriesComeBackFromDiskForInt8EnginesOnly) {
  TempDir dir;
  EngineOptions cold_opt{.threads = 2, .prompt_cache = 0}, opt = with_ssd(dir.path());
  cold_opt.kv_type = opt.kv_type = DType::I8;
  const auto prompt = prompt_of(100);
  const Output want = run(*std::make_unique<Engine>(LlamaModel::load(kModel), cold_opt), prompt, 20);
  const Output bf16_want = run(*cold_engine(), prompt, 20);
  ASSERT_EQ(bf16_want.logprobs.size(), want.logprobs.size());
  float moved = 0;  // the entries really are int8
  for (size_t i = 0; i < want.logprobs.size(); ++i)
    moved = std::max(moved, std::fabs(want.logprobs[i] - bf16_want.logprobs[i]));
  EXPECT_GT(moved, 1e-3f);
  {
    Engine first(LlamaModel::load(kModel), opt);
    expect_same(run(first, prompt, 20), want);
    ASSERT_TRUE(first.flush_cache());
  }
  {
    Engine second(LlamaModel::load(kModel), opt);
    const Output again = run(second, prompt, 20);
    EXPECT_EQ(again.info.cached_tokens, 96);
    expect_same(again, want);
    EXPECT_EQ(second.ssd_stats()->restores, 3);
  }
  Engine bf16(LlamaModel::load(kModel), with_ssd(dir.path()));
  EXPECT_EQ(bf16.longest_durable_prefix_tokens(), 0);
  EXPECT_EQ(run(bf16, prompt, 20).info.cached_tokens, 0);
}

TEST(PromptCacheSsd, TheDirectoryServesOneEngine) {
  TempDir dir;
  Engine first(LlamaModel::load(kModel), with_ssd(dir.path()));
  try {
    Engine second(LlamaModel::load(kModel), with_ssd(dir.path()));
    FAIL() << "a second engine opened a locked directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another hearth server"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hearth
