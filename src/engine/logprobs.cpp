#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>

#include "core/simd_sampling.h"

namespace hearth {

float token_logprobs(std::span<const float> logits, int32_t token, int k,
                     std::vector<std::pair<int32_t, float>>& top) {
  const int64_t n = int64_t(logits.size());
  const float lse = float(simd::log_sum_exp(logits.data(), n));
  top.clear();
  // The k best in one pass, as a heap whose front is the worst kept: a later
  // token must beat it strictly, so of equal logits the lower ids stay.
  auto better = [&](const std::pair<int32_t, float>& a, const std::pair<int32_t, float>& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  };
  for (int32_t id = 0; k > 0 && id < n; ++id) {
    const float l = logits[size_t(id)];
    if (int(top.size()) < k) {
      if (std::isnan(l)) continue;
      top.emplace_back(id, l);
      std::push_heap(top.begin(), top.end(), better);
    } else if (l > top.front().second) {
      std::pop_heap(top.begin(), top.end(), better);
      top.back() = {id, l};
      std::push_heap(top.begin(), top.end(), better);
    }
  }
  std::sort_heap(top.begin(), top.end(), better);
  for (auto& [id, l] : top) l -= lse;
  return logits[size_t(token)] - lse;
}

}  // namespace hearth
