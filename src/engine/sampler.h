// Turns a row of logits into the next token. Follows mlx-lm's sampler: the
// filters (top_p, min_p, top_k) act on the model's own distribution, then
// the survivors are sampled at the given temperature. temperature 0 is greedy.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

namespace hearth {

struct SamplingParams {
  float temperature = 1.0f;
  float top_p = 1.0f;  // 1: off
  int top_k = 0;       // 0: off
  float min_p = 0.0f;  // 0: off
  std::optional<uint64_t> seed;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // logits is scratch: the sampler may overwrite it.
  int32_t sample(std::span<float> logits);

  static int32_t argmax(std::span<const float> logits);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> order_;
  std::vector<double> weights_;
};

}  // namespace hearth
