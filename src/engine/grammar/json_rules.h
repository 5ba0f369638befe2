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
// Strings are valid UTF-8 (no overlong forms, no surrogates) with the JSON
// escapes; \u escapes of surrogates are refused, so every string parses
// (characters beyond the BMP are written as UTF-8, not as escape pairs).
#pragma once

#include <cstdint>
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
