// Python str semantics over UTF-8 strings, for the Jinja engine: code point
// indexing, and the character classes of str.isspace / str.isprintable /
// str.upper / str.lower that chat templates rely on.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::text::jinja::py {

// Decodes the code point at s[i] and advances i (invalid bytes decode as
// themselves, one at a time, so that nothing is lost).
char32_t decode(std::string_view s, size_t& i);
void encode(std::string& out, char32_t cp);

// Byte offsets of each code point, plus s.size() at the end.
std::vector<size_t> code_point_offsets(std::string_view s);
size_t length(std::string_view s);  // len(s) in code points
bool is_ascii(std::string_view s);

bool isspace(char32_t cp);      // str.isspace / Python re `\s`
bool isprintable(char32_t cp);  // str.isprintable (what repr() keeps)
bool isalpha(char32_t cp);
bool isdigit(char32_t cp);      // str.isdigit (approximated by category Nd)
bool isalnum(char32_t cp);
bool isword(char32_t cp);       // Python re `\w`
bool islinebreak(char32_t cp);  // str.splitlines boundaries
// Python identifiers (what jinja2's lexer accepts as names), approximated by
// general category: letters and Nl (and _) start, plus Mn Mc Nd Pc continue.
bool is_identifier_start(char32_t cp);
bool is_identifier_continue(char32_t cp);
char32_t upper(char32_t cp);
char32_t lower(char32_t cp);
bool iscased_upper(char32_t cp);
bool iscased_lower(char32_t cp);

std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);
std::string capitalize(std::string_view s);  // str.capitalize
std::string title(std::string_view s);       // str.title

// str.strip family; chars == nullptr strips whitespace, otherwise any code
// point in *chars.
std::string_view strip(std::string_view s, const std::string* chars, bool left, bool right);

// str.split(sep, maxsplit) / str.split(None, maxsplit) / rsplit.
std::vector<std::string> split(std::string_view s, const std::string* sep, long long maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, long long maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);

// str.replace(old, new, count); count < 0 replaces all.
std::string replace(std::string_view s, std::string_view old, std::string_view rep, long long count);

}  // namespace hearth::text::jinja::py
