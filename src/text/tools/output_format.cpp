// Which markup a chat template's model writes (detected from the markers
// the template itself prints), and each format's tool-call syntax as data.
#include <nlohmann/json.hpp>

#include "text/tools/tool_syntax.h"

namespace hearth::text {

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::string json_string(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

}  // namespace

OutputFormat detect_output_format(std::string_view t) {
  OutputFormat f;
  // Most specific first: Qwen3-Coder's calls also sit in <tool_call>, and
  // functionary v3.1's template also mentions <|python_tag|>.
  if (contains(t, "tool▁calls▁begin")) f.tool_calls = ToolCallFormat::DeepSeek;
  else if (contains(t, "<tool_call>") && contains(t, "<parameter=")) f.tool_calls = ToolCallFormat::Qwen3Coder;
  else if (contains(t, "<tool_call>")) f.tool_calls = ToolCallFormat::Hermes;
  else if (contains(t, "[TOOL_CALLS]")) f.tool_calls = ToolCallFormat::Mistral;
  else if (contains(t, "<|START_ACTION|>")) f.tool_calls = ToolCallFormat::CommandR7B;
  else if (contains(t, "functools[")) f.tool_calls = ToolCallFormat::FireFunction;
  else if (contains(t, "<function=")) f.tool_calls = ToolCallFormat::FunctionaryV31;
  else if (contains(t, "<|start_header_id|>") && (contains(t, "<|python_tag|>") || contains(t, "\"parameters\"")))
    f.tool_calls = ToolCallFormat::Llama3Json;
  else if (contains(t, "<start_of_turn>")) f.tool_calls = ToolCallFormat::Gemma;

  if (contains(t, "</think>")) f.think_open = "<think>", f.think_close = "</think>";
  else if (contains(t, "<|START_THINKING|>")) f.think_open = "<|START_THINKING|>", f.think_close = "<|END_THINKING|>";
  else if (contains(t, "[/THINK]")) f.think_open = "[THINK]", f.think_close = "[/THINK]";
  return f;
}

bool prompt_opens_reasoning(const OutputFormat& format, std::string_view prompt) {
  if (format.think_open.empty()) return false;
  return tools::trim(prompt).ends_with(format.think_open);
}

std::string tool_call_prefix(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::None: return "";
    case ToolCallFormat::Hermes:
    case ToolCallFormat::Qwen3Coder: return "<tool_call>";
    case ToolCallFormat::Llama3Json: return "{\"name\": \"";
    case ToolCallFormat::Mistral: return "[TOOL_CALLS]";
    case ToolCallFormat::DeepSeek: return "<｜tool▁calls▁begin｜>";
    case ToolCallFormat::FireFunction: return " functools[";
    case ToolCallFormat::FunctionaryV31: return "<function=";
    case ToolCallFormat::CommandR7B: return "<|START_ACTION|>";
    case ToolCallFormat::Gemma: return "[";
  }
  return "";
}

std::string render_tool_call(ToolCallFormat format, std::string_view name, std::string_view args) {
  const std::string n(name), a(args);
  switch (format) {
    case ToolCallFormat::None: return "";
    case ToolCallFormat::Hermes: return "<tool_call>\n{\"name\": " + json_string(n) + ", \"arguments\": " + a + "}\n</tool_call>";
    case ToolCallFormat::Qwen3Coder: {
      std::string out = "<tool_call>\n<function=" + n + ">\n";
      auto obj = nlohmann::ordered_json::parse(a, nullptr, false);
      if (obj.is_object())
        for (const auto& [k, v] : obj.items())
          out += "<parameter=" + k + ">\n" + (v.is_string() ? v.get<std::string>() : v.dump()) + "\n</parameter>\n";
      return out + "</function>\n</tool_call>";
    }
    case ToolCallFormat::Llama3Json: return "{\"name\": " + json_string(n) + ", \"parameters\": " + a + "}";
    case ToolCallFormat::Mistral: return "[TOOL_CALLS][{\"name\": " + json_string(n) + ", \"arguments\": " + a + "}]";
    case ToolCallFormat::DeepSeek:
      return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + n + "\n```json\n" + a +
             "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    case ToolCallFormat::FireFunction: return " functools[{\"name\": " + json_string(n) + ", \"arguments\": " + a + "}]";
    case ToolCallFormat::FunctionaryV31: return "<function=" + n + ">" + a + "</function>";
    case ToolCallFormat::CommandR7B:
      return "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": " + json_string(n) + ", \"parameters\": " + a +
             "}]<|END_ACTION|>";
    case ToolCallFormat::Gemma: return "[" + n + "(" + tools::python_keyword_arguments(a) + ")]";
  }
  return "";
}

namespace tools {

const std::vector<Section>& sections_of(ToolCallFormat format) {
  static const std::vector<Section> none;
  static const std::vector<Section> hermes{
      {.open = "<tool_call>", .close = "</tool_call>", .parse = parse_json_calls, .json_call = true}};
  static const std::vector<Section> qwen3_coder{
      {.open = "<tool_call>", .close = "</tool_call>", .parse = parse_qwen3_coder, .text_arguments = true}};
  // vLLM's llama3_json and llama.cpp both take a JSON call at the start of
  // the output, or after <|python_tag|>; ";" separates several.
  static const std::vector<Section> llama3{
      {.open = "<|python_tag|>", .parse = parse_json_calls, .separators = ";", .json_call = true},
      {.open = "{", .parse = parse_json_calls, .start_only = true, .open_in_body = true, .separators = ";", .json_call = true}};
  static const std::vector<Section> mistral{{.open = "[TOOL_CALLS]", .parse = parse_mistral, .json_call = true}};
  // The misspelt openers R1 distills write too, as llama.cpp accepts them.
  static const std::vector<Section> deepseek = [] {
    std::vector<Section> v;
    for (const char* open : {"<｜tool▁calls▁begin｜>", "<｜tool_calls_begin｜>", "<｜tool calls begin｜>",
                             "<｜tool\\_calls\\_begin｜>", "<｜tool▁calls｜>"})
      v.push_back({.open = open, .close = "<｜tool▁calls▁end｜>", .close_optional_at_end = true, .parse = parse_deepseek});
    return v;
  }();
  // The template prints " functools[" after content; the space is whitespace before markup.
  static const std::vector<Section> firefunction{
      {.open = "functools", .parse = parse_json_calls, .json_call = true, .may_be_calls = may_be_json_calls}};
  static const std::vector<Section> functionary{
      {.open = "<function=", .close = "</function>", .parse = parse_functionary}};
  // llama.cpp drops the response markers around the answer too.
  static const std::vector<Section> command_r7b{
      {.open = "<|START_ACTION|>", .close = "<|END_ACTION|>", .parse = parse_json_calls, .json_call = true},
      {.open = "<|START_RESPONSE|>", .drop = true},
      {.open = "<|END_RESPONSE|>", .drop = true}};
  // Google's function-calling guide for Gemma 3 asks for a bare Python list
  // of calls, [f(a=1), g(b="x")], with no other text; earlier guides for a
  // ```tool_code block.
  static const std::vector<Section> gemma{
      {.open = "```tool_code", .close = "```", .parse = parse_pythonic},
      {.open = "[", .parse = parse_pythonic, .start_only = true, .open_in_body = true,
       .may_be_calls = may_be_python_calls}};
  switch (format) {
    case ToolCallFormat::None: return none;
    case ToolCallFormat::Hermes: return hermes;
    case ToolCallFormat::Qwen3Coder: return qwen3_coder;
    case ToolCallFormat::Llama3Json: return llama3;
    case ToolCallFormat::Mistral: return mistral;
    case ToolCallFormat::DeepSeek: return deepseek;
    case ToolCallFormat::FireFunction: return firefunction;
    case ToolCallFormat::FunctionaryV31: return functionary;
    case ToolCallFormat::CommandR7B: return command_r7b;
    case ToolCallFormat::Gemma: return gemma;
  }
  return none;
}

}  // namespace tools

}  // namespace hearth::text
