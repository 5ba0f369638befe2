#include "engine/grammar/json_rules.h"

#include <algorithm>
#include <string>
#include <vector>

namespace hearth::grammar::json_rules {

namespace {

ByteSet bytes_of(std::string_view chars) {
  ByteSet s;
  for (unsigned char c : chars) s.set(c);
  return s;
}

const ByteSet kHex = byte_range('0', '9') | byte_range('a', 'f') | byte_range('A', 'F');
const ByteSet kDigit = byte_range('0', '9');
const ByteSet kTail = byte_range(0x80, 0xBF);  // a UTF-8 continuation byte

// Builds a piece once per grammar: the builder keeps it under `key`.
template <class Make>
Expr memo(GrammarBuilder& b, std::string_view key, Make make) {
  if (Expr& slot = b.cached(key); slot >= 0) return slot;
  const Expr e = make();
  b.cached(key) = e;  // make() may have added slots, so look it up again
  return e;
}

}  // namespace

std::vector<std::vector<Element>> utf8_multibyte(GrammarBuilder& b) {
  auto e = [&](const ByteSet& s, int32_t n = 1) { return b.byte_element(s, n, n); };
  // RFC 3629 table 3-7: no overlong forms, no surrogates.
  return {
      {e(byte_range(0xC2, 0xDF)), e(kTail)},
      {e(single_byte(0xE0)), e(byte_range(0xA0, 0xBF)), e(kTail)},
      {e(byte_range(0xE1, 0xEC) | byte_range(0xEE, 0xEF)), e(kTail, 2)},
      {e(single_byte(0xED)), e(byte_range(0x80, 0x9F)), e(kTail)},
      {e(single_byte(0xF0)), e(byte_range(0x90, 0xBF)), e(kTail, 2)},
      {e(byte_range(0xF1, 0xF3)), e(kTail, 3)},
      {e(single_byte(0xF4)), e(byte_range(0x80, 0x8F)), e(kTail, 2)},
  };
}

Expr string_char(GrammarBuilder& b) {
  return memo(b, "string_char", [&] {
    auto e = [&](const ByteSet& s, int32_t n = 1) { return b.byte_element(s, n, n); };
    ByteSet plain = byte_range(0x20, 0x7F);
    plain.reset('"');
    plain.reset('\\');
    const ByteSet bs = single_byte('\\'), u = single_byte('u');
    std::vector<std::vector<Element>> alternatives = {
        {e(plain)},
        {e(bs), e(bytes_of("\"\\/bfnrt"))},
        // \uXXXX outside the surrogates D800-DFFF
        {e(bs), e(u), e(kHex & ~bytes_of("Dd")), e(kHex, 3)},
        {e(bs), e(u), e(bytes_of("Dd")), e(byte_range('0', '7')), e(kHex, 2)},
    };
    for (auto& alt : utf8_multibyte(b)) alternatives.push_back(std::move(alt));
    const Expr r = b.reserve();
    b.define(r, std::move(alternatives));
    b.set_string_char_rule(r);
    return r;
  });
}

Expr string(GrammarBuilder& b, int32_t min_chars, int32_t max_chars) {
  const std::string key = "string:" + std::to_string(min_chars) + ":" + std::to_string(max_chars);
  return memo(b, key, [&] {
    const Expr ch = string_char(b);
    const Expr r = b.reserve();
    const Element quote = b.byte_element(single_byte('"'));
    b.define(r, {{quote, GrammarBuilder::ref(ch, min_chars, max_chars), quote}});
    return r;
  });
}

Expr integer(GrammarBuilder& b) {
  return memo(b, "integer", [&] {
    const Expr r = b.reserve();
    const Element minus = b.byte_element(single_byte('-'), 0, 1);
    b.define(r, {{minus, b.byte_element(single_byte('0'))},
                 {minus, b.byte_element(byte_range('1', '9')), b.byte_element(kDigit, 0, 15)}});
    return r;
  });
}

Expr number(GrammarBuilder& b) {
  return memo(b, "number", [&] {
    const Expr fraction = b.reserve();
    b.define(fraction, {{b.byte_element(single_byte('.')), b.byte_element(kDigit, 1, 16)}});
    const Expr exponent = b.reserve();
    b.define(exponent, {{b.byte_element(bytes_of("eE")), b.byte_element(bytes_of("+-"), 0, 1),
                         b.byte_element(kDigit, 1, 2)}});
    const Expr r = b.reserve();
    b.define(r, {{GrammarBuilder::ref(integer(b)), GrammarBuilder::ref(fraction, 0, 1),
                  GrammarBuilder::ref(exponent, 0, 1)}});
    return r;
  });
}

namespace {

using Alternatives = std::vector<std::vector<Element>>;

Expr rule_of(GrammarBuilder& b, Alternatives alternatives) {
  const Expr r = b.reserve();
  b.define(r, std::move(alternatives));
  return r;
}

// The digit strings of lo.size() digits from lo to hi (equal lengths,
// lo <= hi), leading zeros included: the common prefix, then at the first
// digit that differs, lo's digit followed by lo's tail up to 9...9, the
// digits strictly between followed by anything, and hi's digit followed by
// 0...0 up to hi's tail. A tail of all 0s (lo's) or all 9s (hi's) joins
// the middle, so a range of whole decades is one alternative.
Alternatives digits_between(GrammarBuilder& b, const std::string& lo, const std::string& hi) {
  std::vector<Element> prefix;
  size_t k = 0;
  for (; k < lo.size() && lo[k] == hi[k]; ++k) prefix.push_back(b.byte_element(single_byte(lo[k])));
  if (k == lo.size()) return {prefix};
  const std::string lo_tail = lo.substr(k + 1), hi_tail = hi.substr(k + 1);
  const size_t rest = lo_tail.size();
  const bool lo_open = lo_tail.find_first_not_of('0') == std::string::npos;
  const bool hi_open = hi_tail.find_first_not_of('9') == std::string::npos;
  Alternatives alts;
  auto add = [&](std::vector<Element> tail) {
    std::vector<Element> alt = prefix;
    alt.insert(alt.end(), tail.begin(), tail.end());
    alts.push_back(std::move(alt));
  };
  if (!lo_open)
    add({b.byte_element(single_byte(lo[k])),
         GrammarBuilder::ref(rule_of(b, digits_between(b, lo_tail, std::string(rest, '9'))))});
  const unsigned char first = lo_open ? lo[k] : lo[k] + 1, last = hi_open ? hi[k] : hi[k] - 1;
  if (first <= last) {
    std::vector<Element> middle{b.byte_element(byte_range(first, last))};
    if (rest > 0) middle.push_back(b.byte_element(kDigit, int32_t(rest), int32_t(rest)));
    add(std::move(middle));
  }
  if (!hi_open)
    add({b.byte_element(single_byte(hi[k])),
         GrammarBuilder::ref(rule_of(b, digits_between(b, std::string(rest, '0'), hi_tail)))});
  return alts;
}

// The unsigned integers from lo to hi (0 <= lo <= hi) as JSON writes them:
// per digit count, the part of the range with that many digits (the counts
// strictly between lo's and hi's as one alternative).
Alternatives unsigned_between(GrammarBuilder& b, int64_t lo, int64_t hi) {
  const std::string l = std::to_string(lo), h = std::to_string(hi);
  if (l.size() == h.size()) return digits_between(b, l, h);
  Alternatives alts = digits_between(b, l, std::string(l.size(), '9'));
  if (h.size() - l.size() >= 2)
    alts.push_back({b.byte_element(byte_range('1', '9')),
                    b.byte_element(kDigit, int32_t(l.size()), int32_t(h.size() - 2))});
  for (auto& alt : digits_between(b, "1" + std::string(h.size() - 1, '0'), h)) alts.push_back(std::move(alt));
  return alts;
}

// A fraction of 1 to `digits` digits; of zeros only; with a digit other
// than 0 (ending in one, up to `digits` digits).
Expr fraction(GrammarBuilder& b, int32_t digits) {
  return memo(b, "fraction:" + std::to_string(digits), [&] {
    return rule_of(b, {{b.byte_element(single_byte('.')), b.byte_element(kDigit, 1, digits)}});
  });
}
Expr zero_fraction(GrammarBuilder& b) {
  return memo(b, "zero_fraction", [&] {
    return rule_of(b, {{b.byte_element(single_byte('.')), b.byte_element(single_byte('0'), 1, 16)}});
  });
}
Expr nonzero_fraction(GrammarBuilder& b, int32_t digits) {
  return memo(b, "nonzero_fraction:" + std::to_string(digits), [&] {
    return rule_of(b, {{b.byte_element(single_byte('.')), b.byte_element(kDigit, 0, digits - 1),
                        b.byte_element(byte_range('1', '9'))}});
  });
}

// Fraction digits a number with this integer part may have and still parse
// (as a double) to a value on the right side of an exclusive bound next to
// it: 15 significant digits survive the round trip through a double, so a
// number of at most 15 digits that is below the bound stays below it.
int32_t exact_fraction_digits(int64_t whole) { return 15 - int32_t(std::to_string(whole).size()); }

// Non-negative numbers m (integer part, optional fraction) with
// lo <= m (lo < m if exclusive) and m <= hi (m < hi), hi absent: the
// 16-digit limit. Empty when no such number is written.
Alternatives magnitude_between(GrammarBuilder& b, Bound lo, std::optional<Bound> hi) {
  Alternatives alts;
  auto add = [&](int64_t from, int64_t to, std::optional<Element> fraction) {
    for (auto& alt : unsigned_between(b, from, to)) {
      if (fraction) alt.push_back(*fraction);
      alts.push_back(std::move(alt));
    }
  };
  const Element any_fraction = GrammarBuilder::ref(fraction(b, 16), 0, 1);
  const Element zeros = GrammarBuilder::ref(zero_fraction(b), 0, 1);
  if (hi && hi->value == lo.value) {
    if (!lo.exclusive && !hi->exclusive) add(lo.value, lo.value, zeros);
    return alts;
  }
  if (hi && hi->value < lo.value) return alts;
  // Integer parts strictly inside take any fraction; a bound's own integer
  // part only the fractions that keep the number on the right side, and the
  // integer part just below an exclusive upper bound only fractions short
  // enough not to round up to it.
  int64_t from = lo.exclusive ? lo.value + 1 : lo.value;
  int64_t to = hi ? hi->value - 1 : kMaxMagnitude;
  if (hi && hi->exclusive && from <= to) {
    const int32_t digits = exact_fraction_digits(to);
    add(to, to, digits >= 1 ? std::optional<Element>(GrammarBuilder::ref(fraction(b, digits), 0, 1)) : std::nullopt);
    --to;
  }
  if (from <= to) add(from, to, any_fraction);
  if (lo.exclusive && exact_fraction_digits(lo.value) >= 1 && (!hi || lo.value < hi->value))
    add(lo.value, lo.value, GrammarBuilder::ref(nonzero_fraction(b, exact_fraction_digits(lo.value))));
  if (hi && !hi->exclusive) add(hi->value, hi->value, zeros);
  return alts;
}

std::string bound_key(const std::optional<Bound>& bound) {
  if (!bound) return "-";
  return std::to_string(bound->value) + (bound->exclusive ? "x" : "i");
}

}  // namespace

Expr integer_in(GrammarBuilder& b, int64_t lo, int64_t hi) {
  const std::string key = "integer:" + std::to_string(lo) + ":" + std::to_string(hi);
  return memo(b, key, [&] {
    Alternatives alts;
    if (hi >= 0) alts = unsigned_between(b, std::max<int64_t>(lo, 0), hi);
    if (lo < 0) {
      const Expr magnitude = rule_of(b, unsigned_between(b, hi < 0 ? -hi : 1, -lo));
      alts.push_back({b.byte_element(single_byte('-')), GrammarBuilder::ref(magnitude)});
    }
    return rule_of(b, std::move(alts));
  });
}

Expr number_in(GrammarBuilder& b, std::optional<Bound> lo, std::optional<Bound> hi) {
  const std::string key = "number:" + bound_key(lo) + ":" + bound_key(hi);
  return memo(b, key, [&] {
    Alternatives alts;
    // Written without a sign: 0 and up.
    if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive))
      alts = magnitude_between(b, lo && lo->value >= 0 ? *lo : Bound{0, false}, hi);
    // With "-": the magnitude of a number below 0 (never 0 itself).
    if (!lo || lo->value < 0) {
      const Bound least = hi && hi->value < 0 ? Bound{-hi->value, hi->exclusive} : Bound{0, true};
      const std::optional<Bound> most = lo ? std::optional<Bound>(Bound{-lo->value, lo->exclusive}) : std::nullopt;
      Alternatives negative = magnitude_between(b, least, most);
      if (!negative.empty())
        alts.push_back({b.byte_element(single_byte('-')), GrammarBuilder::ref(rule_of(b, std::move(negative)))});
    }
    return rule_of(b, std::move(alts));
  });
}

Expr boolean(GrammarBuilder& b) {
  return memo(b, "boolean", [&] { return b.choice({b.literal("true"), b.literal("false")}); });
}

Expr null(GrammarBuilder& b) {
  return memo(b, "null", [&] { return b.literal("null"); });
}

Expr comma(GrammarBuilder& b) {
  return memo(b, "comma", [&] { return b.sequence({b.literal(","), b.bytes(single_byte(' '), 0, 1)}); });
}

Expr colon(GrammarBuilder& b) {
  return memo(b, "colon", [&] { return b.sequence({b.literal(":"), b.bytes(single_byte(' '), 0, 1)}); });
}

Expr array_of(GrammarBuilder& b, Expr item, int32_t min_items, int32_t max_items) {
  if (max_items == 0) return b.literal("[]");
  const Expr more = b.sequence({comma(b), item});
  const int32_t lo = min_items > 0 ? min_items - 1 : 0;
  const int32_t hi = max_items < 0 ? -1 : max_items - 1;
  const Element open = b.byte_element(single_byte('[')), close = b.byte_element(single_byte(']'));
  std::vector<std::vector<Element>> alts;
  if (min_items <= 0) alts.push_back({open, close});
  alts.push_back({open, GrammarBuilder::ref(item), GrammarBuilder::ref(more, lo, hi), close});
  const Expr r = b.reserve();
  b.define(r, std::move(alts));
  return r;
}

Expr map_of(GrammarBuilder& b, Expr value) {
  const Expr member = b.sequence({string(b), colon(b), value});
  const Expr more = b.sequence({comma(b), member});
  const Element open = b.byte_element(single_byte('{')), close = b.byte_element(single_byte('}'));
  const Expr r = b.reserve();
  b.define(r, {{open, close}, {open, GrammarBuilder::ref(member), GrammarBuilder::ref(more, 0, -1), close}});
  return r;
}

Expr any_value(GrammarBuilder& b) {
  if (Expr& slot = b.cached("any_value"); slot >= 0) return slot;
  // Reserved before its parts, which refer back to it.
  const Expr r = b.reserve();
  b.cached("any_value") = r;
  const Expr object = map_of(b, r), array = array_of(b, r, 0, -1);
  b.cached("any_object") = object;
  b.cached("any_array") = array;
  b.define(r, {{GrammarBuilder::ref(object)},
               {GrammarBuilder::ref(array)},
               {GrammarBuilder::ref(string(b))},
               {GrammarBuilder::ref(number(b))},
               {GrammarBuilder::ref(boolean(b))},
               {GrammarBuilder::ref(null(b))}});
  return r;
}

Expr any_object(GrammarBuilder& b) {
  any_value(b);
  return b.cached("any_object");
}

Expr any_array(GrammarBuilder& b) {
  any_value(b);
  return b.cached("any_array");
}

}  // namespace hearth::grammar::json_rules
