// A duration for a message, as a person would write it: "3 s", "0.25 s",
// "1000000 s" (to the millisecond; std::to_string would say "3.000000",
// and %g "1e+06").
#pragma once

#include <cstdio>
#include <string>

namespace hearth {

inline std::string seconds_text(double seconds) {
  char text[48];
  std::snprintf(text, sizeof text, "%.3f", seconds);
  std::string s = text;
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s + " s";
}

}  // namespace hearth
