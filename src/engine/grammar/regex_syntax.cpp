#include "engine/grammar/regex_syntax.h"

#include <optional>
#include <string>

namespace hearth::grammar::regex {

namespace {

constexpr int32_t kMaxCount = 100000;  // the largest {n,m} taken
// A pattern's size and group nesting: the parser, the emitter and the
// matcher recurse along them (a million '(' or 'a?' overflowed a stack).
constexpr size_t kMaxPatternBytes = 8192;
constexpr int kMaxGroupDepth = 64;

CharSet digits() { return CharSet::of('0', '9'); }
CharSet word() {
  CharSet s = CharSet::of('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}
CharSet space() {  // ECMAScript WhiteSpace and LineTerminator
  CharSet s = CharSet::of('\t', '\r');
  for (char32_t c : {U' ', U'\u00A0', U'\u1680', U'\u2028', U'\u2029', U'\u202F', U'\u205F', U'\u3000', U'\uFEFF'})
    s.add(c, c);
  s.add(0x2000, 0x200A);
  return s;
}
CharSet dot() {  // anything but a line terminator
  CharSet s = CharSet::of('\n', '\n');
  s.add('\r', '\r');
  s.add(0x2028, 0x2029);
  return s.negated();
}

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = uint8_t(s[i]);
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + size_t(len) > s.size()) error("the pattern is not valid UTF-8");
    char32_t cp = len == 1 ? c : c & (0x3F >> (len - 1));
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (uint8_t(s[i + size_t(k)]) & 0x3F);
    if (cp > kMaxCodePoint) error("the pattern is not valid UTF-8");
    out.push_back(cp);
    i += size_t(len);
  }
  return out;
}

// A recursive-descent parser of the ECMAScript pattern grammar (with the
// web-compatibility leniencies of Annex B: a lone { ] } is a literal).
class Parser {
 public:
  explicit Parser(std::u32string p) : p_(std::move(p)) {}

  Node parse() {
    Node n = disjunction();
    if (i_ < p_.size()) error("unmatched ')'");
    return n;
  }

 private:
  bool at(char32_t c) const { return i_ < p_.size() && p_[i_] == c; }
  bool at(std::u32string_view s) const { return p_.compare(i_, s.size(), s) == 0; }
  char32_t next() {
    if (i_ >= p_.size()) error("the pattern ends inside an escape or group");
    return p_[i_++];
  }

  Node disjunction() {
    Node alt{Node::Kind::Alt};
    alt.kids.push_back(alternative());
    while (at(U'|')) {
      ++i_;
      alt.kids.push_back(alternative());
    }
    return alt;
  }

  Node alternative() {
    Node seq{Node::Kind::Seq};
    while (i_ < p_.size() && !at(U'|') && !at(U')')) seq.kids.push_back(term());
    return seq;
  }

  Node term() {
    Node atom = this->atom();
    if (!quantifier_here()) return atom;
    if (atom.kind == Node::Kind::Start || atom.kind == Node::Kind::End) error("a quantifier after ^ or $");
    Node rep{Node::Kind::Repeat};
    std::tie(rep.min, rep.max) = quantifier();
    if (at(U'?')) ++i_;  // lazy: the same strings
    rep.kids.push_back(std::move(atom));
    if (quantifier_here()) error("nothing to repeat (two quantifiers in a row)");
    return rep;
  }

  Node atom() {
    const char32_t c = next();
    switch (c) {
      case U'^': return Node{Node::Kind::Start};
      case U'$': return Node{Node::Kind::End};
      case U'.': return chars(dot());
      case U'[': return chars(char_class());
      case U'(': return group();
      case U'*': case U'+': case U'?': error("nothing to repeat");
      case U'{':
        --i_;
        if (quantifier_here()) error("nothing to repeat");
        ++i_;
        return chars(CharSet::of(c, c));
      case U'\\': {
        if (at(U'b') || at(U'B')) error("word boundaries (\\b, \\B) are not supported");
        if (i_ < p_.size() && p_[i_] >= U'1' && p_[i_] <= U'9') error("backreferences are not supported");
        if (at(U'k')) error("named backreferences (\\k) are not supported");
        return chars(escape());
      }
      default: return chars(CharSet::of(c, c));
    }
  }

  static Node chars(CharSet s) {
    Node n{Node::Kind::Chars};
    n.chars = std::move(s);
    return n;
  }

  Node group() {
    if (at(U"?=") || at(U"?!")) error("lookahead ((?=, (?!) is not supported");
    if (at(U"?<=") || at(U"?<!")) error("lookbehind ((?<=, (?<!) is not supported");
    if (at(U"?:")) {
      i_ += 2;
    } else if (at(U"?<")) {
      const size_t close = p_.find(U'>', i_);
      if (close == std::u32string::npos) error("unterminated group name");
      i_ = close + 1;
    } else if (at(U'?')) {
      error("unknown group syntax (?");
    }
    if (++depth_ > kMaxGroupDepth)
      error("groups nest deeper than " + std::to_string(kMaxGroupDepth) + " levels");
    Node body = disjunction();
    if (!at(U')')) error("unterminated group");
    ++i_;
    --depth_;
    return body;
  }

  bool quantifier_here() const {
    if (at(U'*') || at(U'+') || at(U'?')) return true;
    if (!at(U'{')) return false;
    size_t k = i_ + 1;
    const size_t digits_from = k;
    while (k < p_.size() && p_[k] >= U'0' && p_[k] <= U'9') ++k;
    if (k == digits_from) return false;
    if (k < p_.size() && p_[k] == U',') {
      ++k;
      while (k < p_.size() && p_[k] >= U'0' && p_[k] <= U'9') ++k;
    }
    return k < p_.size() && p_[k] == U'}';
  }

  std::pair<int32_t, int32_t> quantifier() {
    const char32_t c = next();
    if (c == U'*') return {0, -1};
    if (c == U'+') return {1, -1};
    if (c == U'?') return {0, 1};
    const int32_t lo = count();
    int32_t hi = lo;
    if (at(U',')) {
      ++i_;
      hi = at(U'}') ? -1 : count();
    }
    ++i_;  // '}'
    if (hi >= 0 && hi < lo) error("numbers out of order in a {} quantifier");
    return {lo, hi};
  }

  int32_t count() {
    int64_t n = 0;
    while (i_ < p_.size() && p_[i_] >= U'0' && p_[i_] <= U'9') {
      n = n * 10 + (p_[i_++] - U'0');
      if (n > kMaxCount) error("a {} quantifier above " + std::to_string(kMaxCount) + " is not supported");
    }
    return int32_t(n);
  }

  CharSet char_class() {
    const bool negate = at(U'^');
    if (negate) ++i_;
    CharSet::Ranges members;
    auto add = [&](char32_t c, const std::optional<CharSet>& s) {
      if (s)
        members.insert(members.end(), s->ranges().begin(), s->ranges().end());
      else
        members.emplace_back(c, c);
    };
    while (!at(U']')) {
      if (i_ >= p_.size()) error("unterminated character class");
      auto [lo, lo_set] = class_atom();
      if (at(U'-') && i_ + 1 < p_.size() && p_[i_ + 1] != U']') {
        ++i_;
        auto [hi, hi_set] = class_atom();
        if (lo_set || hi_set) {  // Annex B: [\d-x] is \d, '-' and x
          add(lo, lo_set);
          members.emplace_back(U'-', U'-');
          add(hi, hi_set);
          continue;
        }
        if (hi < lo) error("range out of order in a character class");
        members.emplace_back(lo, hi);
      } else {
        add(lo, lo_set);
      }
    }
    ++i_;
    const CharSet set = CharSet::of(std::move(members));
    return negate ? set.negated() : set;
  }

  // One class member: a character, or a set (\d, \w, \s and negations).
  std::pair<char32_t, std::optional<CharSet>> class_atom() {
    const char32_t c = next();
    if (c != U'\\') return {c, std::nullopt};
    if (i_ < p_.size() && p_[i_] >= U'1' && p_[i_] <= U'9') error("octal escapes are not supported");
    CharSet s = escape();
    const auto& r = s.ranges();
    if (r.size() == 1 && r[0].first == r[0].second) return {r[0].first, std::nullopt};
    return {0, std::move(s)};
  }

  // After a backslash: a class escape or one character.
  CharSet escape() {
    const char32_t c = next();
    auto one = [](char32_t x) { return CharSet::of(x, x); };
    switch (c) {
      case U'd': return digits();
      case U'D': return digits().negated();
      case U'w': return word();
      case U'W': return word().negated();
      case U's': return space();
      case U'S': return space().negated();
      case U'n': return one(U'\n');
      case U'r': return one(U'\r');
      case U't': return one(U'\t');
      case U'v': return one(U'\v');
      case U'f': return one(U'\f');
      case U'b': return one(U'\b');  // backspace: outside a class, atom() refused \b
      case U'0':
        if (i_ < p_.size() && p_[i_] >= U'0' && p_[i_] <= U'9') error("octal escapes are not supported");
        return one(0);
      case U'c': {
        const char32_t l = next();
        if (!((l >= U'a' && l <= U'z') || (l >= U'A' && l <= U'Z'))) error("\\c must be followed by a letter");
        return one(l % 32);
      }
      case U'x': {
        if (i_ + 2 > p_.size() || hex(p_[i_]) < 0 || hex(p_[i_ + 1]) < 0) return one(U'x');  // Annex B
        const char32_t v = char32_t(hex(p_[i_]) * 16 + hex(p_[i_ + 1]));
        i_ += 2;
        return one(v);
      }
      case U'u': {
        if (at(U'{')) error("\\u{...} escapes are not supported");
        const auto code_unit = [&]() -> int32_t {
          if (i_ + 4 > p_.size()) return -1;
          int32_t v = 0;
          for (size_t k = 0; k < 4; ++k) {
            if (hex(p_[i_ + k]) < 0) return -1;
            v = v * 16 + hex(p_[i_ + k]);
          }
          i_ += 4;
          return v;
        };
        const int32_t v = code_unit();
        if (v < 0) return one(U'u');  // Annex B
        if (v >= 0xD800 && v <= 0xDBFF && at(U"\\u")) {  // a surrogate pair
          const size_t mark = i_;
          i_ += 2;
          const int32_t low = code_unit();
          if (low >= 0xDC00 && low <= 0xDFFF) return one(char32_t(0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)));
          i_ = mark;
        }
        return one(char32_t(v));
      }
      case U'p': case U'P': error("Unicode property escapes (\\p{...}) are not supported");
      default: return one(c);  // an identity escape: \. \/ \- \$ ...
    }
  }

  static int hex(char32_t c) {
    if (c >= U'0' && c <= U'9') return int(c - U'0');
    if (c >= U'a' && c <= U'f') return int(c - U'a' + 10);
    if (c >= U'A' && c <= U'F') return int(c - U'A' + 10);
    return -1;
  }

  std::u32string p_;
  size_t i_ = 0;
  int depth_ = 0;  // groups open
};

}  // namespace

Node parse(std::string_view pattern) {
  if (pattern.size() > kMaxPatternBytes)
    error("the pattern is longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  return Parser(decode_utf8(pattern)).parse();
}

}  // namespace hearth::grammar::regex
