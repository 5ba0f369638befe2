#include "engine/stop_matcher.h"

#include <utility>

namespace hearth {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (s.empty()) continue;
    // KMP's failure function: border[i] is the length of the longest proper
    // prefix of s[0..i] that is also its suffix.
    std::vector<uint32_t> border(s.size(), 0);
    for (size_t i = 1, k = 0; i < s.size(); ++i) {
      while (k > 0 && s[i] != s[k]) k = border[k - 1];
      if (s[i] == s[k]) ++k;
      border[i] = uint32_t(k);
    }
    stops_.push_back({std::move(s), std::move(border)});
  }
}

// Runs stop's automaton on from its state over the new text: the end of
// its first occurrence in the text (npos if none). Each byte is read once,
// however long the stops: a find over the held text and a suffix check per
// length were a square of a stop's length per token.
size_t StopMatcher::advance(Stop& stop, std::string_view text) {
  const std::string& s = stop.text;
  size_t& k = stop.matched;
  for (size_t i = 0; i < text.size(); ++i) {
    while (k > 0 && text[i] != s[k]) k = stop.border[k - 1];
    if (text[i] == s[k] && ++k == s.size()) return i + 1;
  }
  return std::string::npos;
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});

  // The earliest stop string in the buffer wins (the longest, if several
  // start there); else hold back the longest tail that may begin one.
  size_t first = std::string::npos, keep = 0;
  const size_t text_at = held_.size() - text.size();
  for (Stop& s : stops_) {
    if (const size_t end = advance(s, text); end != std::string::npos) {
      const size_t at = text_at + end - s.text.size();  // the held text holds what came before
      if (at < first || (at == first && s.text.size() > matched_.size())) {
        first = at;
        matched_ = s.text;
      }
    }
    keep = std::max(keep, s.matched);
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
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
