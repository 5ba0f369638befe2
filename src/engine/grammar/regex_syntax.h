// The syntax tree of a JSON Schema `pattern` (an ECMAScript regular
// expression), as its parser builds it and regex.cpp turns it into grammar
// rules. Internal to src/engine/grammar.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/regex.h"

namespace hearth::grammar::regex {

constexpr char32_t kMaxCodePoint = 0x10FFFF;
constexpr int64_t kHuge = int64_t(1) << 40;  // lengths saturate here (nested counts)

[[noreturn]] inline void error(const std::string& what) { throw RegexError(what); }

// A set of code points as sorted, disjoint, non-adjacent ranges.
class CharSet {
 public:
  using Ranges = CodePoints;

  static CharSet of(char32_t lo, char32_t hi) {
    CharSet s;
    s.add(lo, hi);
    return s;
  }
  // Any ranges, sorted and merged once (a class of many members: adding
  // them one by one sorted the set each time).
  static CharSet of(Ranges ranges) {
    CharSet s;
    s.ranges_ = std::move(ranges);
    s.normalize();
    return s;
  }
  void add(char32_t lo, char32_t hi) {
    ranges_.emplace_back(lo, hi);
    normalize();
  }
  void add(const CharSet& other) {
    ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
    normalize();
  }
  CharSet negated() const {
    CharSet s;
    char32_t next = 0;
    for (const auto& [lo, hi] : ranges_) {
      if (lo > next) s.ranges_.emplace_back(next, lo - 1);
      next = hi + 1;
    }
    if (next <= kMaxCodePoint) s.ranges_.emplace_back(next, kMaxCodePoint);
    return s;
  }
  // Without the surrogates, which no JSON string holds (a UTF-8 string
  // cannot, and the grammar refuses \u escapes of them).
  CharSet encodable() const {
    CharSet out;
    for (const auto& [lo, hi] : ranges_) {
      if (hi < 0xD800 || lo > 0xDFFF) out.ranges_.emplace_back(lo, hi);
      else {
        if (lo < 0xD800) out.ranges_.emplace_back(lo, 0xD7FF);
        if (hi > 0xDFFF) out.ranges_.emplace_back(0xE000, hi);
      }
    }
    return out;
  }
  const Ranges& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }

 private:
  void normalize() {
    std::sort(ranges_.begin(), ranges_.end());
    Ranges merged;
    for (const auto& r : ranges_) {
      if (!merged.empty() && r.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, r.second);
      else merged.push_back(r);
    }
    ranges_ = std::move(merged);
  }
  Ranges ranges_;
};

struct Node {
  enum class Kind { Chars, Seq, Alt, Repeat, Start, End };
  explicit Node(Kind k) : kind(k) {}
  Kind kind;
  CharSet chars;
  std::vector<Node> kids;  // Seq, Alt: the parts; Repeat: the one repeated
  int32_t min = 1, max = 1;  // Repeat (max -1: no limit)
};

// Parses `pattern` (UTF-8) into one Alt node of the top-level alternatives,
// each a Seq. Throws RegexError for what is not supported, and for a pattern
// past the size and nesting the recursive passes over the tree can take.
Node parse(std::string_view pattern);

}  // namespace hearth::grammar::regex
