#include "engine/grammar/regex.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/grammar/json_rules.h"
#include "engine/grammar/regex_syntax.h"

namespace hearth::grammar::regex {

namespace {

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
  Node root = parse(pattern);
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