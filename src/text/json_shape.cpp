#include "text/json_shape.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hearth::text {

namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxKeys = 4096;

// A first pass over the body's events that checks its shape before any
// value is built: deep nesting would overflow the stack in the recursive
// copies and dumps that follow, and an object with very many keys costs
// quadratic time (ordered_json looks every key up linearly), and very many
// small containers make the parsed value many times the body. Linear in the
// body; nlohmann's callback parser is not (it rescans a container each time
// one of its objects ends).
struct ShapeCheck : nlohmann::json_sax<nlohmann::ordered_json> {
  explicit ShapeCheck(size_t max_containers) : max_containers(max_containers) {}
  size_t max_containers;
  std::vector<size_t> keys;  // per open container: keys seen (objects)
  size_t containers = 0;     // arrays and objects opened so far
  std::string problem;       // set: why the body is refused
  std::string syntax;        // set: the parser's own error

  bool open() {
    if (keys.size() >= size_t(kMaxDepth)) {
      problem = "the request body nests deeper than " + std::to_string(kMaxDepth) + " levels";
      return false;
    }
    if (++containers > max_containers) {
      problem = "the request body holds more than " + std::to_string(max_containers) +
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

JsonShape check_json_shape(std::string_view text, size_t max_containers) {
  ShapeCheck check(max_containers);
  nlohmann::ordered_json::sax_parse(text, &check);
  return {std::move(check.problem), std::move(check.syntax), check.containers};
}

bool json_within_limits(std::string_view text) {
  const JsonShape shape = check_json_shape(text);
  return shape.problem.empty() && shape.syntax.empty();
}

}  // namespace hearth::text
