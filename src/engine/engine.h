// The engine: one thread that owns the model, the KV pool, the prompt cache
// and the scheduler, running continuous batching. Requests come in through
// submit() (any thread); each step runs one ragged batch in which new
// requests prefill their prompt and running ones decode a token; tokens go
// back through each request's own channel (RequestHandle). No lock is held
// across a model step.
//
// Every request follows one rule: the tokens of its history (prompt, then
// what it generated) that are not in its KV yet are fed, a chunk per step,
// and when the last one is in, a token is sampled. A prefix found in the
// prompt cache is attached instead of computed; a request preempted for
// KV memory frees its blocks and later resumes the same way, mostly from
// the blocks it published to the cache.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cache/prefix_cache.h"
#include "engine/decoding.h"
#include "engine/generation_checkpoints.h"
#include "engine/memory_plan.h"
#include "engine/sampler.h"
#include "engine/step_timing.h"
#include "io/pooling_config.h"
#include "model/llama.h"

namespace hearth {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, special tokens included
  SamplingParams sampling;
  int64_t max_tokens = -1;        // -1: until a stop token or the context is full
  std::vector<int32_t> stop_ids;  // generation ends after emitting one of these
  int top_logprobs = -1;          // -1: no logprobs; 0: the chosen token's; k: and the top k
  std::string session;            // the conversation this continues ("": none)
  // Structured output: only tokens the grammar allows are sampled, and the
  // stop ids only once it is complete (engine/grammar/).
  std::optional<grammar::Constraint> constraint;
  // Set: an embedding request. Nothing is generated; once the prompt is in,
  // the pooled final hidden state comes back in FinishInfo::embedding.
  std::optional<io::Pooling> embed;
};

struct TokenEvent {
  int32_t token = 0;
  float logprob = 0;                           // log p(token), raw model distribution
  std::vector<std::pair<int32_t, float>> top;  // (id, log p), best first
};

struct FinishInfo {
  FinishReason reason = FinishReason::Length;
  std::string error;  // set when the request failed inside the engine
  bool request_fault = false;  // the error is the request's own (its output grammar), not the engine's
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens taken from the prompt cache, not computed
  std::vector<float> embedding;  // an embedding request's pooled hidden state (not normalized)
  int preemptions = 0;        // times it gave its KV back and resumed later
  double queue_seconds = 0, prefill_seconds = 0, decode_seconds = 0;
};

// One request's channel. The engine pushes; the client pulls.
class RequestHandle {
 public:
  // Blocks for the next token; nullopt once the request has finished
  // (then finish() says how).
  std::optional<TokenEvent> next();
  // Asks the engine to stop this request at its next step; its KV is freed.
  // cancel(): the client is gone (it finishes as cancelled); stop(): the
  // client has what it wants, e.g. a stop string matched (it finishes as
  // stopped, even if cancel() follows).
  void cancel() { cancelled_ = true; }
  void stop() { stop_requested_ = true; }
  bool cancelled() const { return cancelled_; }
  bool stop_requested() const { return stop_requested_; }
  bool ends_early() const { return cancelled_ || stop_requested_; }
  const FinishInfo& finish() const { return finish_; }

 private:
  friend class Engine;
  void push(TokenEvent ev);
  void close(FinishInfo info);

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<TokenEvent> events_;
  bool closed_ = false;
  FinishInfo finish_;
  std::atomic<bool> cancelled_{false}, stop_requested_{false};
};

// Thrown by submit() when the queue is at its limit.
struct QueueFull : std::runtime_error {
  QueueFull() : std::runtime_error("the request queue is full") {}
};

struct EngineOptions {
  int threads = 0;              // 0: physical cores
  int64_t ctx_size = 0;         // 0: the model's max_position_embeddings
  std::optional<DType> kv_type{};  // KV cache entries, F32, BF16 or I8; empty: the model's native_kv_type
  size_t kv_budget = 0;         // KV pool bytes; 0: 85% of the memory available, less the weights
  int64_t prompt_cache = -1;    // bytes the prompt cache may index; -1: half the pool; 0: off
  cache::Retention retention = cache::Retention::Lru;
  // The prompt cache's SSD tier (needs the RAM cache): off while ssd_dir is empty.
  std::filesystem::path ssd_dir{};
  uint64_t ssd_max_bytes = 0;             // 0: half the free space plus the cache's records (ssd_store.h)
  uint64_t ssd_queue_bytes = 2ull << 30;  // write-behind queue cap
  double ssd_demote_idle_seconds = 300;   // idle blocks leave RAM once on disk
  // A cancelled deterministic request that generated at least this many
  // tokens is kept for resumption (generation_checkpoints.h); 0: never.
  int64_t generation_checkpoint_tokens = 16;
  // Memory pressure: below this much available memory the prompt cache
  // gives blocks back to the system; 0: 15% of the machine's memory.
  size_t min_available_bytes = 0;
  int max_queue = 64;           // waiting requests beyond the running ones
  int max_batch = 8;            // sequences decoded together
  int64_t prefill_chunk = 512;  // prompt tokens per sequence per step
  int64_t step_tokens = 512;    // tokens per step, all sequences together (decode rows first); >= max_batch
  // While streams decode, a step's prompt chunks are sized so that it takes
  // about this long (at least a block of them a step; step_timing.h); 0:
  // step_tokens alone.
  double step_seconds = 0.25;
};

struct EngineStats {
  int64_t queued = 0, running = 0;
  int64_t requests_total = 0, requests_rejected = 0, requests_cancelled = 0, requests_failed = 0;
  int64_t prompt_tokens_total = 0, generated_tokens_total = 0;
  // cached: held only by the prompt cache (counted once a second, and whenever the engine goes idle)
  int64_t kv_blocks_total = 0, kv_blocks_free = 0, kv_blocks_cached = 0;
  int64_t sequences = 0;  // KV sequences alive
  size_t kv_bytes = 0;
  int64_t steps = 0, preemptions = 0;
  int64_t pressure_evictions = 0;  // cache blocks given back to the system under memory pressure
  int64_t cached_tokens_total = 0;  // prompt tokens attached from the cache instead of computed
  int64_t checkpoints = 0, checkpoints_saved = 0, checkpoints_resumed = 0;
};

class Engine {
 public:
  Engine(std::unique_ptr<LlamaModel> model, const EngineOptions& options);
  ~Engine();  // cancels everything in flight and joins the thread

  // Validates (prompt non-empty and shorter than the context, or for an
  // embedding no longer than it; token ids in the vocabulary; an output head
  // for generation: std::invalid_argument) and queues (QueueFull).
  std::shared_ptr<RequestHandle> submit(GenerationRequest request);

  // Stops taking requests, cancels the queued and running ones, joins.
  void shutdown();

  EngineStats stats() const;
  // nullopt when the prompt cache (or its SSD tier) is off.
  std::optional<cache::PrefixCacheStats> cache_stats() const;
  std::optional<cache::SsdStoreStats> ssd_stats() const;
  int64_t longest_durable_prefix_tokens() const;
  // Waits until every block published so far is durable on SSD.
  std::optional<cache::SsdFlushResult> flush_cache();
  const AdmissionInfo& admission() const { return admission_; }
  const EngineOptions& options() const { return options_; }
  // Drops a session's checkpoint (not its blocks); false if there was none.
  bool close_session(const std::string& id);
  const LlamaModel& model() const { return *model_; }
  int64_t ctx_size() const { return ctx_size_; }
  int threads() const { return pool_.size(); }

 private:
  struct Active;
  using Running = std::vector<std::unique_ptr<Active>>;
  void loop();
  bool start(Active& a);
  // The history's longest cached prefix: its blocks in RAM attached, those
  // on SSD past them noted for read_back (none for mean or first pooling).
  std::optional<cache::PrefixMatch> attach_cached_prefix(Active& a);
  bool free_blocks(int64_t blocks);  // evicts cache blocks until `blocks` are free, if it can
  bool make_room(int64_t blocks, Running& running, const Active& asking);
  // Moves whenever room for a waiting request may have come: a pool
  // reference dropped (a block freed, or left to the cache alone) or a
  // block indexed (its prefix may now be cached). A request that found no
  // room is not tried again before it moves.
  uint64_t room_epoch() const;
  void preempt(std::unique_ptr<Active> a);
  // Gives the request's KV back (its blocks stay in the prompt cache), on
  // finishing, preemption or no room at admission. A request that reused
  // no block yet stays undecided (Active::reuse_pending) through it.
  void release_sequence(Active& a);
  void drop_abandoned();  // ends the queued requests whose client has gone
  static FinishReason early_end(const RequestHandle& h);  // how a request asked to end early ends
  // How many tokens each request feeds this step, and how many blocks it
  // reads back; shares first what other requests computed of its prompt.
  void plan_step(Running& running);
  void step(Running& running);
  // Reads back the blocks plan_step gave a request from the SSD tier.
  void read_back(Active& a);
  // Indexes the request's blocks that filled up to `computed` since the
  // last call, and moves its session there (with the prompt cache on).
  void publish_blocks(Active& a);
  // After the request took blocks from the cache (attached, read back,
  // shared): counts its prompt tokens up to `computed` past
  // Active::accounted as cached, in its FinishInfo and the engine's total,
  // and a request whose reuse was pending as a hit.
  void count_cached(Active& a);
  // Shares up to `max` blocks from `computed` on that the cache indexed
  // since the request's lookup (another request computed or read them
  // back) in place of its own unwritten ones; how many.
  size_t share_indexed(Active& a, size_t max);
  // Before a prompt chunk is computed: shares what other requests computed
  // of it meanwhile (a burst of requests with one new prefix computes it
  // once).
  void share_computed(Active& a);
  // Whether a request before running[i] computes in this step the block
  // running[i] would compute next; then it waits a step and shares it.
  bool computed_by_another(const Running& running, size_t i) const;
  void pause_ssd_writes(bool pause);  // the SSD writer waits while restores read
  // Decides a request's pending cache hit or miss (Active::reuse_pending).
  void count_reuse(Active& a, bool reused);
  // One forward over the requests' next tokens (throws only if it fails),
  // then each request advances on its own.
  void run_batch(std::span<Active* const> batch);
  void finish(Active& a, FinishReason reason, std::string error = {});
  // After the forward: publishes the row's new blocks, samples when its
  // history is all in, and sends the token.
  void advance(Active& a, int64_t fed, std::span<const float> logits);
  // The same for an embedding request: pools the row's hidden states, and
  // finishes once the prompt is all in.
  void advance_embedding(Active& a, int64_t fed, std::span<const float> hidden);
  void update_kv_stats(bool count_cached);  // count_cached: the reclaimable blocks too (a scan)
  void housekeeping();  // once a second: tidy_cache(), which must not end the loop
  void tidy_cache();     // SSD demotion, memory pressure

  std::unique_ptr<LlamaModel> model_;
  EngineOptions options_;
  int64_t ctx_size_;
  ThreadPool pool_;
  AdmissionInfo admission_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<cache::SsdStore> ssd_;       // outlives cache_, which writes to it
  bool ssd_paused_ = false;                    // the engine thread's
  std::unique_ptr<cache::PrefixCache> cache_;  // null when the prompt cache is off
  GenerationCheckpoints checkpoints_;
  StepTiming step_timing_;  // the engine thread's

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Active>> queue_;
  bool stopping_ = false;
  EngineStats stats_;
  // Engine-thread scratch for step(), reused so a warm step allocates nothing.
  std::vector<BatchRow> step_rows_;
  std::vector<Active*> step_batch_;
  std::vector<float> step_logits_, step_hidden_;
  std::thread thread_;
};

}  // namespace hearth
