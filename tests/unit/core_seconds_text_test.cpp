// Durations in messages: as a person writes them, never "3.000000" or "1e+06".
#include "core/seconds_text.h"

#include <gtest/gtest.h>

namespace hearth {
namespace {

TEST(SecondsText, WholeFractionalAndLargeDurations) {
  EXPECT_EQ(seconds_text(3), "3 s");
  EXPECT_EQ(seconds_text(0.3), "0.3 s");
  EXPECT_EQ(seconds_text(0.25), "0.25 s");
  EXPECT_EQ(seconds_text(10800), "10800 s");
  EXPECT_EQ(seconds_text(1e6), "1000000 s");
  EXPECT_EQ(seconds_text(1e9), "1000000000 s");
  EXPECT_EQ(seconds_text(0), "0 s");
  EXPECT_EQ(seconds_text(12345.0 / 16000), "0.772 s");  // to the millisecond
}

}  // namespace
}  // namespace hearth
