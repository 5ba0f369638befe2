#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace hearth {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Cancelled:
      return "cancelled";
  }
  return "?";
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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
  const int64_t ctx = model_.config().max_position_embeddings;
  if (int64_t(prompt.size()) >= ctx)
    throw std::invalid_argument("the prompt has " + std::to_string(prompt.size()) +
                                " tokens; the context holds " + std::to_string(ctx));
  SequenceGuard seq{kv_, kv_.create_sequence()};
  Sampler sampler(options.sampling);
  GenerateStats local;
  GenerateStats& st = stats ? *stats : local;
  st.prompt_tokens = int64_t(prompt.size());

  auto t0 = std::chrono::steady_clock::now();
  BatchRow row{seq.seq, prompt, options.prompt_logits != nullptr};
  model_.forward(pool_, kv_, std::span(&row, 1), logits_);
  if (options.prompt_logits) *options.prompt_logits = logits_;
  st.prefill_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  FinishReason reason = FinishReason::Length;
  int32_t token = 0;
  history_.assign(prompt.begin(), prompt.end());  // the penalties look at prompt + output
  for (int64_t n = 0; options.max_tokens < 0 || n < options.max_tokens; ++n) {
    std::span<const float> last(logits_.data() + logits_.size() - size_t(vocab), size_t(vocab));
    scratch_.assign(last.begin(), last.end());
    token = sampler.sample(scratch_, history_);
    history_.push_back(token);
    ++st.generated_tokens;
    if (!on_token(token, last)) {
      reason = FinishReason::Cancelled;
      break;
    }
    if (std::find(options.eos_ids.begin(), options.eos_ids.end(), token) != options.eos_ids.end()) {
      reason = FinishReason::Stop;
      break;
    }
    if (options.max_tokens >= 0 && n + 1 >= options.max_tokens) break;
    if (int64_t(history_.size()) >= ctx) break;  // prompt + output fill the context
    BatchRow next{seq.seq, std::span(&token, 1), false};
    model_.forward(pool_, kv_, std::span(&next, 1), logits_);
  }
  st.decode_seconds = seconds_since(t0);
  return reason;
}

}  // namespace hearth
