// A duration for a message, as a person would write it: "3 s", "0.25 s",
// "1.5 s" (six significant digits; std::to_string would say "3.000000").
#pragma once

#include <cstdio>
#include <string>

namespace hearth {

inline std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

}  // namespace hearth
