// How long the engine's steps take, so that prompt chunks can be sized to
// keep a step that decoding streams share near a target: on a CPU that
// prefills 200 tokens a second, a step carrying a 512-token chunk holds
// every running stream for 2.5 s. A step is modelled as a fixed part (the
// decode rows: the weights streamed once, each row's attention) plus a cost
// per prompt token, each a moving average of the steps measured (a single
// slow step's weight bounded, and the fixed part also corrected by steps
// with prompt tokens, which a steady flow of prompts leaves the only ones).
#pragma once

#include <cstdint>

namespace hearth {

class StepTiming {
 public:
  // A step of `prompt_tokens` prompt-chunk tokens (0: decode rows alone)
  // that took `seconds`.
  void record(double seconds, int64_t prompt_tokens);
  // The prompt tokens a step may carry beside its decode rows to take
  // about `target_seconds`: at least `floor`, at most `ceiling`, which is
  // also the answer before any step with prompt tokens was measured.
  int64_t prompt_budget(double target_seconds, int64_t floor, int64_t ceiling) const;

 private:
  double decode_seconds_ = 0;        // a step of decode rows alone
  double prompt_token_seconds_ = 0;  // each prompt token more
};

}  // namespace hearth
