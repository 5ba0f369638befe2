// Numbers within bounds: `minimum`, `maximum`, `exclusiveMinimum`,
// `exclusiveMaximum` (numbers, or draft 4's booleans beside minimum and
// maximum) and `multipleOf` 1, compiled to digit grammars that take
// exactly the decimal spellings of the values in range.
//
// - integer: exactly the integers in [lo, hi], no leading zeros, no "-0".
//   Fractional bounds round inward (minimum 1.5 is 2). A missing side
//   stops at 16 digits, as unbounded integers do (json_rules.h), or at the
//   other bound's digit count if that is longer. Bounds up to 20 digits
//   (the 64-bit integers) are exact; a bound beyond 1e20 on the outer side
//   (maximum 1e30) is no bound, on the inner side (minimum 1e30) an error.
// - number: plain decimals (no exponent) with at most 16 fraction digits,
//   inside the bounds as a JSON parser reading doubles sees them: an
//   inclusive bound is its shortest decimal spelling; an exclusive one is
//   the next double past it (exclusiveMinimum 1 is 1.0000000000000002,
//   since 1.0000000000000001 reads as 1). A bound with more than 16
//   fraction digits is rounded inward to 16 (exclusiveMinimum 0 is
//   0.0000000000000001). No "-0". Every output is in range; values that
//   need an exponent or more digits are not written.
// - multipleOf: 1 (on number it means integer); any other value is an
//   error (decimal and double arithmetic disagree about multiples of 0.1,
//   and a remainder grammar is left for when someone needs it).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"

namespace hearth::grammar::json_ranges {

// Whether the schema bounds numbers (any of the keywords above).
bool has_bounds(const nlohmann::ordered_json& schema);

// The integer / number values the schema's bounds allow; `path` is the
// schema's JSON pointer, for the GrammarError of a bad or empty range.
Expr integer(GrammarBuilder& b, const nlohmann::ordered_json& schema, const std::string& path);
Expr number(GrammarBuilder& b, const nlohmann::ordered_json& schema, const std::string& path);

}  // namespace hearth::grammar::json_ranges
