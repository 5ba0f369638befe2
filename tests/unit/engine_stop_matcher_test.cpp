#include <gtest/gtest.h>

#include "engine/stop_matcher.h"

namespace hearth {
namespace {

// Feeds pieces and returns everything emitted (including the final flush).
std::string run(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.push(p);
  return out + m.flush();
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m;
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.push(""), "");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopInsideOnePiece) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("hello END world"), "hello ");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "END");
  EXPECT_EQ(m.push("more"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, StopAcrossPiecesIsNeverEmittedInPart) {
  StopMatcher m({"\n\n"});
  EXPECT_EQ(m.push("line\n"), "line");  // the newline might start the stop string
  EXPECT_EQ(m.held(), 1u);
  EXPECT_EQ(m.push("\nnext"), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, HeldTailIsReleasedWhenItTurnsOutHarmless) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("a ST"), "a ");
  EXPECT_EQ(m.push("OR"), "STOR");  // no tail of "a STOR" starts STOP
  EXPECT_EQ(m.push("y S"), "y ");
  EXPECT_EQ(m.flush(), "S");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w", "xyz"});
  EXPECT_EQ(run(m, {"hel", "lo", " wor", "ld"}), "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopMatcher, OverlappingPrefixes) {
  StopMatcher m({"aab"});
  EXPECT_EQ(run(m, {"a", "a", "a", "b", "c"}), "a");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, MultiByteText) {
  StopMatcher m({"é!"});
  EXPECT_EQ(m.push("café"), "caf");
  EXPECT_EQ(m.push("?"), "é?");
  EXPECT_EQ(m.push("é"), "");
  EXPECT_EQ(m.push("!"), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  StopMatcher m({""});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, ConcatenationEqualsInputUpToTheStop) {
  const std::string text = "the quick brown fox jumps over the lazy dog";
  for (size_t cut = 1; cut < 7; ++cut) {
    StopMatcher m({"lazy", "fox j"});
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size(); i += cut) pieces.push_back(text.substr(i, cut));
    EXPECT_EQ(run(m, pieces), "the quick brown ");
  }
}

}  // namespace
}  // namespace hearth
