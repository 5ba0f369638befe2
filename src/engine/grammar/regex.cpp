#include "engine/grammar/regex.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/grammar/json_rules.h"

namespace hearth::grammar::regex {

namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;
constexpr int32_t kMaxCount = 100000;  // the largest {n,m} taken
// A pattern's size and group nesting: the parser, the emitter and the
// matcher recurse along them (a million '(' or 'a?' overflowed a stack).
constexpr size_t kMaxPatternBytes = 8192;
constexpr int kMaxGroupDepth = 64;
constexpr int64_t kHuge = int64_t(1) << 40;  // lengths saturate here (nested counts)

[[noreturn]] void error(const std::string& what) { throw RegexError(what); }

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

struct Node {
  enum class Kind { Chars, Seq, Alt, Repeat, Start, End };
  explicit Node(Kind k) : kind(k) {}
  Kind kind;
  CharSet chars;
  std::vector<Node> kids;  // Seq, Alt: the parts; Repeat: the one repeated
  int32_t min = 1, max = 1;  // Repeat (max -1: no limit)
};

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

// Collapses one-part sequences and alternations and splices nested
// sequences, so the length rules below see ^([a-z]+)$ as ^[a-z]+$.
Node simplify(Node n) {
  for (Node& k : n.kids) k = simplify(std::move(k));
  if ((n.kind == Node::Kind::Seq || n.kind == Node::Kind::Alt) && n.kids.size() == 1) return std::move(n.kids[0]);
  if (n.kind == Node::Kind::Seq) {
    std::vector<Node> flat;
    for (Node& k : n.kids) {
      if (k.kind == Node::Kind::Seq) std::move(k.kids.begin(), k.kids.end(), std::back_inserter(flat));
      else flat.push_back(std::move(k));
    }
    n.kids = std::move(flat);
  }
  return n;
}

bool has_anchor(const Node& n) {
  if (n.kind == Node::Kind::Start || n.kind == Node::Kind::End) return true;
  return std::any_of(n.kids.begin(), n.kids.end(), has_anchor);
}

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Chars: return false;
    case Node::Kind::Seq: return std::all_of(n.kids.begin(), n.kids.end(), nullable);
    case Node::Kind::Alt: return std::any_of(n.kids.begin(), n.kids.end(), nullable);
    case Node::Kind::Repeat: return n.min == 0 || n.max == 0 || nullable(n.kids[0]);
    default: return true;
  }
}

// The fewest and most characters a match takes (-1: no limit).
std::pair<int64_t, int64_t> lengths(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Chars: return {1, 1};
    case Node::Kind::Seq: {
      int64_t lo = 0, hi = 0;
      for (const Node& k : n.kids) {
        const auto [a, z] = lengths(k);
        lo = std::min(lo + a, kHuge);
        hi = hi < 0 || z < 0 ? -1 : std::min(hi + z, kHuge);
      }
      return {lo, hi};
    }
    case Node::Kind::Alt: {
      int64_t lo = INT64_MAX, hi = 0;
      for (const Node& k : n.kids) {
        const auto [a, z] = lengths(k);
        lo = std::min(lo, a);
        hi = hi < 0 || z < 0 ? -1 : std::max(hi, z);
      }
      return {n.kids.empty() ? 0 : lo, hi};
    }
    case Node::Kind::Repeat: {
      const auto [a, z] = lengths(n.kids[0]);
      const int64_t hi = n.max == 0 || z == 0 ? 0 : n.max < 0 || z < 0 ? -1 : std::min(z * n.max, kHuge);
      return {std::min(a * n.min, kHuge), hi};
    }
    default: return {0, 0};
  }
}

// One top-level alternative: anchored at the start and / or end, and its
// body as a sequence.
struct Branch {
  bool start = false, end = false;
  Node body{Node::Kind::Seq};
};

std::vector<Branch> branches(Node root) {
  std::vector<Branch> out;
  for (Node& alt : root.kids) {
    Branch br;
    auto& parts = alt.kids;
    size_t from = 0, to = parts.size();
    while (from < to && parts[from].kind == Node::Kind::Start) br.start = true, ++from;
    while (to > from && parts[to - 1].kind == Node::Kind::End) br.end = true, --to;
    Node body{Node::Kind::Seq};
    std::move(parts.begin() + long(from), parts.begin() + long(to), std::back_inserter(body.kids));
    if (has_anchor(body)) error("^ and $ are supported only at the start and end of the pattern or of a top-level alternative");
    body = simplify(std::move(body));
    if (body.kind != Node::Kind::Seq) {
      Node seq{Node::Kind::Seq};
      seq.kids.push_back(std::move(body));
      body = std::move(seq);
    }
    br.body = std::move(body);
    out.push_back(std::move(br));
  }
  return out;
}

// Fits a branch to minLength / maxLength; false if no string of the
// branch has a length in range.
bool fit_lengths(Branch& br, int64_t min_chars, int64_t max_chars) {
  auto [lo, hi] = lengths(br.body);
  if (!br.start || !br.end) hi = -1;
  const bool within = lo >= min_chars && (max_chars < 0 || (hi >= 0 && hi <= max_chars));
  if (within) return true;
  if (br.start && br.end) {
    Node* variable = nullptr;
    int64_t fixed = 0;
    bool simple = true;
    for (Node& k : br.body.kids) {
      const auto [a, z] = lengths(k);
      if (a == z) {
        fixed += a;
      } else if (!variable && k.kind == Node::Kind::Repeat && lengths(k.kids[0]).first == lengths(k.kids[0]).second &&
                 lengths(k.kids[0]).first > 0) {
        variable = &k;
      } else {
        simple = false;
      }
    }
    if (simple && !variable) return fixed >= min_chars && (max_chars < 0 || fixed <= max_chars);
    if (simple) {
      const int64_t w = lengths(variable->kids[0]).first;
      int64_t from = std::max<int64_t>(variable->min, (min_chars - fixed + w - 1) / w);
      int64_t to = variable->max;
      if (max_chars >= 0) {
        if (max_chars < fixed) return false;
        const int64_t most = (max_chars - fixed) / w;
        to = to < 0 ? most : std::min<int64_t>(to, most);
      }
      if (to >= 0 && from > to) return false;
      variable->min = int32_t(from);
      variable->max = int32_t(to);
      return true;
    }
  }
  error("pattern together with minLength / maxLength is supported only when the pattern is anchored (^...$) "
        "and its length varies in one repeated part");
}

// The UTF-8 byte sequences of the code points lo..hi (all of one encoded
// length, no surrogates), as ranges per byte: the split of RE2 and Rust's
// regex-syntax, where each sequence is a product of byte ranges.
void utf8_ranges(char32_t lo, char32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  for (char32_t boundary : {char32_t(0x7F), char32_t(0x7FF), char32_t(0xFFFF)})
    if (lo <= boundary && hi > boundary) {
      utf8_ranges(lo, boundary, out);
      utf8_ranges(boundary + 1, hi, out);
      return;
    }
  for (int k = 1; k < 4; ++k) {
    const char32_t m = (char32_t(1) << (6 * k)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_ranges(lo, lo | m, out);
        utf8_ranges((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_ranges(lo, (hi & ~m) - 1, out);
        utf8_ranges(hi & ~m, hi, out);
        return;
      }
    }
  }
  auto encode = [](char32_t c) {
    std::vector<uint8_t> b;
    if (c < 0x80) b = {uint8_t(c)};
    else if (c < 0x800) b = {uint8_t(0xC0 | (c >> 6)), uint8_t(0x80 | (c & 0x3F))};
    else if (c < 0x10000) b = {uint8_t(0xE0 | (c >> 12)), uint8_t(0x80 | ((c >> 6) & 0x3F)), uint8_t(0x80 | (c & 0x3F))};
    else
      b = {uint8_t(0xF0 | (c >> 18)), uint8_t(0x80 | ((c >> 12) & 0x3F)), uint8_t(0x80 | ((c >> 6) & 0x3F)),
           uint8_t(0x80 | (c & 0x3F))};
    return b;
  };
  const auto a = encode(lo), z = encode(hi);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (size_t k = 0; k < a.size(); ++k) seq.emplace_back(a[k], z[k]);
  out.push_back(std::move(seq));
}

// Nodes to grammar rules. nullopt stands for "matches nothing" (an empty
// class, or a sequence with one).
class Emitter {
 public:
  explicit Emitter(GrammarBuilder& b) : b_(b) { epsilon_ = rule({{}}); }

  // The characters of a JSON string a class allows, as JSON writes them.
  std::optional<Expr> chars(const CharSet& set_in) {
    const CharSet set = set_in.encodable();
    if (set.empty()) return std::nullopt;
    if (auto it = classes_.find(set.ranges()); it != classes_.end()) return it->second;
    std::vector<std::vector<Element>> alts;
    ByteSet plain, controls_short, controls_0, controls_1;
    auto hex_both = [](ByteSet& s, int v) {
      const char* digits = "0123456789abcdef";
      s.set(uint8_t(digits[v]));
      s.set(uint8_t(std::toupper(digits[v])));
    };
    std::vector<std::pair<char32_t, char32_t>> wide;
    for (const auto& [lo, hi] : set.ranges())
      for (char32_t c = lo; c <= std::min<char32_t>(hi, 0x7F); ++c) {
        if (c == '"' || c == '\\' || c == '/') alts.push_back({byte('\\'), byte(char(c))});
        if (c >= 0x20 && c != '"' && c != '\\') plain.set(c);
        if (c < 0x20) {  // \n-style if it has one, and \u00XX
          for (const auto& [code, letter] : {std::pair{'\b', 'b'}, {'\t', 't'}, {'\n', 'n'}, {'\f', 'f'}, {'\r', 'r'}})
            if (c == char32_t(code)) controls_short.set(uint8_t(letter));
          hex_both(c < 0x10 ? controls_0 : controls_1, int(c % 16));
        }
      }
    for (const auto& [lo, hi] : set.ranges())
      if (hi >= 0x80) wide.emplace_back(std::max<char32_t>(lo, 0x80), hi);
    if (plain.any()) alts.push_back({b_.byte_element(plain)});
    if (controls_short.any()) alts.push_back({byte('\\'), b_.byte_element(controls_short)});
    for (int high = 0; high < 2; ++high) {
      const ByteSet& low = high ? controls_1 : controls_0;
      if (low.any())
        alts.push_back({byte('\\'), byte('u'), byte('0'), byte('0'), byte(char('0' + high)), b_.byte_element(low)});
    }
    std::vector<std::vector<std::pair<uint8_t, uint8_t>>> sequences;
    for (const auto& [lo, hi] : wide) utf8_ranges(lo, hi, sequences);
    for (const auto& seq : sequences) {
      std::vector<Element> alt;
      for (const auto& [a, z] : seq) alt.push_back(b_.byte_element(byte_range(a, z)));
      alts.push_back(std::move(alt));
    }
    const Expr r = rule(std::move(alts));
    b_.set_char_class(r, set.ranges());
    classes_[set.ranges()] = r;
    return r;
  }

  // The node's strings.
  std::optional<Expr> emit(const Node& n) {
    if (auto it = full_.find(&n); it != full_.end()) return it->second;
    std::optional<Expr> out;
    switch (n.kind) {
      case Node::Kind::Chars: out = chars(n.chars); break;
      case Node::Kind::Seq: out = sequence(n.kids, 0); break;
      case Node::Kind::Alt: {
        std::vector<std::vector<Element>> alts;
        for (const Node& k : n.kids)
          if (auto e = element(k)) alts.push_back({*e});
        if (!alts.empty()) out = rule(std::move(alts));
        break;
      }
      case Node::Kind::Repeat:
        if (auto e = element(n)) out = rule({{*e}});
        break;
      default: out = epsilon_;
    }
    full_[&n] = out;
    return out;
  }

  // The node as one element of a sequence: repetitions become counts.
  std::optional<Element> element(const Node& n) {
    if (n.kind != Node::Kind::Repeat) {
      const auto e = emit(n);
      return e ? std::optional(GrammarBuilder::ref(*e)) : std::nullopt;
    }
    const Node& x = n.kids[0];
    const Element eps = GrammarBuilder::ref(epsilon_);
    if (n.max == 0) return eps;
    if (nullable(x) && n.max != 1) {
      // A repeated part must not match nothing (the matcher would loop):
      // X{n,m} with X nullable is (X without the empty string){0,m}.
      const auto ne = nonempty(x);
      return ne ? GrammarBuilder::ref(*ne, 0, n.max) : eps;
    }
    const auto e = emit(x);
    if (!e) return n.min == 0 ? std::optional(eps) : std::nullopt;
    return GrammarBuilder::ref(*e, n.min, n.max);
  }

 private:
  // kids[from..] in sequence.
  std::optional<Expr> sequence(const std::vector<Node>& kids, size_t from) {
    std::vector<Element> seq;
    for (size_t k = from; k < kids.size(); ++k) {
      const auto e = element(kids[k]);
      if (!e) return std::nullopt;
      seq.push_back(*e);
    }
    return rule({std::move(seq)});
  }

  // The node's strings but the empty one.
  std::optional<Expr> nonempty(const Node& n) {
    if (!nullable(n)) return emit(n);
    if (auto it = nonempty_.find(&n); it != nonempty_.end()) return it->second;
    std::optional<Expr> out;
    switch (n.kind) {
      case Node::Kind::Seq: out = nonempty_sequence(n.kids); break;
      case Node::Kind::Alt: {
        std::vector<std::vector<Element>> alts;
        for (const Node& k : n.kids)
          if (auto e = nonempty(k)) alts.push_back({GrammarBuilder::ref(*e)});
        if (!alts.empty()) out = rule(std::move(alts));
        break;
      }
      case Node::Kind::Repeat: {
        if (n.max == 0) break;
        const Node& x = n.kids[0];
        if (const auto e = nonempty(x)) out = rule({{GrammarBuilder::ref(*e, nullable(x) ? 1 : std::max(n.min, 1), n.max)}});
        break;
      }
      default: break;
    }
    nonempty_[&n] = out;
    return out;
  }

  // The kids in sequence, not empty. From the right: kids[i..] not empty is
  // kids[i] not empty then kids[i+1..], or (where kids[i] can be empty)
  // kids[i+1..] not empty. kids[i+1..] is a chain of rules, one a kid, so
  // the grammar grows with the kids, not with their square.
  std::optional<Expr> nonempty_sequence(const std::vector<Node>& kids) {
    std::optional<Expr> rest = epsilon_;  // kids[i+1..] (nullopt: matches nothing)
    std::optional<Expr> tail;             // kids[i+1..], not empty
    for (size_t i = kids.size(); i-- > 0;) {
      std::vector<std::vector<Element>> alts;
      const auto head = nonempty(kids[i]);
      if (head && rest) alts.push_back({GrammarBuilder::ref(*head), GrammarBuilder::ref(*rest)});
      if (nullable(kids[i]) && tail) alts.push_back({GrammarBuilder::ref(*tail)});
      tail = alts.empty() ? std::nullopt : std::optional(rule(std::move(alts)));
      const auto e = element(kids[i]);
      rest = e && rest ? std::optional(rule({{*e, GrammarBuilder::ref(*rest)}})) : std::nullopt;
    }
    return tail;
  }

  Expr rule(std::vector<std::vector<Element>> alts) {
    const Expr r = b_.reserve();
    b_.define(r, std::move(alts));
    return r;
  }
  Element byte(char c) { return b_.byte_element(single_byte(uint8_t(c))); }

  GrammarBuilder& b_;
  Expr epsilon_;
  std::map<CharSet::Ranges, Expr> classes_;
  std::map<const Node*, std::optional<Expr>> full_, nonempty_;
};

}  // namespace

Expr json_string(GrammarBuilder& b, std::string_view pattern, int32_t min_chars, int32_t max_chars) {
  if (pattern.size() > kMaxPatternBytes)
    error("the pattern is longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  Node root = Parser(decode_utf8(pattern)).parse();
  std::vector<Branch> all = branches(std::move(root));
  std::vector<Branch> kept;
  for (Branch& br : all)
    if (fit_lengths(br, min_chars, max_chars)) kept.push_back(std::move(br));
  if (kept.empty()) error("no string matches both the pattern and minLength / maxLength");

  Emitter emitter(b);
  const Element any = GrammarBuilder::ref(json_rules::string_char(b), 0, -1);
  const Element quote = b.byte_element(single_byte('"'));
  std::vector<std::vector<Element>> alts;
  for (const Branch& br : kept) {
    if (!br.start && !br.end && nullable(br.body)) {  // matches in every string
      alts.push_back({quote, any, quote});
      continue;
    }
    std::vector<Element> alt{quote};
    if (!br.start) alt.push_back(any);
    bool possible = true;
    for (const Node& k : br.body.kids) {
      const auto e = emitter.element(k);
      if (!e) {
        possible = false;
        break;
      }
      alt.push_back(*e);
    }
    if (!possible) continue;
    if (!br.end) alt.push_back(any);
    alt.push_back(quote);
    alts.push_back(std::move(alt));
  }
  if (alts.empty()) error("the pattern matches no string (an empty character class?)");
  const Expr r = b.reserve();
  b.define(r, std::move(alts));
  return r;
}

}  // namespace hearth::grammar::regex
