// The engine's lifecycle: requests submitted, admitted with their cached
// prefix, preempted and finished, and the loop that runs the steps
// (engine_step.cpp) and the prompt cache's housekeeping
// (engine_prompt_cache.cpp).
#include "engine/engine.h"

#include "cache/model_namespace.h"
#include "core/elapsed.h"
#include "engine/engine_active.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace hearth {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

// ---- RequestHandle ----

std::optional<TokenEvent> RequestHandle::next() {
  std::unique_lock lock(mutex_);
  ready_.wait(lock, [&] { return !events_.empty() || closed_; });
  if (events_.empty()) return std::nullopt;
  TokenEvent ev = std::move(events_.front());
  events_.pop_front();
  return ev;
}

void RequestHandle::push(TokenEvent ev) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(ev));
  }
  ready_.notify_all();
}

void RequestHandle::close(FinishInfo info) {
  {
    std::lock_guard lock(mutex_);
    finish_ = std::move(info);
    closed_ = true;
  }
  ready_.notify_all();
}

// ---- Engine ----

Engine::Engine(std::unique_ptr<LlamaModel> model, const EngineOptions& options)
    : model_(std::move(model)),
      options_(options),
      pool_(options.threads > 0 ? options.threads : ThreadPool::default_threads()) {
  // A step below one token per batch row would leave prompts no room: a
  // full batch of decoding streams would stall every prefill behind it.
  if (options.max_batch < 1) throw std::invalid_argument("the batch size must be at least 1");
  if (options.prefill_chunk < 1) throw std::invalid_argument("the prefill chunk must be at least 1 token");
  if (options.step_tokens < options.max_batch)
    throw std::invalid_argument("the step token budget (" + std::to_string(options.step_tokens) +
                                ") must be at least the batch size (" + std::to_string(options.max_batch) + ")");
  const KvCacheShape shape = model_->kv_shape(options.kv_type.value_or(model_->native_kv_type()));
  admission_ = plan_memory({model_->weight_bytes(), memory_available(), options.kv_budget, shape,
                            model_->config().max_position_embeddings, options.ctx_size,
                            options.ssd_dir.empty() ? 0 : options.ssd_queue_bytes});
  kv_ = std::make_unique<KvCache>(shape, admission_.kv_blocks);
  ctx_size_ = admission_.enforced_context_tokens;
  const int64_t cache_bytes = options.prompt_cache >= 0 ? options.prompt_cache : int64_t(kv_->bytes() / 2);
  if (!options.ssd_dir.empty() && cache_bytes == 0)
    throw std::invalid_argument("the SSD cache tier needs the prompt cache (it is off)");
  if (cache_bytes > 0) {
    const cache::BlockHash root = cache::root_hash(cache::model_namespace(*model_, shape));
    if (!options.ssd_dir.empty())
      ssd_ = std::make_unique<cache::SsdStore>(cache::SsdStoreOptions{
          options.ssd_dir, options.ssd_max_bytes, options.ssd_queue_bytes, root, kv_->block_bytes(),
          shape.block_tokens});
    cache_ = std::make_unique<cache::PrefixCache>(
        *kv_, root, cache::PrefixCacheOptions{size_t(cache_bytes), options.retention}, ssd_.get(), &pool_);
  }
  stats_.kv_blocks_total = stats_.kv_blocks_free = kv_->blocks_total();
  stats_.kv_bytes = kv_->bytes();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  shutdown();
}

void Engine::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<RequestHandle> Engine::submit(GenerationRequest request) {
  const int64_t n = int64_t(request.prompt.size());
  const bool embed = request.embed.has_value();
  if (n == 0) throw std::invalid_argument(embed ? "the input is empty" : "the prompt is empty");
  if (embed && n > ctx_size_)
    throw std::invalid_argument("the input has " + std::to_string(n) + " tokens; the context holds " +
                                std::to_string(ctx_size_));
  if (!embed && n >= ctx_size_)
    throw std::invalid_argument("the prompt has " + std::to_string(n) +
                                " tokens; the context holds " + std::to_string(ctx_size_) +
                                ", leaving no room to generate");
  if (!embed && request.max_tokens == 0)  // (sampling comes before the limit's check)
    throw std::invalid_argument("max_tokens must be at least 1, or -1 for no limit");
  if (!embed && !model_->has_output_head())
    throw std::invalid_argument("this checkpoint has no output head (lm_head): it serves embeddings only");
  for (int32_t id : request.prompt)
    if (id < 0 || id >= model_->config().vocab_size)
      throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary");
  auto handle = std::make_shared<RequestHandle>();
  std::optional<uint64_t> key;
  if (options_.generation_checkpoint_tokens > 0 && !embed) key = GenerationCheckpoints::key(request);
  auto active = std::make_unique<Active>(std::move(request), handle, ctx_size_);
  active->checkpoint_key = key;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw std::runtime_error("the engine is shutting down");
    // Free batch slots count as room too: a burst that fits the batch and
    // the queue is taken whether or not the loop has admitted any of it yet.
    const int64_t free_slots = std::max<int64_t>(0, options_.max_batch - stats_.running);
    if (int64_t(queue_.size()) >= options_.max_queue + free_slots) {
      ++stats_.requests_rejected;
      throw QueueFull();
    }
    // Taken once the request is sure to be queued: one turned away leaves
    // it for its retry. Replayed before the engine can send anything.
    if (key)
      if (auto resumed = checkpoints_.take(*key, active->decoding.prompt())) {
        active->decoding = std::move(resumed->decoding);
        active->sent = std::move(resumed->events);
        for (const TokenEvent& ev : active->sent) handle->push(ev);
        active->first_token = Clock::now();
      }
    ++stats_.requests_total;
    queue_.push_back(std::move(active));
    stats_.queued = int64_t(queue_.size());
  }
  wake_.notify_all();
  return handle;
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard lock(mutex_);
    s = stats_;
  }
  s.checkpoints = checkpoints_.entries();
  s.checkpoints_saved = checkpoints_.saved();
  s.checkpoints_resumed = checkpoints_.resumed();
  return s;
}

bool Engine::start(Active& a) {
  // Attach the cached prefix of the history, then reserve the rest of it.
  const int64_t n = int64_t(a.history().size());
  a.seq = kv_->create_sequence();
  a.pooled.clear();
  a.on_disk = 0;
  a.chain.clear();
  const std::optional<cache::PrefixMatch> match = cache_ ? attach_cached_prefix(a) : std::nullopt;
  free_blocks(KvCache::blocks_for_tokens(kv_->shape(), n) - int64_t(kv_->blocks(a.seq).size()));
  if (!kv_->reserve(a.seq, n)) {
    release_sequence(a);  // the next try looks up again
    return false;
  }
  a.computed = kv_->length(a.seq);
  const bool first = !a.started;
  if (first) {
    a.started = true;
    a.admitted = Clock::now();
    // The prompt cache counts a request's lookup once, when it is first
    // admitted, not at each step it waits for room; one that found nothing
    // in RAM is decided by what it reuses (Active::reuse_pending).
    if (match) {
      cache_->count_admission(*match);
      a.reuse_pending = match->blocks.empty();
    }
  }
  count_cached(a);  // what it attached (not its own blocks again, after a preemption)
  return true;
}

void Engine::preempt(std::unique_ptr<Active> a) {
  // Its full blocks stay in the prompt cache, so resuming is mostly a hit.
  // Blocks it published before reusing any are its own: a miss.
  if (a->reuse_pending && a->published.blocks > 0) count_reuse(*a, false);
  release_sequence(*a);
  a->computed = 0;
  ++a->info.preemptions;
  std::unique_lock lock(mutex_);
  try {
    queue_.push_front(std::move(a));  // on failure (allocation) `a` is untouched
  } catch (const std::exception& e) {
    lock.unlock();
    finish(*a, FinishReason::Stop, std::string("engine error: ") + e.what());  // its reader is told
    return;
  }
  ++stats_.preemptions;
  --stats_.running;
  stats_.queued = int64_t(queue_.size());
}

bool Engine::free_blocks(int64_t blocks) {
  if (blocks > kv_->blocks_free() && cache_) cache_->evict(blocks - kv_->blocks_free());
  return blocks <= kv_->blocks_free();
}

uint64_t Engine::room_epoch() const {
  return kv_->references_dropped() + (cache_ ? cache_->blocks_indexed() : 0);
}

bool Engine::make_room(int64_t blocks, Running& running, const Active& asking) {
  // Cache blocks go first; then the youngest requests, the asking one last.
  while (!free_blocks(blocks) && running.back().get() != &asking) {
    std::unique_ptr<Active> victim = std::move(running.back());
    running.pop_back();
    preempt(std::move(victim));
  }
  return blocks <= kv_->blocks_free();
}

void Engine::housekeeping() {
  try {
    tidy_cache();
  } catch (const std::exception&) {  // (allocation) a pass that fails is tried again in a second
  }
}

void Engine::release_sequence(Active& a) {
  kv_->release(a.seq);
  a.seq = -1;
}

void Engine::update_kv_stats(bool count_cached) {
  // Counting the cache's reclaimable blocks scans its index: not every step.
  const int64_t cached = cache_ && count_cached ? cache_->reclaimable() : -1;
  std::lock_guard lock(mutex_);
  stats_.kv_blocks_free = kv_->blocks_free();
  if (cached >= 0) stats_.kv_blocks_cached = cached;
  stats_.sequences = kv_->sequences();
}

void Engine::finish(Active& a, FinishReason reason, std::string error) {
  a.info.reason = reason;
  a.info.error = std::move(error);
  a.info.prompt_tokens = a.decoding.prompt_tokens();
  a.info.generated_tokens = a.decoding.generated_tokens();
  auto now = Clock::now();
  if (!a.started) a.admitted = now;
  a.info.queue_seconds = seconds_between(a.submitted, a.admitted);
  bool got_first = a.first_token != Clock::time_point{};
  a.info.prefill_seconds = std::max(0.0, seconds_between(a.admitted, got_first ? a.first_token : now));
  a.info.decode_seconds = got_first ? seconds_between(a.first_token, now) : 0;
  if (reason == FinishReason::Cancelled && a.checkpoint_key && !a.decoding.finished() &&
      a.decoding.generated_tokens() >= options_.generation_checkpoint_tokens) {
    try {
      checkpoints_.save(*a.checkpoint_key, {a.decoding, std::move(a.sent)});
    } catch (const std::exception&) {  // (allocation) a retry then starts over; the request still ends
    }
  }
  if (a.reuse_pending) count_reuse(a, false);  // it ends before reusing any block
  if (a.seq >= 0) release_sequence(a);
  a.done = true;
  std::lock_guard lock(mutex_);
  if (reason == FinishReason::Cancelled) ++stats_.requests_cancelled;
  if (!a.info.error.empty()) ++stats_.requests_failed;
  --stats_.running;
  stats_.kv_blocks_free = kv_->blocks_free();
  a.handle->close(a.info);
}

void Engine::loop() {
  Running running;
  auto last_demotion = Clock::now();
  for (;;) {
    if (running.empty()) pause_ssd_writes(false);  // however the last step ended
    bool stop = false;
    {
      std::unique_lock lock(mutex_);
      auto ready = [&] { return stopping_ || !queue_.empty() || !running.empty(); };
      if (!cache_) wake_.wait(lock, ready);
      else if (!wake_.wait_for(lock, std::chrono::seconds(1), ready)) {  // idle: housekeeping, then wait again
        lock.unlock();
        housekeeping();
        last_demotion = Clock::now();
        update_kv_stats(true);
        continue;
      }
      stop = stopping_;  // read once, under the lock: what is queued now is all there is
      if (stop) {
        stats_.running += int64_t(queue_.size());  // each is finished (cancelled) below
        for (auto& a : queue_) running.push_back(std::move(a));
        queue_.clear();
      }
    }
    if (stop) {
      for (auto& a : running) finish(*a, early_end(*a->handle));  // cancelled, unless a stop string matched
      return;
    }
    drop_abandoned();
    // Admit waiting requests, oldest first, while there is a batch slot and
    // KV for the whole history (evicting cache blocks if need be). One that
    // found no room waits for room_epoch() to move, not trying each step
    // (a try looks the cache up, and may copy a block and scan its index).
    for (;;) {
      std::unique_ptr<Active> next;
      const uint64_t epoch = room_epoch();
      {
        std::lock_guard lock(mutex_);
        if (queue_.empty() || int(running.size()) >= options_.max_batch) break;
        if (!running.empty() && queue_.front()->no_room_at == epoch) break;
        next = std::move(queue_.front());
        queue_.pop_front();
        stats_.queued = int64_t(queue_.size());
        ++stats_.running;
      }
      bool admitted = false;
      try {
        admitted = next->handle->ends_early() || start(*next);
      } catch (const std::exception& e) {  // this request alone ends
        finish(*next, FinishReason::Stop, std::string("engine error: ") + e.what());
        continue;
      }
      if (admitted) {
        running.push_back(std::move(next));
        continue;
      }
      if (running.empty()) {  // it would never fit: fail it rather than retry forever
        finish(*next, FinishReason::Stop, "the KV cache cannot hold this request's history");
        continue;
      }
      next->no_room_at = room_epoch();
      std::lock_guard lock(mutex_);  // no room yet: it waits at the front
      --stats_.running;
      queue_.push_front(std::move(next));
      stats_.queued = int64_t(queue_.size());
      break;
    }

    // Drop cancelled and stopped requests before spending a step on them.
    for (auto& a : running)
      if (a->handle->ends_early()) finish(*a, early_end(*a->handle));
    std::erase_if(running, [](const auto& a) { return a->done; });
    if (running.empty()) {
      update_kv_stats(true);
      continue;
    }

    plan_step(running);
    // The SSD writer waits while a step reads blocks back: the reads hold up
    // a request, the writes (up to the queue's cap) nothing.
    const bool restoring = std::ranges::any_of(running, [](const auto& a) { return a->restoring > 0; });
    pause_ssd_writes(restoring);
    // Blocks for this step's tokens, oldest requests first: a request that
    // cannot grow takes them from the cache, then from younger requests.
    try {
      for (size_t i = 0; i < running.size(); ++i) {
        Active& a = *running[i];
        const int64_t want = a.computed + a.planned;
        const int64_t more = KvCache::blocks_for_tokens(kv_->shape(), want) - int64_t(kv_->blocks(a.seq).size());
        if (more > 0 && !make_room(more, running, a)) {
          std::unique_ptr<Active> self = std::move(running[i]);
          running.erase(running.begin() + ptrdiff_t(i));
          preempt(std::move(self));
          break;  // everything after it was younger and is gone already
        }
        kv_->reserve(a.seq, want);
      }
    } catch (const std::exception& e) {  // (allocation) as a failed step: these requests end, the engine goes on
      for (auto& a : running) finish(*a, FinishReason::Stop, std::string("engine error: ") + e.what());
      running.clear();
    }
    if (running.empty()) continue;

    // What the step-time model learns from: the prompt chunks left after
    // any preemption above (not the last-token rows, which are decode rows).
    int64_t prompt_tokens = 0;
    for (const auto& a : running)
      if (a->behind() > 1) prompt_tokens += a->planned;
    try {
      const auto began = Clock::now();
      step(running);
      if (!restoring) step_timing_.record(seconds_between(began, Clock::now()), prompt_tokens);  // (reads are not compute)
      std::lock_guard lock(mutex_);
      ++stats_.steps;
    } catch (const std::exception& e) {
      for (auto& a : running)
        if (!a->done) finish(*a, FinishReason::Stop, std::string("engine error: ") + e.what());
    }
    for (auto& a : running)
      if (a->done && a->seq >= 0) finish(*a, a->info.reason);
    std::erase_if(running, [](const auto& a) { return a->done; });
    const bool housekeeping_due = cache_ && seconds_between(last_demotion, Clock::now()) >= 1;
    if (housekeeping_due) {
      housekeeping();
      last_demotion = Clock::now();
    }
    update_kv_stats(housekeeping_due || running.empty());
  }
}

FinishReason Engine::early_end(const RequestHandle& h) {
  // A stop string that matched before the client left still ends it as stopped.
  return h.stop_requested() ? FinishReason::Stop : FinishReason::Cancelled;
}

void Engine::drop_abandoned() {
  // Waiting requests whose client has gone end now, not when a batch slot
  // frees: they would hold queue places and their readers meanwhile.
  std::vector<std::unique_ptr<Active>> gone;
  {
    std::lock_guard lock(mutex_);
    for (auto it = queue_.begin(); it != queue_.end();)
      if ((*it)->handle->ends_early()) {
        gone.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    stats_.queued = int64_t(queue_.size());
    stats_.running += int64_t(gone.size());  // finish() counts each out
  }
  for (auto& a : gone) finish(*a, early_end(*a->handle));
}

}  // namespace hearth
