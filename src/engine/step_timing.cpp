#include "engine/step_timing.h"

#include <algorithm>

namespace hearth {

namespace {

// The newest step's weight: a few steps follow a change of load (more
// streams, a longer context) without one slow step swinging the budget.
constexpr double kWeight = 0.25;

double average(double mean, double sample) { return mean == 0 ? sample : mean + kWeight * (sample - mean); }

}  // namespace

void StepTiming::record(double seconds, int64_t prompt_tokens) {
  if (prompt_tokens == 0) {
    decode_seconds_ = average(decode_seconds_, seconds);
    return;
  }
  const double per_token = std::max(0.0, seconds - decode_seconds_) / double(prompt_tokens);
  if (per_token > 0) prompt_token_seconds_ = average(prompt_token_seconds_, per_token);
}

int64_t StepTiming::prompt_budget(double target_seconds, int64_t floor, int64_t ceiling) const {
  if (prompt_token_seconds_ == 0) return ceiling;
  const double tokens = (target_seconds - decode_seconds_) / prompt_token_seconds_;
  return std::clamp(tokens < double(ceiling) ? int64_t(tokens) : ceiling, std::min(floor, ceiling), ceiling);
}

}  // namespace hearth
