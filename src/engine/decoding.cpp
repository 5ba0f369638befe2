#include "engine/decoding.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
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

Decoding::Decoding(std::vector<int32_t> prompt, const SamplingParams& sampling, StopRules rules,
                   const std::optional<grammar::Constraint>& constraint)
    : sampler_(sampling),
      rules_(std::move(rules)),
      prompt_tokens_(int64_t(prompt.size())),
      history_(std::move(prompt)) {
  if (constraint) matcher_.emplace(constraint->grammar, constraint->vocabulary);
}

bool Decoding::is_stop(int32_t token) const {
  return std::find(rules_.stop_ids.begin(), rules_.stop_ids.end(), token) != rules_.stop_ids.end();
}

void Decoding::constrain(std::span<const float> logits, std::span<float> out) {
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
  mask_.resize(matcher_->vocabulary().mask_words());
  if (matcher_->must_end())
    std::fill(mask_.begin(), mask_.end(), 0u);
  else
    matcher_->fill_mask(mask_);
  // Ids past the tokenizer's vocabulary (a padded embedding) are refused too.
  bool any = false;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool allowed = i / 32 < mask_.size() && (mask_[i / 32] >> (i % 32) & 1u);
    if (!allowed) out[i] = kRefused;
    any |= allowed;
  }
  // A stop id ends the output: only where the grammar may end (even a stop
  // id that is an ordinary token the grammar would take).
  const bool may_stop = matcher_->is_complete();
  for (int32_t id : rules_.stop_ids) {
    if (id < 0 || size_t(id) >= out.size()) continue;
    out[size_t(id)] = may_stop ? logits[size_t(id)] : kRefused;
    any |= may_stop;
  }
  if (!any) throw std::runtime_error("the output grammar allows no token here");
}

void Decoding::release_scratch() {
  sampler_.release_scratch();
  std::vector<float>().swap(scratch_);
  std::vector<uint32_t>().swap(mask_);
}

int32_t Decoding::next(std::span<const float> logits, ThreadPool* pool) {
  int32_t token;
  if (!matcher_ && !sampler_.params().has_processors()) {
    token = sampler_.choose(logits, pool);  // nothing changes the row, so no copy
  } else {
    scratch_.assign(logits.begin(), logits.end());
    if (matcher_) constrain(logits, scratch_);
    token = sampler_.sample(scratch_, history_, pool);
  }
  // Advances the grammar over the token (a stop id: only where it may end).
  auto take = [&](int32_t t) { return is_stop(t) ? matcher_->is_complete() : matcher_->accept(t); };
  if (matcher_ && !take(token)) {
    // The draw can land on a refused token only through rounding at the
    // end of its cumulative sum; the best allowed token replaces it.
    token = Sampler::argmax(scratch_);
    if (!take(token)) throw std::runtime_error("the output grammar refused the token");
  }
  history_.push_back(token);
  if (is_stop(token) || (matcher_ && matcher_->must_end() && rules_.stop_ids.empty()))
    finished_ = FinishReason::Stop;
  else if ((rules_.max_tokens >= 0 && generated_tokens() >= rules_.max_tokens) ||
           int64_t(history_.size()) >= rules_.ctx_size)  // prompt + output fill the context
    finished_ = FinishReason::Length;
  return token;
}

}  // namespace hearth
