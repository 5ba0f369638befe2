// UTF-8 and Unicode helpers for the tokenizers: decoding with WHATWG-style
// replacement of invalid bytes, normalization forms (utf8proc), case mapping
// and the whitespace sets that the reference implementations use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hearth::text::unicode {

// Decodes the code point at s[i] and advances i. Invalid or truncated
// sequences yield U+FFFD and advance over their maximal subpart (the WHATWG
// "utf-8 decode" rule, which is also what TextDecoder and Rust's
// from_utf8_lossy do).
char32_t next(std::string_view s, size_t& i);

// Appends the UTF-8 encoding of cp (U+FFFD for surrogates / out of range).
void append(std::string& out, char32_t cp);
std::string encode(char32_t cp);

// Number of bytes of the UTF-8 sequence starting with lead byte b (1..4), or
// 0 for a continuation / invalid lead byte.
int sequence_length(unsigned char b);

bool is_valid(std::string_view s);
// Replaces every invalid sequence by U+FFFD, as TextDecoder does.
std::string sanitize(std::string_view s);
// Length of the longest prefix of s that does not end inside an incomplete
// (but so far valid) UTF-8 sequence.
size_t complete_prefix(std::string_view s);

size_t count_code_points(std::string_view s);

enum class Form { NFC, NFD, NFKC, NFKD };
std::string normalize(std::string_view s, Form form);

// String.prototype.toLowerCase: full lowercase mapping (İ → i̇, final sigma).
std::string to_lower(std::string_view s);
// Removes every code point of general category M (Mn, Mc, Me).
std::string remove_marks(std::string_view s);
// Removes every code point of category Mn.
std::string remove_nonspacing_marks(std::string_view s);

// The whitespace of JavaScript's String.prototype.trim and of `\s` in a JS
// RegExp: Zs, tab, LF, VT, FF, CR, U+2028, U+2029 and U+FEFF.
bool is_js_space(char32_t cp);
std::string_view js_trim_start(std::string_view s);
std::string_view js_trim_end(std::string_view s);
std::string_view js_trim(std::string_view s);

// Unicode White_Space (what `\s` means in Oniguruma and Rust).
bool is_white_space(char32_t cp);

// General category predicates (utf8proc categories).
bool is_letter(char32_t cp);
bool is_number(char32_t cp);
bool is_mark(char32_t cp);
bool is_punctuation(char32_t cp);  // category P*
bool is_control_like(char32_t cp);  // Cc, Cf, Co, Cs

}  // namespace hearth::text::unicode
