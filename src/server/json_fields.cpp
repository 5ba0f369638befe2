#include "server/json_fields.h"

#include <cmath>
#include <limits>
#include <vector>

#include "server/api_error.h"

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

namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxKeys = 4096;
// An empty array is 3 bytes of body and about 80 of parsed value (a node and
// its vector); a body of them would be 25 times its size once parsed.
constexpr size_t kMaxContainers = size_t(1) << 18;

// A first pass over the body's events that checks its shape before any
// value is built: deep nesting would overflow the stack in the recursive
// copies and dumps that follow, and an object with very many keys costs
// quadratic time (ordered_json looks every key up linearly), and very many
// small containers make the parsed value many times the body. Linear in the
// body; nlohmann's callback parser is not (it rescans a container each time
// one of its objects ends).
struct ShapeCheck : nlohmann::json_sax<json> {
  std::vector<size_t> keys;  // per open container: keys seen (objects)
  size_t containers = 0;     // arrays and objects opened so far
  std::string problem;       // set: why the body is refused
  std::string syntax;        // set: the parser's own error

  bool open() {
    if (keys.size() >= size_t(kMaxDepth)) {
      problem = "the request body nests deeper than " + std::to_string(kMaxDepth) + " levels";
      return false;
    }
    if (++containers > kMaxContainers) {
      problem = "the request body holds more than " + std::to_string(kMaxContainers) +
                " arrays and objects";
      return false;
    }
    keys.push_back(0);
    return true;
  }
  bool close() {
    keys.pop_back();
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool key(string_t&) override {
    if (++keys.back() <= kMaxKeys) return true;
    problem = "an object in the request body has more than " + std::to_string(kMaxKeys) + " keys";
    return false;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // Syntax errors, invalid UTF-8, unpaired surrogates, numbers out of range (1e400).
    syntax = e.what();
    if (auto at = syntax.find("] "); at != std::string::npos) syntax = syntax.substr(at + 2);
    return false;
  }
};

}  // namespace

bool json_within_limits(const std::string& text) {
  ShapeCheck check;
  return json::sax_parse(text, &check);
}

json parse_body(const std::string& body) {
  ShapeCheck check;
  json::sax_parse(body, &check);
  if (!check.problem.empty()) throw ApiError(400, check.problem, "invalid_request_error", {}, "invalid_json");
  if (!check.syntax.empty())
    throw ApiError(400, "the request body is not valid JSON: " + check.syntax, "invalid_request_error", {},
                   "invalid_json");
  json parsed = json::parse(body);
  if (!parsed.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_request_error");
  return parsed;
}

}  // namespace hearth::server
