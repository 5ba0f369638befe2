#include "engine/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace hearth {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});

  // The earliest stop string in the buffer wins.
  size_t first = std::string::npos;
  for (const auto& s : stops_) {
    size_t at = held_.find(s);
    if (at < first || (at == first && at != std::string::npos && s.size() > matched_.size())) {
      first = at;
      matched_ = s;
    }
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }

  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    size_t longest = std::min(s.size() - 1, held_.size());
    for (size_t len = longest; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

}  // namespace hearth
