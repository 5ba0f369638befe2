#include <gtest/gtest.h>

#include <random>

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

// The matcher as it was written first (a search of the held text per
// piece, a suffix comparison per length), as the reference for the linear
// one on random text over a small alphabet: many near misses and overlaps.
struct NaiveStops {
  std::vector<std::string> stops;
  std::string held, matched;
  bool stopped = false;
  std::string push(std::string_view text) {
    if (stopped) return {};
    held.append(text);
    size_t first = std::string::npos;
    for (const auto& s : stops) {
      const size_t at = held.find(s);
      if (at < first || (at == first && at != std::string::npos && s.size() > matched.size())) {
        first = at;
        matched = s;
      }
    }
    if (first != std::string::npos) {
      stopped = true;
      return held.substr(0, first);
    }
    size_t keep = 0;
    for (const auto& s : stops)
      for (size_t len = std::min(s.size() - 1, held.size()); len > keep; --len)
        if (held.compare(held.size() - len, len, s, 0, len) == 0) {
          keep = len;
          break;
        }
    std::string out = held.substr(0, held.size() - keep);
    held.erase(0, held.size() - keep);
    return out;
  }
};

TEST(StopMatcher, AgreesWithTheQuadraticMatcherOnRandomInput) {
  std::mt19937 rng(3);
  auto random_text = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += "ab"[rng() % 2];
    return s;
  };
  for (int round = 0; round < 5000; ++round) {
    std::vector<std::string> stops;
    for (int i = 0, n = 1 + int(rng() % 3); i < n; ++i) stops.push_back(random_text(1 + rng() % 6));
    const std::string text = random_text(rng() % 40);
    StopMatcher m(stops);
    NaiveStops naive{stops};
    for (size_t i = 0; i < text.size();) {
      const size_t n = 1 + rng() % 4;
      ASSERT_EQ(m.push(text.substr(i, n)), naive.push(text.substr(i, n))) << round;
      ASSERT_EQ(m.stopped(), naive.stopped) << round;
      ASSERT_EQ(m.held(), naive.stopped ? 0 : naive.held.size()) << round;
      if (m.stopped()) {
        EXPECT_EQ(m.matched(), naive.matched);
        break;
      }
      i += n;
    }
  }
}

// Long stop strings over text that nearly matches them: each byte is read
// once per stop (a search of the held text and a suffix check per length
// were billions of comparisons per token here).
TEST(StopMatcher, LongStopsCostTheTextNotTheirSquare) {
  StopMatcher m({std::string(50000, 'a') + "b", std::string(200000, 'a') + "X"});
  std::string out;
  for (int i = 0; i < 100000; ++i) out += m.push("aaaa");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.held(), 200000u);  // the longest tail that may begin the second
  EXPECT_EQ(out.size(), 200000u);
  out += m.push("X");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched().size(), 200001u);
  EXPECT_EQ(out.size(), 400000u - 200000u);
}

}  // namespace
}  // namespace hearth
