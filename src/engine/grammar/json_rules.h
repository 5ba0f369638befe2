// The JSON building blocks of schema grammars: strings, numbers, literals,
// separators and "any JSON value". Each is built once per grammar (the
// builder memoizes them) and referenced wherever it is needed.
//
// Whitespace: none, except one optional space after ':' and ','. The output
// is compact JSON a parser reads as usual, and a model cannot spin on
// whitespace (a weak model otherwise can emit spaces or newlines forever).
// Numbers are bounded too: at most 16 integer digits, 16 fraction digits
// and 2 exponent digits, so a number always ends and always fits a double
// (an exponent of 3 digits can overflow one, which parsers refuse).
// Numbers with minimum/maximum are built from digit ranges: the decimal
// strings between two bounds, digit by digit.
// Strings are valid UTF-8 (no overlong forms, no surrogates) with the JSON
// escapes; \u escapes of surrogates are refused, so every string parses
// (characters beyond the BMP are written as UTF-8, not as escape pairs).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/grammar/grammar.h"

namespace hearth::grammar::json_rules {

// The alternatives of one UTF-8 character of two to four bytes, for rules
// that define their own characters (RFC 3629: no overlong forms, no
// surrogates).
std::vector<std::vector<Element>> utf8_multibyte(GrammarBuilder& b);
// One character inside a JSON string (a literal byte run or an escape).
Expr string_char(GrammarBuilder& b);
// A JSON string of between min_chars and max_chars characters (-1: no
// limit); an escape counts as one character.
Expr string(GrammarBuilder& b, int32_t min_chars = 0, int32_t max_chars = -1);
Expr integer(GrammarBuilder& b);
Expr number(GrammarBuilder& b);

// The largest magnitude the integer part of a number may have (16 digits).
inline constexpr int64_t kMaxMagnitude = 9999999999999999;
// An integer in [lo, hi] (within ±kMaxMagnitude, lo <= hi), without leading
// zeros or "-0".
Expr integer_in(GrammarBuilder& b, int64_t lo, int64_t hi);
// A bound of a number: its value and whether it is exclusive.
struct Bound {
  int64_t value = 0;
  bool exclusive = false;
};
// A number between integer bounds (absent: the 16-digit limit), which the
// caller checks leave some number in between. It has no exponent; the
// integer part and up to 16 fraction digits as number() writes them, and
// no "-0". A fraction on a bound itself is zeros only (inclusive) or has a
// digit that is not 0 (an exclusive lower bound; to keep the rule simple,
// such a fraction ends in that digit). Next to an exclusive bound a number
// has at most 15 significant digits, so parsed as a double it does not
// round onto the bound.
Expr number_in(GrammarBuilder& b, std::optional<Bound> lo, std::optional<Bound> hi);
Expr boolean(GrammarBuilder& b);
Expr null(GrammarBuilder& b);
Expr comma(GrammarBuilder& b);  // "," then an optional space
Expr colon(GrammarBuilder& b);  // ":" then an optional space
Expr any_value(GrammarBuilder& b);
Expr any_object(GrammarBuilder& b);
Expr any_array(GrammarBuilder& b);
// "[" "]" or "[" item ("," item)... "]" with min..max items (max -1: no limit).
Expr array_of(GrammarBuilder& b, Expr item, int32_t min_items, int32_t max_items);
// "{" "}" or "{" string ":" value ("," string ":" value)... "}".
Expr map_of(GrammarBuilder& b, Expr value);

}  // namespace hearth::grammar::json_rules
