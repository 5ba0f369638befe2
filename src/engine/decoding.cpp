#include "engine/decoding.h"

#include <algorithm>
#include <utility>

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

Decoding::Decoding(std::vector<int32_t> prompt, const SamplingParams& sampling, StopRules rules)
    : sampler_(sampling),
      rules_(std::move(rules)),
      prompt_tokens_(int64_t(prompt.size())),
      history_(std::move(prompt)) {}

int32_t Decoding::next(std::span<const float> logits) {
  scratch_.assign(logits.begin(), logits.end());
  const int32_t token = sampler_.sample(scratch_, history_);
  history_.push_back(token);
  if (std::find(rules_.stop_ids.begin(), rules_.stop_ids.end(), token) != rules_.stop_ids.end())
    finished_ = FinishReason::Stop;
  else if ((rules_.max_tokens >= 0 && generated_tokens() >= rules_.max_tokens) ||
           int64_t(history_.size()) >= rules_.ctx_size)  // prompt + output fill the context
    finished_ = FinishReason::Length;
  return token;
}

}  // namespace hearth
