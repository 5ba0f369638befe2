#include "engine/grammar/tool_calls.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <unordered_set>

#include "engine/grammar/json_rules.h"
#include "engine/grammar/json_schema.h"

namespace hearth::grammar {

namespace {

using ojson = nlohmann::ordered_json;

// Whether a schema holds only `keys` and annotations.
bool only_keys(const ojson& schema, std::initializer_list<std::string_view> keys) {
  for (const auto& [k, v] : schema.items()) {
    if (k == "title" || k == "description" || k == "default" || k == "examples") continue;
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) return false;
  }
  return true;
}

// One Qwen3-Coder parameter value, as the parser types it back
// (text/tools: a string parameter is the raw text, others are JSON): raw
// text without '<' (every terminator the parser looks for starts with it)
// for a plain string, the literal choices of a string enum, JSON for one
// non-string type. Anything else: nullopt, and the request is not
// constrained (it is still parsed).
std::optional<Expr> coder_value(GrammarBuilder& b, const ojson& schema) {
  if (!schema.is_object() || !schema.contains("type") || !schema["type"].is_string()) return std::nullopt;
  const std::string& type = schema["type"].get_ref<const std::string&>();
  if (type == "string") {
    if (only_keys(schema, {"type"})) {
      ByteSet ascii = byte_range(0, 0x7F);
      ascii.reset('<');
      std::vector<std::vector<Element>> alternatives = {{b.byte_element(ascii)}};
      for (auto& alt : json_rules::utf8_multibyte(b)) alternatives.push_back(std::move(alt));
      const Expr text_char = b.reserve();
      b.define(text_char, std::move(alternatives));
      return b.repeat(text_char, 0, -1);
    }
    if (!only_keys(schema, {"type", "enum"}) || !schema["enum"].is_array() || schema["enum"].empty()) return std::nullopt;
    std::vector<std::string> options;
    for (const ojson& v : schema["enum"]) {
      if (!v.is_string() || v.get_ref<const std::string&>().find('<') != std::string::npos) return std::nullopt;
      options.push_back(v.get<std::string>());
    }
    return b.literals(std::move(options));
  }
  if (type == "integer" || type == "number" || type == "boolean" || type == "object" || type == "array")
    return json_schema(b, schema);
  return std::nullopt;
}

// The strings of a `required` list (a set: a body may list a name a
// million times).
std::unordered_set<std::string> names(const ojson& required) {
  std::unordered_set<std::string> out;
  for (const ojson& r : required)
    if (r.is_string()) out.insert(r.get<std::string>());
  return out;
}

// A tool's parameters schema as its properties and required names (none
// where it has no parameters); nullopt where the call cannot be
// constrained: a $ref anywhere, or properties / required of the wrong type.
struct Parameters {
  ojson properties = ojson::object();
  std::unordered_set<std::string> required;
};
std::optional<Parameters> call_parameters(const ojson* parameters) {
  Parameters out;
  if (!parameters || !parameters->is_object() || parameters->empty()) return out;
  if (parameters->dump().find("\"$ref\"") != std::string::npos) return std::nullopt;
  out.properties = parameters->value("properties", ojson::object());
  const ojson required = parameters->value("required", ojson::array());
  if (!out.properties.is_object() || !required.is_array()) return std::nullopt;
  out.required = names(required);
  return out;
}

// <tool_call>\n<function=NAME>\n(<parameter=KEY>\nVALUE\n</parameter>\n)*</function>\n</tool_call>,
// the parameters in the schema's order, the required ones always there.
// Built from the end, each optional one a choice of itself and what
// follows, so that any number of them never makes a long run of skippable
// parts (GrammarBuilder::kMaxSkippableRun).
std::optional<Expr> coder_call(GrammarBuilder& b, const std::string& name, const ojson* parameters) {
  const auto spec = call_parameters(parameters);
  if (!spec) return std::nullopt;
  std::vector<std::pair<Expr, bool>> params;  // each, and whether it is required
  for (const auto& [key, schema] : spec->properties.items()) {
    if (key.find('>') != std::string::npos || key.find('<') != std::string::npos) return std::nullopt;
    auto value = coder_value(b, schema);
    if (!value) return std::nullopt;
    params.emplace_back(b.sequence({b.literal("<parameter=" + key + ">\n"), *value, b.literal("\n</parameter>\n")}),
                        spec->required.count(key) > 0);
  }
  Expr rest = b.literal("</function>\n</tool_call>");
  for (size_t i = params.size(); i-- > 0;) {
    const Expr with = b.sequence({params[i].first, rest});
    rest = params[i].second ? with : b.choice({with, rest});
  }
  return b.sequence({b.literal("<tool_call>\n<function=" + name + ">\n"), rest});
}

// One Gemma (Python call syntax) keyword value, as the pythonic parser
// reads it back: a double-quoted string whose escapes are the ones it
// knows (\" \\ \n \t \r), a string enum, a JSON number (also a Python
// one), True/False. Anything else: nullopt (not constrained).
std::optional<Expr> python_value(GrammarBuilder& b, const ojson& schema) {
  if (!schema.is_object() || !schema.contains("type") || !schema["type"].is_string()) return std::nullopt;
  const std::string& type = schema["type"].get_ref<const std::string&>();
  if (type == "string" && only_keys(schema, {"type"})) {
    ByteSet plain = byte_range(0x20, 0x7F);
    plain.reset('"');
    plain.reset('\\');
    ByteSet escaped;
    for (char c : std::string_view("\"\\ntr")) escaped.set(uint8_t(c));
    std::vector<std::vector<Element>> alternatives = {
        {b.byte_element(plain)}, {b.byte_element(single_byte('\\')), b.byte_element(escaped)}};
    for (auto& alt : json_rules::utf8_multibyte(b)) alternatives.push_back(std::move(alt));
    const Expr ch = b.reserve();
    b.define(ch, std::move(alternatives));
    return b.sequence({b.literal("\""), b.repeat(ch, 0, -1), b.literal("\"")});
  }
  if (type == "string" && only_keys(schema, {"type", "enum"}) && schema["enum"].is_array() && !schema["enum"].empty()) {
    std::vector<std::string> options;
    for (const ojson& v : schema["enum"]) {
      if (!v.is_string()) return std::nullopt;
      const std::string& text = v.get_ref<const std::string&>();
      for (unsigned char c : text)
        if (c < 0x20 || c == '"' || c == '\\') return std::nullopt;
      options.push_back("\"" + text + "\"");
    }
    return b.literals(std::move(options));
  }
  if (type == "integer" || type == "number") return json_schema(b, schema);
  if (type == "boolean" && only_keys(schema, {"type"})) return b.choice({b.literal("True"), b.literal("False")});
  return std::nullopt;
}

// NAME(key=value, ..): the parameters in the schema's order, the required
// ones always there, ", " only between those present.
std::optional<Expr> python_call(GrammarBuilder& b, const std::string& name, const ojson* parameters) {
  const auto spec = call_parameters(parameters);
  if (!spec) return std::nullopt;
  Expr first = b.literal(""), rest = b.literal("");  // what may follow: with no parameter yet / after one
  std::vector<std::pair<std::string, const ojson*>> items;
  for (const auto& [key, schema] : spec->properties.items()) items.emplace_back(key, &schema);
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    const std::string& key = it->first;
    if (key.empty() || !std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(uint8_t(c)) || c == '_'; }))
      return std::nullopt;
    auto value = python_value(b, *it->second);
    if (!value) return std::nullopt;
    const Expr param = b.sequence({b.literal(key + "="), *value});
    const Expr as_first = b.sequence({param, rest}), as_next = b.sequence({b.literal(", "), param, rest});
    if (spec->required.count(key)) {
      first = as_first, rest = as_next;
    } else {
      first = b.choice({as_first, first}), rest = b.choice({as_next, rest});
    }
  }
  return b.sequence({b.literal(name + "("), first, b.literal(")")});
}

}  // namespace

std::optional<Expr> tool_calls(GrammarBuilder& b, text::ToolCallFormat format, const nlohmann::ordered_json& tools,
                               std::string_view only_name, bool parallel) {
  // The format's text around a call's arguments, found by rendering a
  // marker where they go.
  constexpr std::string_view kArguments = "\x01";
  std::vector<Expr> calls;
  for (const auto& tool : tools) {
    const auto& fn = tool["function"];
    const std::string& name = fn["name"].get_ref<const std::string&>();
    if (!only_name.empty() && name != only_name) continue;
    const auto it = fn.find("parameters");
    const bool any = it == fn.end() || it->is_null() || it->empty();
    if (format == text::ToolCallFormat::Qwen3Coder || format == text::ToolCallFormat::Gemma) {
      auto call = format == text::ToolCallFormat::Gemma ? python_call(b, name, any ? nullptr : &*it)
                                                         : coder_call(b, name, any ? nullptr : &*it);
      if (!call) return std::nullopt;
      calls.push_back(*call);
      continue;
    }
    const std::string text = text::render_tool_call(format, name, kArguments);
    const size_t at = text.find(kArguments);
    if (at == std::string::npos) return std::nullopt;
    const nlohmann::ordered_json object = {{"type", "object"}};
    calls.push_back(b.sequence({b.literal(text.substr(0, at)), json_schema(b, any ? object : *it),
                                b.literal(text.substr(at + kArguments.size()))}));
  }
  if (calls.empty()) return std::nullopt;
  const Expr call = calls.size() == 1 ? calls[0] : b.choice(calls);
  if (format == text::ToolCallFormat::Gemma) {  // one Python list: [a(..)] or [a(..), b(..)]
    std::vector<Expr> list = {b.literal("["), call};
    if (parallel) list.push_back(b.repeat(b.sequence({b.literal(", "), call}), 0, -1));
    list.push_back(b.literal("]"));
    return b.sequence(list);
  }
  return parallel ? b.repeat(call, 1, -1) : call;
}

std::shared_ptr<const Grammar> compile_tool_calls(text::ToolCallFormat format, const nlohmann::ordered_json& tools,
                                                  std::string_view only_name, bool parallel) {
  GrammarBuilder b;
  const std::optional<Expr> calls = tool_calls(b, format, tools, only_name, parallel);
  return calls ? b.build(*calls) : nullptr;
}

}  // namespace hearth::grammar
