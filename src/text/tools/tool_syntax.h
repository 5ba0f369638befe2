// The tool-call markup of each format, as data for OutputParser: the texts
// that open a tool-call section, where the section ends, and how its body
// becomes calls. Internal to text/tools.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "text/tools/output_parser.h"

namespace hearth::text::tools {

using Calls = std::vector<ToolCall>;
// A section's body (between its opener and its closer) → its calls;
// nullopt when it is not valid markup (the section is then content).
using BodyParser = std::optional<Calls> (*)(std::string_view body);
// Whether a body that has not ended yet may still become calls: false once
// its start rules them out.
using BodyStartCheck = bool (*)(std::string_view body);

struct Section {
  std::string open{};
  // Where the body ends: at this text (consumed with the section); empty: at
  // the end of the first complete JSON value in the body (formats with no
  // closing marker, whose calls end with the JSON).
  std::string close{};
  // At the end of output the close may be missing, if the body parses (its
  // calls have their own ends: DeepSeek's, whose distills' template omits
  // <｜tool▁calls▁end｜> after the last turn's calls).
  bool close_optional_at_end = false;
  BodyParser parse = nullptr;
  // Opens only where nothing but whitespace precedes it since the output
  // began or the last markup (Llama 3's bare "{", which is otherwise prose).
  bool start_only = false;
  // The opener is the body's first text, not markup around it ("{").
  bool open_in_body = false;
  // Characters besides whitespace dropped after the section (the ";" that
  // separates Llama 3's calls).
  std::string separators{};
  // The body parser gives every argument value as the text the model wrote
  // (a JSON string); type_text_arguments gives them their JSON types.
  bool text_arguments = false;
  // Markup around content that carries nothing (Command R7B's
  // <|START_RESPONSE|>): dropped where it stands, no body.
  bool drop = false;
  // The body is a JSON call object (or an array starting with one) whose
  // name comes before its arguments object: the arguments can stream.
  bool json_call = false;
  // Where the opener is also prose ("functools", a bare "["): a body whose
  // start rules out calls gives the opener back as content at once, rather
  // than holding the rest of the output for a close that never comes.
  BodyStartCheck may_be_calls = nullptr;
};

// Compact JSON text of a value that holds the model's raw text (a bare
// parameter value, a Python string literal): bytes that are not UTF-8 become
// U+FFFD, where dump() would throw.
template <class Json>
std::string dump_text(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The sections that open a tool call in this format's output (empty for None).
const std::vector<Section>& sections_of(ToolCallFormat format);

// Where a body with no closing marker ends: after the first complete JSON
// value (or bracketed Python list), which starts at the first non-space
// character if that is '{' or '[', else at the first '{' (Mistral's
// NAME[ARGS]{..}). As the body streams, each find() scans only the bytes
// appended since the last (a long call stays linear).
class BodyEndScan {
 public:
  // text: what the previous call was given, with more appended. npos: not
  // complete yet.
  size_t find(std::string_view text);

 private:
  enum class Phase { Leading, Seeking, Body } phase_ = Phase::Leading;
  size_t at_ = 0;  // the next byte to scan
  int depth_ = 0;
  char quote_ = 0;  // in a string: its quote ('\'' for Python literals; JSON has none outside strings)
  bool escaped_ = false;
};

// Where a JSON call's arguments object begins in a body that is still
// streaming (argument_stream.cpp): {"name": "f", "arguments": {  (also
// "tool_name" / "parameters", other string-valued keys before them, and a
// leading "[").
struct CallHeader {
  enum class State { Incomplete, NoMatch, Match } state = State::Incomplete;
  std::string name;
  size_t arguments = 0;  // Match: the offset of the arguments' "{"
};
CallHeader json_call_header(std::string_view body);

// Follows a JSON object's text as it streams: how far the bytes so far can
// be sent as part of it, and whether it has ended. Checks the bytes a JSON
// value may hold outside strings and the nesting, not the full grammar:
// what it passes is sent to clients as argument deltas, and a byte that
// cannot be JSON there stops it.
class JsonObjectScan {
 public:
  // Scans text[from, to); returns where what may be sent ends.
  size_t feed(std::string_view text, size_t from, size_t to);
  bool complete() const { return complete_; }
  bool failed() const { return failed_; }

 private:
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, complete_ = false, failed_ = false;
};

// Body parsers (tool_call_bodies.cpp, pythonic_calls.cpp).
// A JSON object or array of objects: name in "name" or "tool_name" (or an
// OpenAI-shaped "function" object), arguments in "arguments" or
// "parameters" (an object, or a string holding one), id in "id" or "tool_call_id".
std::optional<Calls> parse_json_calls(std::string_view body);
std::optional<Calls> parse_qwen3_coder(std::string_view body);
std::optional<Calls> parse_mistral(std::string_view body);
std::optional<Calls> parse_deepseek(std::string_view body);
std::optional<Calls> parse_functionary(std::string_view body);
std::optional<Calls> parse_pythonic(std::string_view body);
// Body start checks: JSON calls ("[" or "{" first), and a Python list of
// calls ("[" then a name, dotted or not, and "("), within kMaxBodyStart
// bytes (each piece checks the start again: it must stay short).
constexpr size_t kMaxBodyStart = 256;
bool may_be_json_calls(std::string_view body);
bool may_be_python_calls(std::string_view body);

// Arguments whose values are all strings (Qwen3-Coder's XML) → typed by
// the parameter schema of the tool `name` in tools (OpenAI shape): "string"
// stays text; integer/number/boolean/object/array become JSON where the
// text parses as that type; a "null" type takes null; a parameter the
// schema does not declare stays text (all as vLLM's qwen3_coder parser).
// With no schema for the tool, a value that parses as JSON becomes it.
std::string type_text_arguments(const std::string& arguments, const nlohmann::ordered_json* tools,
                                const std::string& name);

// A JSON arguments object in Python call syntax (for rendering Gemma calls).
std::string python_keyword_arguments(std::string_view arguments_json);

std::string_view trim(std::string_view s);
bool is_space(char c);

}  // namespace hearth::text::tools
