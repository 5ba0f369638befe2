// Stop strings on decoded text. Text goes in as it is decoded; what comes
// out is safe to show: it never contains a stop string or any part of one.
// A tail that could still grow into a stop string is held back until the
// next piece decides it, so a stop string is never streamed in part.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops = {});

  // Feeds the next piece of text and returns what may be emitted now. After
  // a stop string is found, returns the text before it and stopped() is
  // true; further pushes return "".
  std::string push(std::string_view text);
  // At the end of generation: the held-back tail ("" once stopped).
  std::string flush();

  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }  // the stop string found
  size_t held() const { return held_.size(); }             // bytes held back now

 private:
  struct Stop {
    std::string text;
    std::vector<uint32_t> border;  // KMP's failure function
    size_t matched = 0;            // the longest prefix of it the text so far ends with
  };
  static size_t advance(Stop& stop, std::string_view text);

  std::vector<Stop> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace hearth
