// One sequence's decoding state, shared by the batching engine and the
// single-sequence generator: the sampler, the history (prompt, then the
// generated tokens) that its penalties look at, and the rules that end
// generation (a stop token, the token limit, a full context), and the
// grammar that constrains the output, if there is one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/grammar/constraint.h"
#include "engine/grammar/matcher.h"
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
  Decoding(std::vector<int32_t> prompt, const SamplingParams& sampling, StopRules rules,
           const std::optional<grammar::Constraint>& constraint = std::nullopt);

  // Samples the next token from one row of logits (left untouched) and
  // appends it to the history; finished() then says whether it was the last.
  // With a grammar, the logits of tokens it refuses are -inf before the
  // sampler runs (so penalties, temperature and the filters work over the
  // allowed set); the stop ids are allowed only once the grammar is
  // complete, and are the only choice once it must end. Throws
  // std::runtime_error if the grammar allows no token at all. The sampler's
  // passes over the vocabulary may use `pool` (the draw does not depend on it).
  int32_t next(std::span<const float> logits, ThreadPool* pool = nullptr);
  std::optional<FinishReason> finished() const { return finished_; }

  std::span<const int32_t> history() const { return history_; }
  std::span<const int32_t> prompt() const { return history().first(size_t(prompt_tokens_)); }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t generated_tokens() const { return int64_t(history_.size()) - prompt_tokens_; }
  // Frees the per-token buffers (the sampler's, the grammar mask): for a
  // state kept idle, as a generation checkpoint is.
  void release_scratch();

 private:
  Sampler sampler_;
  StopRules rules_;
  int64_t prompt_tokens_;
  std::vector<int32_t> history_;
  std::vector<float> scratch_;  // the logits the grammar or the processors change (else none)
  std::optional<grammar::Matcher> matcher_;
  std::vector<uint32_t> mask_;  // scratch: the grammar's allowed tokens

  void constrain(std::span<const float> logits, std::span<float> out);
  bool is_stop(int32_t token) const;
  std::optional<FinishReason> finished_;
};

}  // namespace hearth
