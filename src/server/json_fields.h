// Reading typed fields out of a client's JSON body, shared by every wire
// protocol's request parser. Each reader returns nullopt/nullptr for an
// absent or null field and throws a 400 ApiError naming the field for a
// wrong type or a value out of range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hearth::server {

using json = nlohmann::ordered_json;

// Parses a request body; malformed JSON (including invalid UTF-8), a body
// past text::check_json_shape's limits and one that is not an object are
// 400s (invalid_json).
json parse_body(const std::string& body);

const char* type_name(const json& v);  // "a string", "an array", ...
[[noreturn]] void wrong_type(const std::string& field, const char* expected, const json& v);

const json* field(const json& body, const char* name);
std::optional<double> number(const json& body, const char* name, double lo, double hi, bool lo_open = false);
// Integers may arrive as 5 or 5.0; anything fractional is a type error.
std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi);
std::optional<bool> boolean(const json& body, const char* name);
std::optional<std::string> string(const json& body, const char* name);
// A string that must be there: obj[key], named `where.key` in the error.
const std::string& required_string(const json& obj, const char* key, const std::string& where);

// "where[i]", the name of an array element in error messages.
std::string indexed(const std::string& where, size_t i);

// A bounded, single-line rendering of a client value for error messages:
// never a recursive dump of whatever the client sent.
std::string quote(const json& v, size_t max_bytes = 64);

}  // namespace hearth::server
