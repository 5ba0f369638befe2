#include "engine/grammar/json_rules.h"

#include <string>

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
