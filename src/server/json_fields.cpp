#include "server/json_fields.h"

#include <cmath>
#include <limits>
#include <vector>

#include "server/api_error.h"
#include "text/json_shape.h"

namespace hearth::server {

const char* type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const json& v) {
  throw bad_request(field, "'" + field + "' must be " + expected + ", not " + type_name(v));
}

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number(const json& body, const char* name, double lo, double hi, bool lo_open) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo)) {
    std::string range = (lo_open ? "(" : "[") + json(lo).dump() + ", " + json(hi).dump() + "]";
    if (hi == std::numeric_limits<double>::max()) range = (lo_open ? "> " : ">= ") + json(lo).dump();
    throw bad_request(name, "'" + std::string(name) + "' must be " + range + ", got " + quote(*v));
  }
  return x;
}

// Integers may arrive as 5 or 5.0; anything fractional is a type error.
std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  int64_t x;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      x = std::numeric_limits<int64_t>::max();
    else
      x = v->get<int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) && std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9e18) {
    x = int64_t(v->get<double>());
  } else {
    wrong_type(name, "an integer", *v);
  }
  if (x < lo || x > hi) {
    std::string range = hi == std::numeric_limits<int64_t>::max() ? ">= " + std::to_string(lo)
                                                                   : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    throw bad_request(name, "'" + std::string(name) + "' must be " + range + ", got " + quote(*v));
  }
  return x;
}

std::optional<bool> boolean(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::string> string(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(name, "a string", *v);
  return v->get<std::string>();
}

const std::string& required_string(const json& obj, const char* key, const std::string& where) {
  const json* v = field(obj, key);
  const std::string name = where + "." + key;
  if (!v || !v->is_string()) throw bad_request(name, "'" + name + "' must be a string");
  return v->get_ref<const std::string&>();
}

std::string indexed(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

std::string quote(const json& v, size_t max_bytes) {
  if (v.is_structured()) return v.is_array() ? "an array" : "an object";
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max_bytes) {
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
    s = s.substr(0, cut) + "...";
  }
  return s;
}

json parse_body(const std::string& body) {
  const text::JsonShape shape = text::check_json_shape(body);
  if (!shape.problem.empty()) throw ApiError(400, shape.problem, "invalid_request_error", {}, "invalid_json");
  if (!shape.syntax.empty())
    throw ApiError(400, "the request body is not valid JSON: " + shape.syntax, "invalid_request_error", {},
                   "invalid_json");
  json parsed = json::parse(body);
  if (!parsed.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_request_error");
  return parsed;
}

}  // namespace hearth::server
