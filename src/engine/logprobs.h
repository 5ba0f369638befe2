// Log-probabilities under the raw model distribution (the log-softmax of a
// row of logits, before any sampling processor or filter), as the OpenAI
// logprobs fields report them.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace hearth {

// log p(token), and in `top` the k most likely tokens (id, log p), best
// first; of tokens with equal logits the lower id comes first. NaN logits
// are never among the top.
float token_logprobs(std::span<const float> logits, int32_t token, int k,
                     std::vector<std::pair<int32_t, float>>& top);

}  // namespace hearth
