#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "core/elapsed.h"

namespace hearth {

namespace {

// Releases the sequence's KV whatever way the run ends.
struct SequenceGuard {
  KvCache& kv;
  int seq;
  ~SequenceGuard() { kv.release(seq); }
};
}  // namespace

FinishReason Generator::run(std::span<const int32_t> prompt, const GenerateOptions& options,
                            const TokenCallback& on_token, GenerateStats* stats) {
  if (prompt.empty()) throw std::invalid_argument("the prompt is empty");
  const int64_t vocab = model_.config().vocab_size;
  const int64_t ctx =
      options.ctx_size > 0 ? options.ctx_size : model_.config().max_position_embeddings;
  if (int64_t(prompt.size()) >= ctx)
    throw std::invalid_argument("the prompt has " + std::to_string(prompt.size()) +
                                " tokens; the context holds " + std::to_string(ctx));
  SequenceGuard seq{kv_, kv_.create_sequence()};
  Decoding decoding({prompt.begin(), prompt.end()}, options.sampling,
                    {options.eos_ids, options.max_tokens, ctx}, options.constraint);
  GenerateStats local;
  GenerateStats& st = stats ? *stats : local;
  st = {};
  st.prompt_tokens = int64_t(prompt.size());

  auto t0 = std::chrono::steady_clock::now();
  // The caller sizes the pool for the context (the engine budgets it).
  auto forward = [&](const BatchRow& row) {
    if (!kv_.reserve(row.seq, kv_.length(row.seq) + int64_t(row.tokens.size())))
      throw std::runtime_error("the KV pool is out of blocks");
    model_.forward(pool_, kv_, std::span(&row, 1), logits_);
  };
  forward(BatchRow{seq.seq, prompt, options.prompt_logits != nullptr});
  if (options.prompt_logits) *options.prompt_logits = logits_;
  st.prefill_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  FinishReason reason = FinishReason::Length;
  while (options.max_tokens != 0) {
    std::span<const float> last(logits_.data() + logits_.size() - size_t(vocab), size_t(vocab));
    const auto chosen_at = std::chrono::steady_clock::now();
    int32_t token = decoding.next(last, &pool_);
    st.choosing_seconds += seconds_since(chosen_at);
    st.generated_tokens = decoding.generated_tokens();
    if (!on_token(token, last)) {
      reason = FinishReason::Cancelled;
      break;
    }
    if (decoding.finished()) {
      reason = *decoding.finished();
      break;
    }
    forward(BatchRow{seq.seq, std::span(&token, 1), false});
  }
  st.decode_seconds = seconds_since(t0);
  return reason;
}

}  // namespace hearth
