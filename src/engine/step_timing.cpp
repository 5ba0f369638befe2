#include "engine/step_timing.h"

#include <algorithm>

namespace hearth {

namespace {

// The newest step's weight: a few steps follow a change of load (more
// streams, a longer context) without one slow step swinging the budget.
constexpr double kWeight = 0.25;
// A step taking more than this many times the average (the process was
// descheduled, a forward was retried row by row) counts as this much.
constexpr double kOutlier = 4;
// Fewer prompt tokens than this say more of noise than of their cost.
constexpr int64_t kMinPromptTokens = 16;

double average(double mean, double sample) {
  if (mean == 0) return sample;
  return mean + kWeight * (std::min(sample, kOutlier * mean) - mean);
}

}  // namespace

void StepTiming::record(double seconds, int64_t prompt_tokens) {
  if (prompt_tokens == 0) {
    decode_seconds_ = average(decode_seconds_, seconds);
    return;
  }
  if (prompt_tokens < kMinPromptTokens) return;
  // The fixed part is measured on decode-only steps, which a steady flow
  // of prompts leaves none of: a step that took less than it plus its
  // prompt tokens' cost shows it is too high (fewer streams decode now, or
  // one slow step counted), and pulls it down.
  if (prompt_token_seconds_ > 0) {
    const double fixed = std::max(0.0, seconds - prompt_token_seconds_ * double(prompt_tokens));
    if (fixed < decode_seconds_) decode_seconds_ = average(decode_seconds_, fixed);
  }
  const double per_token = (seconds - decode_seconds_) / double(prompt_tokens);
  if (per_token > 0) prompt_token_seconds_ = average(prompt_token_seconds_, per_token);
}

int64_t StepTiming::prompt_budget(double target_seconds, int64_t floor, int64_t ceiling) const {
  if (prompt_token_seconds_ == 0) return ceiling;
  const double tokens = (target_seconds - decode_seconds_) / prompt_token_seconds_;
  // Clamped as a double: a tiny per-token cost would overflow the integer.
  return int64_t(std::clamp(tokens, double(std::min(floor, ceiling)), double(ceiling)));
}

}  // namespace hearth
