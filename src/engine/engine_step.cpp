// The engine's step: what each running request feeds (decode rows first,
// then prompt chunks held to the step's token and time budgets, SSD reads,
// prefixes shared from other requests), one forward over all of it, and
// each request's advance from its outputs (sampling, pooling, publishing
// its filled blocks to the prompt cache).
#include <algorithm>
#include <chrono>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_active.h"
#include "engine/grammar/grammar.h"
#include "engine/logprobs.h"

namespace hearth {

void Engine::plan_step(Running& running) {
  // Decode rows first, one token each, so running streams keep their pace;
  // then prompt chunks, oldest request first, from what is left of the
  // step's token budget (a request may wait a step for its turn). While
  // streams decode, the chunks are also held to what keeps the step near
  // step_seconds, so a slow CPU's long prefill does not stall them for
  // seconds at a time.
  // A prompt whose next blocks are on SSD reads them back instead, as many
  // as the tokens it could compute (at least one while budget is left).
  int64_t budget = options_.step_tokens, decode_rows = 0;
  for (auto& a : running) {
    a->planned = a->behind() == 1 ? 1 : 0;
    a->restoring = 0;
    decode_rows += a->planned;
  }
  budget -= decode_rows;
  const int64_t block_tokens = kv_->shape().block_tokens;
  int64_t compute = budget;
  if (decode_rows > 0 && options_.step_seconds > 0)
    compute = step_timing_.prompt_budget(options_.step_seconds, block_tokens, budget);
  // A prompt chunk another request computed since is shared, and one that
  // an older request computes in this step is waited for, then shared.
  for (size_t i = 0; i < running.size(); ++i) {
    Active& a = *running[i];
    if (a.behind() > 1 && a.on_disk == 0 && cache_) try {
        share_computed(a);
      } catch (const std::exception&) {  // (allocation) it computes what it did not share
      }
    if (a.behind() == 1 && a.planned == 0 && budget > 0) {  // shared up to its last token
      a.planned = 1;
      --budget;
    } else if (a.behind() > 1 && a.on_disk > 0) {
      const int64_t tokens = std::max<int64_t>(0, std::min(options_.prefill_chunk, budget));
      a.restoring = tokens > 0 ? std::min(a.on_disk, std::max<int64_t>(1, tokens / block_tokens)) : 0;
      budget -= a.restoring * block_tokens;
    } else if (a.behind() > 1 && !computed_by_another(running, i)) {
      a.planned = std::max<int64_t>(0, std::min({a.behind(), options_.prefill_chunk, budget, compute}));
      budget -= a.planned;
      compute -= a.planned;
    }
  }
}

void Engine::step(Running& running) {
  for (auto& a : running)
    if (a->restoring > 0) try {
        read_back(*a);
      } catch (const std::exception& e) {  // (allocation) this request alone ends
        finish(*a, FinishReason::Stop, std::string("engine error: ") + e.what());
      }
  std::vector<Active*>& batch = step_batch_;
  batch.clear();
  for (auto& a : running)
    if (a->planned > 0 && !a->done) batch.push_back(a.get());
  if (batch.empty()) return;  // a step of reads back only
  try {
    run_batch(batch);
  } catch (const std::exception&) {
    // The forward failed: run each request alone to find the one at fault;
    // the others go on, and only it ends, with the error.
    for (Active* a : batch) {
      kv_->set_length(a->seq, a->computed);  // the failed forward may have advanced it
      try {
        run_batch(std::span(&a, 1));
      } catch (const std::exception& e) {
        finish(*a, FinishReason::Stop, std::string("engine error: ") + e.what());
      }
    }
  }
}

void Engine::run_batch(std::span<Active* const> batch) {
  const int64_t vocab = model_->config().vocab_size;
  // Step scratch lives in the engine so a warm step allocates nothing.
  std::vector<BatchRow>& rows = step_rows_;
  rows.clear();
  int64_t prompt_fed = 0;
  for (Active* a : batch) {
    const int64_t n = a->planned;
    const bool embed = a->request.embed.has_value();
    rows.push_back(BatchRow{a->seq, a->history().subspan(size_t(a->computed), size_t(n)),
                            embed && *a->request.embed != io::Pooling::Last, embed});
    prompt_fed += std::max<int64_t>(0, std::min(a->computed + n, a->decoding.prompt_tokens()) - a->computed);
  }
  std::vector<float>&logits = step_logits_, &hidden = step_hidden_;
  model_->forward(pool_, *kv_, rows, logits, &hidden);
  {
    std::lock_guard lock(mutex_);
    stats_.prompt_tokens_total += prompt_fed;
  }
  const size_t width = size_t(model_->config().hidden_size);
  size_t logits_at = 0, hidden_at = 0;  // where the next row's outputs start
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t fed = int64_t(rows[r].tokens.size());
    const size_t n = rows[r].hidden ? size_t(rows[r].all_positions ? fed : 1) * width : size_t(vocab);
    size_t& at = rows[r].hidden ? hidden_at : logits_at;
    const size_t from = std::exchange(at, at + n);  // advanced first: a throwing row must not shift the next
    try {
      if (rows[r].hidden)
        advance_embedding(*batch[r], fed, std::span(hidden).subspan(from, n));
      else
        advance(*batch[r], fed, std::span(logits).subspan(from, n));
    } catch (const grammar::GrammarError& e) {  // its output grammar (too ambiguous): the client's error
      batch[r]->info.request_fault = true;
      finish(*batch[r], FinishReason::Stop, e.what());
    } catch (const std::exception& e) {  // this request's state is bad: it alone ends
      finish(*batch[r], FinishReason::Stop, std::string("engine error: ") + e.what());
    }
  }
}

void Engine::advance_embedding(Active& a, int64_t fed, std::span<const float> hidden) {
  const size_t width = size_t(model_->config().hidden_size);
  const io::Pooling pooling = *a.request.embed;
  if (pooling == io::Pooling::First && a.computed == 0) a.pooled.assign(hidden.begin(), hidden.begin() + ptrdiff_t(width));
  if (pooling == io::Pooling::Mean) {
    a.pooled.resize(width, 0.0f);
    for (size_t at = 0; at < hidden.size(); at += width)
      for (size_t j = 0; j < width; ++j) a.pooled[j] += hidden[at + j];
  }
  a.computed += fed;
  a.accounted = std::max(a.accounted, a.computed);
  publish_blocks(a);
  if (a.computed < int64_t(a.history().size())) return;
  if (pooling == io::Pooling::Last) a.pooled.assign(hidden.end() - ptrdiff_t(width), hidden.end());
  if (pooling == io::Pooling::Mean)
    for (float& v : a.pooled) v /= float(a.history().size());
  a.info.embedding = std::move(a.pooled);
  a.info.reason = FinishReason::Stop;
  a.done = true;
}

void Engine::advance(Active& a, int64_t fed, std::span<const float> logits) {
  a.computed += fed;
  a.accounted = std::max(a.accounted, a.computed);
  publish_blocks(a);  // blocks that filled become reusable at once (a follow-up turn hits them)
  if (a.computed < int64_t(a.history().size())) return;  // more history to feed first
  if (a.reuse_pending) count_reuse(a, false);  // its prompt is computed, none of it reused
  TokenEvent ev;
  ev.token = a.decoding.next(logits, &pool_);
  if (a.request.top_logprobs >= 0)
    ev.logprob = token_logprobs(logits, ev.token, a.request.top_logprobs, ev.top);
  if (a.first_token == std::chrono::steady_clock::time_point{}) a.first_token = std::chrono::steady_clock::now();
  if (a.checkpoint_key) a.sent.push_back(ev);
  a.handle->push(std::move(ev));
  {
    std::lock_guard lock(mutex_);
    ++stats_.generated_tokens_total;
  }
  if (a.decoding.finished()) {
    a.info.reason = *a.decoding.finished();
    a.done = true;
  }
}

}  // namespace hearth
