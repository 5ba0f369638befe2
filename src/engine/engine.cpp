#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace hearth {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
// KV pool: enough for max_batch full contexts, capped at this many bytes.
constexpr size_t kDefaultKvBudget = size_t(4) << 30;
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

struct Engine::Active {
  GenerationRequest request;
  std::shared_ptr<RequestHandle> handle;
  Decoding decoding;
  int seq = -1;
  int64_t prefilled = 0;  // prompt tokens already in the KV cache
  int32_t pending = -1;   // the last sampled token, fed at the next step
  Clock::time_point submitted, admitted, first_token;
  FinishInfo info;

  Active(GenerationRequest r, std::shared_ptr<RequestHandle> h, int64_t ctx_size)
      : request(std::move(r)),
        handle(std::move(h)),
        // The prompt moves into the decoding state; request.prompt is empty after.
        decoding(std::move(request.prompt), request.sampling,
                 {request.stop_ids, request.max_tokens, ctx_size}),
        submitted(Clock::now()) {}
  bool prefilling() const { return prefilled < decoding.prompt_tokens(); }
};

Engine::Engine(std::unique_ptr<LlamaModel> model, const EngineOptions& options)
    : model_(std::move(model)),
      options_(options),
      ctx_size_(options.ctx_size > 0
                    ? std::min<int64_t>(options.ctx_size, model_->config().max_position_embeddings)
                    : model_->config().max_position_embeddings),
      pool_(options.threads > 0 ? options.threads : ThreadPool::default_threads()) {
  KvCacheShape shape = model_->kv_shape(options.kv_type);
  int64_t per_seq = (ctx_size_ + shape.block_tokens - 1) / shape.block_tokens;
  int64_t blocks = std::min<int64_t>(per_seq * std::max(1, options_.max_batch),
                                     KvCache::blocks_for_bytes(shape, kDefaultKvBudget));
  kv_ = std::make_unique<KvCache>(shape, std::max<int64_t>(blocks, per_seq));
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
  if (n == 0) throw std::invalid_argument("the prompt is empty");
  if (n >= ctx_size_)
    throw std::invalid_argument("the prompt has " + std::to_string(n) +
                                " tokens; the context holds " + std::to_string(ctx_size_) +
                                ", leaving no room to generate");
  for (int32_t id : request.prompt)
    if (id < 0 || id >= model_->config().vocab_size)
      throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary");
  auto handle = std::make_shared<RequestHandle>();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw std::runtime_error("the engine is shutting down");
    if (int64_t(queue_.size()) >= options_.max_queue) {
      ++stats_.requests_rejected;
      throw QueueFull();
    }
    ++stats_.requests_total;
    queue_.push_back(std::make_unique<Active>(std::move(request), handle, ctx_size_));
    stats_.queued = int64_t(queue_.size());
  }
  wake_.notify_all();
  return handle;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Engine::loop() {
  std::vector<std::unique_ptr<Active>> running;
  auto finish = [&](Active& a, FinishReason reason, std::string error = {}) {
    a.info.reason = reason;
    a.info.error = std::move(error);
    a.info.prompt_tokens = a.decoding.prompt_tokens();
    a.info.generated_tokens = a.decoding.generated_tokens();
    a.info.queue_seconds = seconds_between(a.submitted, a.admitted);
    auto now = Clock::now();
    bool got_first = a.first_token != Clock::time_point{};
    a.info.prefill_seconds = seconds_between(a.admitted, got_first ? a.first_token : now);
    a.info.decode_seconds = got_first ? seconds_between(a.first_token, now) : 0;
    if (a.seq >= 0) kv_->release(a.seq);
    a.seq = -1;
    std::lock_guard lock(mutex_);
    if (reason == FinishReason::Cancelled) ++stats_.requests_cancelled;
    --stats_.running;
    stats_.kv_blocks_free = kv_->blocks_free();
    a.handle->close(a.info);
  };

  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running.empty(); });
      if (stopping_) {
        stats_.running += int64_t(queue_.size());  // each is finished (cancelled) below
        for (auto& a : queue_) running.push_back(std::move(a));
        queue_.clear();
      }
    }
    if (stopping_) {
      for (auto& a : running) finish(*a, FinishReason::Cancelled, "the server is shutting down");
      return;
    }
    // Admit waiting requests while there is a batch slot and KV for the prompt.
    {
      std::lock_guard lock(mutex_);
      while (!queue_.empty() && int(running.size()) < options_.max_batch) {
        Active& a = *queue_.front();
        int64_t need =
            (a.decoding.prompt_tokens() + kv_->shape().block_tokens) / kv_->shape().block_tokens;
        if (!a.handle->cancelled() && need > kv_->blocks_free()) break;
        std::unique_ptr<Active> next = std::move(queue_.front());
        queue_.pop_front();
        next->admitted = Clock::now();
        running.push_back(std::move(next));
        ++stats_.running;
      }
      stats_.queued = int64_t(queue_.size());
    }
    for (auto& a : running)
      if (a->seq < 0 && !a->handle->cancelled()) a->seq = kv_->create_sequence();

    // Drop cancelled requests before spending a step on them.
    for (auto& a : running)
      if (a->handle->cancelled()) finish(*a, FinishReason::Cancelled);
    std::erase_if(running, [](const auto& a) { return a->seq < 0; });
    if (running.empty()) continue;

    try {
      step(running);
    } catch (const std::exception& e) {
      for (auto& a : running)
        if (a->seq >= 0) finish(*a, FinishReason::Stop, std::string("engine error: ") + e.what());
    }
    // Finish what ended in this step (step() marks them by setting pending = -2).
    for (auto& a : running)
      if (a->seq >= 0 && a->pending == -2) finish(*a, a->info.reason);
    std::erase_if(running, [](const auto& a) { return a->seq < 0; });
    {
      std::lock_guard lock(mutex_);
      stats_.kv_blocks_free = kv_->blocks_free();
      ++stats_.steps;
    }
  }
}

void Engine::step(std::vector<std::unique_ptr<Active>>& running) {
  const int64_t vocab = model_->config().vocab_size;
  // Step scratch lives in the engine so a warm step allocates nothing.
  std::vector<BatchRow>& rows = step_rows_;
  std::vector<Active*>& owners = step_owners_;
  std::vector<int32_t>& single = step_single_;
  rows.clear();
  owners.clear();
  single.resize(running.size());
  for (size_t i = 0; i < running.size(); ++i) {
    Active& a = *running[i];
    std::span<const int32_t> tokens;
    if (a.prefilling()) {
      int64_t n =
          std::min<int64_t>(options_.prefill_chunk, a.decoding.prompt_tokens() - a.prefilled);
      tokens = a.decoding.prompt().subspan(size_t(a.prefilled), size_t(n));
    } else {
      single[i] = a.pending;
      tokens = std::span(&single[i], 1);
    }
    if (!kv_->reserve(a.seq, kv_->length(a.seq) + int64_t(tokens.size()))) {
      // Out of KV memory: this sequence cannot grow; end it as at the context limit.
      a.info.reason = FinishReason::Length;
      a.pending = -2;
      continue;
    }
    rows.push_back(BatchRow{a.seq, tokens, false});
    owners.push_back(&a);
  }
  if (rows.empty()) return;

  std::vector<float>& logits = step_logits_;
  model_->forward(pool_, *kv_, rows, logits);
  {
    std::lock_guard lock(mutex_);
    for (const auto& r : rows) {
      if (owners[&r - rows.data()]->prefilling())
        stats_.prompt_tokens_total += int64_t(r.tokens.size());
    }
  }

  for (size_t r = 0; r < rows.size(); ++r) {
    Active& a = *owners[r];
    if (a.prefilling()) {
      a.prefilled += int64_t(rows[r].tokens.size());
      if (a.prefilling()) continue;  // more prompt chunks to go
    }
    const std::span<const float> row_logits(logits.data() + r * size_t(vocab), size_t(vocab));
    TokenEvent ev;
    ev.token = a.decoding.next(row_logits);
    if (a.request.top_logprobs >= 0) {
      float m = *std::max_element(row_logits.begin(), row_logits.end());
      double sum = 0;
      for (float l : row_logits) sum += std::exp(double(l) - m);
      const float lse = m + float(std::log(sum));
      ev.logprob = row_logits[ev.token] - lse;
      int k = std::min<int>(a.request.top_logprobs, int(vocab));
      std::vector<int32_t>& order = step_order_;
      order.resize(static_cast<size_t>(vocab));
      for (int64_t v = 0; v < vocab; ++v) order[v] = int32_t(v);
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int32_t x, int32_t y) { return row_logits[x] > row_logits[y]; });
      for (int i = 0; i < k; ++i) ev.top.push_back({order[i], row_logits[order[i]] - lse});
    }
    if (a.first_token == Clock::time_point{}) a.first_token = Clock::now();
    a.pending = ev.token;
    a.handle->push(std::move(ev));
    {
      std::lock_guard lock(mutex_);
      ++stats_.generated_tokens_total;
    }
    if (a.decoding.finished()) {
      a.info.reason = *a.decoding.finished();
      a.pending = -2;
    }
  }
}

}  // namespace hearth
