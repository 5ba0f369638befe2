// Tool-call bodies → calls, for the JSON-based and tag-based formats.
// Formats and leniency follow vLLM's tool parsers (hermes, llama3_json,
// mistral, deepseek_v3/v31, qwen3coder) and llama.cpp's common/chat.cpp.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "text/json_shape.h"
#include "text/tools/tool_syntax.h"

namespace hearth::text::tools {

namespace {

using json = nlohmann::ordered_json;  // ordered: arguments keep the model's key order

// The model's JSON is held to the request body's limits: nested deeper, the
// dumps of its arguments would overflow the stack (logit_bias can make a
// model write ten thousand '[').
std::optional<json> parse_json(std::string_view text) {
  if (!json_within_limits(text)) return std::nullopt;
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// Arguments as compact JSON text: an object, or a string that holds one
// (some models double-encode); anything else is not a call.
std::optional<std::string> arguments_text(const json& args) {
  if (args.is_object()) return args.dump();
  if (args.is_string()) {
    auto inner = parse_json(args.get_ref<const std::string&>());
    if (inner && inner->is_object()) return inner->dump();
  }
  return std::nullopt;
}

std::optional<ToolCall> call_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  if (!j.contains("name") && !j.contains("tool_name") && j.contains("function") && j["function"].is_object()) {
    auto call = call_from_json(j["function"]);  // {"type": "function", "function": {..}, "id": ..}
    if (call && j.contains("id") && j["id"].is_string()) call->id_hint = j["id"];
    return call;
  }
  ToolCall call;
  const json* name = j.contains("name") ? &j["name"] : j.contains("tool_name") ? &j["tool_name"] : nullptr;
  if (!name || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  call.name = *name;
  const json* args = j.contains("arguments") ? &j["arguments"] : j.contains("parameters") ? &j["parameters"] : nullptr;
  if (args && !args->is_null()) {
    auto text = arguments_text(*args);
    if (!text) return std::nullopt;
    call.arguments = *text;
  } else {
    call.arguments = "{}";
  }
  for (const char* key : {"id", "tool_call_id"}) {
    if (!j.contains(key)) continue;
    const json& id = j[key];
    if (id.is_string()) call.id_hint = id;
    else if (id.is_number_integer()) call.id_hint = id.dump();
  }
  return call;
}

// name + JSON arguments text → a call; nullopt if either is not valid.
std::optional<ToolCall> named_call(std::string_view name, std::string_view arguments) {
  name = trim(name);
  if (name.empty() || name.find_first_of(" \t\r\n") != std::string_view::npos) return std::nullopt;
  auto args = parse_json(arguments);
  if (!args) return std::nullopt;
  auto text = arguments_text(*args);
  if (!text) return std::nullopt;
  return ToolCall{"", std::string(name), *text};
}

}  // namespace

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

size_t BodyEndScan::find(std::string_view text) {
  for (; at_ < text.size(); ++at_) {
    const char c = text[at_];
    if (phase_ == Phase::Leading) {
      if (is_space(c)) continue;
      phase_ = c == '{' || c == '[' ? Phase::Body : Phase::Seeking;
    }
    if (phase_ == Phase::Seeking) {
      if (c != '{') continue;
      phase_ = Phase::Body;
    }
    if (quote_) {
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == quote_) quote_ = 0;
    } else if (c == '"' || c == '\'') {
      quote_ = c;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && --depth_ == 0) {
      return at_ + 1;
    }
  }
  return std::string_view::npos;
}

bool may_be_json_calls(std::string_view body) {
  body = body.substr(0, kMaxBodyStart + 1);
  const size_t i = std::min(body.find_first_not_of(" \t\r\n"), body.size());
  if (i > kMaxBodyStart) return false;
  return i == body.size() || body[i] == '[' || body[i] == '{';
}

std::optional<Calls> parse_json_calls(std::string_view body) {
  auto j = parse_json(trim(body));
  if (!j) return std::nullopt;
  Calls calls;
  if (j->is_array()) {
    for (const auto& item : *j) {
      auto call = call_from_json(item);
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
    }
  } else {
    auto call = call_from_json(*j);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// <function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>, as
// Qwen3-Coder's template prints it. One newline around a value is markup
// (vLLM's qwen3coder parser strips it); values stay text here
// (type_text_arguments types them). A missing </parameter> ends at the next
// parameter or </function>, as in vLLM.
std::optional<Calls> parse_qwen3_coder(std::string_view body) {
  std::string_view s = trim(body);
  if (!s.starts_with("<function=")) return std::nullopt;
  s.remove_prefix(10);
  size_t gt = s.find('>');
  if (gt == std::string_view::npos) return std::nullopt;
  std::string_view name = s.substr(0, gt);
  s.remove_prefix(gt + 1);
  json args = json::object();
  for (;;) {
    s = trim(s);
    if (s == "</function>") break;
    if (!s.starts_with("<parameter=")) return std::nullopt;
    s.remove_prefix(11);
    gt = s.find('>');
    if (gt == std::string_view::npos) return std::nullopt;
    std::string key(trim(s.substr(0, gt)));
    s.remove_prefix(gt + 1);
    size_t end = std::min({s.find("</parameter>"), s.find("<parameter="), s.find("</function>")});
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view value = s.substr(0, end);
    s.remove_prefix(end);
    if (s.starts_with("</parameter>")) s.remove_prefix(12);
    if (value.starts_with("\n")) value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    args[key] = std::string(value);
  }
  auto call = named_call(name, dump_text(args));
  if (!call) return std::nullopt;
  return Calls{*call};
}

namespace {

// The parameter schemas of the tool `name`; null if tools does not declare it.
const json* parameter_schemas(const json* tools, const std::string& name) {
  if (!tools || !tools->is_array()) return nullptr;
  for (const json& tool : *tools) {
    const json& f = tool.contains("function") ? tool["function"] : tool;
    if (f.is_object() && f.value("name", "") == name) {
      if (f.contains("parameters") && f["parameters"].contains("properties")) return &f["parameters"]["properties"];
      return nullptr;
    }
  }
  return nullptr;
}

bool has_type(const json& types, std::string_view t) {
  if (types.is_string()) return types.get_ref<const std::string&>() == t;
  if (types.is_array())
    for (const json& x : types)
      if (x.is_string() && x.get_ref<const std::string&>() == t) return true;
  return false;
}

json typed_value(const std::string& text, const json* schema, bool schema_known) {
  if (!schema_known) return parse_json(text).value_or(json(text));
  if (!schema || !schema->is_object()) return text;  // undeclared parameter: vLLM keeps the text
  const json types = schema->value("type", json());
  if (has_type(types, "null") && (text == "null" || text == "None")) return nullptr;
  if (has_type(types, "string")) return text;
  auto parsed = parse_json(text);
  if (!parsed && has_type(types, "boolean") && (text == "True" || text == "False")) return text == "True";
  if (!parsed) return text;
  if (types.is_null() || (has_type(types, "integer") && parsed->is_number_integer()) ||
      (has_type(types, "number") && parsed->is_number()) || (has_type(types, "boolean") && parsed->is_boolean()) ||
      (has_type(types, "object") && parsed->is_object()) || (has_type(types, "array") && parsed->is_array()))
    return *parsed;
  return text;
}

}  // namespace

std::string type_text_arguments(const std::string& arguments, const json* tools, const std::string& name) {
  json args = json::parse(arguments);
  const json* schemas = parameter_schemas(tools, name);
  json out = json::object();
  for (const auto& [key, value] : args.items()) {
    const json* schema = schemas && schemas->contains(key) ? &(*schemas)[key] : nullptr;
    out[key] = typed_value(value.get<std::string>(), schema, schemas != nullptr);
  }
  return dump_text(out);
}

// After [TOOL_CALLS]: a JSON array of calls (Mistral Nemo, tokenizer v3),
// or NAME[ARGS]{..} / NAME[CALL_ID]ID[ARGS]{..} (tokenizer v11 and later:
// Mistral Small 3.2, Magistral, Devstral), one call per [TOOL_CALLS].
std::optional<Calls> parse_mistral(std::string_view body) {
  std::string_view s = trim(body);
  if (s.starts_with("[") || s.starts_with("{")) return parse_json_calls(s);
  size_t args = s.find("[ARGS]");
  if (args == std::string_view::npos) return std::nullopt;
  std::string_view head = s.substr(0, args);
  std::string id;
  if (size_t cid = head.find("[CALL_ID]"); cid != std::string_view::npos) {
    id = trim(head.substr(cid + 9));
    head = head.substr(0, cid);
  }
  auto call = named_call(head, s.substr(args + 6));
  if (!call) return std::nullopt;
  call->id_hint = id;
  return Calls{*call};
}

// Between <｜tool▁calls▁begin｜> and <｜tool▁calls▁end｜>, calls of
// DeepSeek-R1 / V3: <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```<｜tool▁call▁end｜>
// or of V3.1: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{..}<｜tool▁call▁end｜>.
// <｜tool▁call▁begin｜> may be missing, as llama.cpp allows (R1 distills drop it).
std::optional<Calls> parse_deepseek(std::string_view body) {
  static constexpr std::string_view kBegin = "<｜tool▁call▁begin｜>", kEnd = "<｜tool▁call▁end｜>",
                                    kSep = "<｜tool▁sep｜>";
  Calls calls;
  std::string_view s = trim(body);
  while (!s.empty()) {
    if (s.starts_with(kBegin)) s.remove_prefix(kBegin.size());
    size_t end = s.find(kEnd), sep = s.find(kSep);
    if (end == std::string_view::npos || sep == std::string_view::npos || sep > end) return std::nullopt;
    std::string_view before = s.substr(0, sep), after = s.substr(sep + kSep.size(), end - sep - kSep.size());
    s = trim(s.substr(end + kEnd.size()));
    std::optional<ToolCall> call;
    // R1's fence comes before the arguments' brace; V3.1's arguments may
    // hold fences of their own (code written to a file).
    if (size_t fence = after.find("```"); fence < after.find('{')) {
      std::string_view code = after.substr(fence + 3);
      size_t close = code.rfind("```");
      if (close == std::string_view::npos) return std::nullopt;
      code = code.substr(0, close);
      if (code.starts_with("json")) code.remove_prefix(4);
      call = named_call(after.substr(0, fence), code);
    } else {
      call = named_call(before, after);
    }
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// After <function=: NAME>{..} (functionary v3.1's Llama 3.1 format).
std::optional<Calls> parse_functionary(std::string_view body) {
  size_t gt = body.find('>');
  if (gt == std::string_view::npos) return std::nullopt;
  auto call = named_call(body.substr(0, gt), body.substr(gt + 1));
  if (!call) return std::nullopt;
  return Calls{*call};
}

}  // namespace hearth::text::tools
