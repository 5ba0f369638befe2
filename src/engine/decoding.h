// One sequence's decoding state, shared by the batching engine and the
// single-sequence generator: the sampler, the history (prompt, then the
// generated tokens) that its penalties look at, and the rules that end
// generation (a stop token, the token limit, a full context).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/sampler.h"

namespace hearth {

enum class FinishReason { Stop, Length, Cancelled };
const char* finish_reason_name(FinishReason r);

struct StopRules {
  std::vector<int32_t> stop_ids;  // generation ends after emitting one of these
  int64_t max_tokens = -1;        // -1: no limit but the context
  int64_t ctx_size = 0;           // prompt + output may fill this many positions
};

class Decoding {
 public:
  Decoding(std::vector<int32_t> prompt, const SamplingParams& sampling, StopRules rules);

  // Samples the next token from one row of logits (left untouched) and
  // appends it to the history; finished() then says whether it was the last.
  int32_t next(std::span<const float> logits);
  std::optional<FinishReason> finished() const { return finished_; }

  std::span<const int32_t> history() const { return history_; }
  std::span<const int32_t> prompt() const { return history().first(size_t(prompt_tokens_)); }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t generated_tokens() const { return int64_t(history_.size()) - prompt_tokens_; }

 private:
  Sampler sampler_;
  StopRules rules_;
  int64_t prompt_tokens_;
  std::vector<int32_t> history_;
  std::vector<float> scratch_;  // the sampler's working copy of the logits
  std::optional<FinishReason> finished_;
};

}  // namespace hearth
