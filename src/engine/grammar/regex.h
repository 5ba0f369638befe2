// JSON Schema `pattern`: an ECMAScript regular expression compiled into the
// grammar of a JSON string whose value it matches.
//
// JSON Schema patterns are not anchored: "abc" takes any string containing
// abc. A top-level alternative that starts with ^ is anchored at the start,
// one that ends with $ at the end; the free sides take any characters.
// The grammar works on the string's JSON bytes: a character the pattern
// allows is written as itself (UTF-8), `"` and `\` escaped, control
// characters as \n-style or \u00XX escapes; the free sides take every
// JSON string character. Characters count as code points (as with the
// `u` flag), and there are no flags (no i, m, s).
//
// Supported: literals, `.`, escapes (\d \D \w \W \s \S \n \r \t \v \f \0
// \cX \xHH \uHHHH, surrogate pairs, identity escapes), classes with ranges,
// negation and class escapes, groups (capturing, (?:), named), alternation,
// quantifiers * + ? {n} {n,} {n,m} and their lazy forms (the same strings).
// Refused with RegexError naming the feature: backreferences (\1, \k<n>),
// lookahead and lookbehind, word boundaries (\b \B), \p{...}, \u{...},
// ^ or $ other than at the start or end of a top-level alternative.
//
// minLength / maxLength beside a pattern: taken when the pattern implies
// them, or when it is anchored at both ends and its length varies in one
// repeated part of fixed width (^[a-z]+$, ^id-\d{2,}$), whose count is then
// narrowed; otherwise refused.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "engine/grammar/grammar.h"

namespace hearth::grammar::regex {

struct RegexError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The JSON string (quotes included) of the values that match `pattern`,
// of min_chars..max_chars characters (max_chars -1: no limit).
Expr json_string(GrammarBuilder& b, std::string_view pattern, int32_t min_chars = 0, int32_t max_chars = -1);

}  // namespace hearth::grammar::regex
