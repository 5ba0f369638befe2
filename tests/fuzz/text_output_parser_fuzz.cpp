// The model's output split into content, reasoning and tool calls
// (text/tools/output_parser.h) on fuzzed text: a client's prompt can make
// a model write anything. The first byte: its low 5 bits pick the tool-call
// format (modulo the number of formats, in ToolCallFormat's order), 0x80
// says the request offered tools, 0x40 that the family has <think> markup,
// 0x20 (with 0x40) that the prompt opened a reasoning block. The second
// byte is the size of the pieces the text is fed in (1 + byte % 16); the
// rest is the text.
// Nothing may throw; feeding the text in pieces gives the same events as
// feeding it whole; a call's arguments are a JSON object's text.
#include <cstdint>
#include <exception>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "text/tools/output_parser.h"

using namespace hearth;
using ojson = nlohmann::ordered_json;

namespace {

constexpr int kFormats = int(text::ToolCallFormat::Gemma) + 1;

const ojson& tools() {
  static const ojson t = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                                       "units": {"enum": ["c", "f"]}, "tags": {"type": "array"}}}}},
    {"type": "function", "function": {"name": "python", "parameters": {"type": "object",
      "properties": {"code": {"type": "string"}}}}}
  ])");
  return t;
}

// Events with runs of content (or reasoning) joined: how text is cut into
// events may depend on the pieces, what they say may not.
std::vector<text::OutputEvent> parse(const text::OutputFormat& format, bool tools_on, bool in_reasoning,
                                     std::string_view out, size_t piece) {
  text::OutputParser parser(format, tools_on, in_reasoning, &tools());
  std::vector<text::OutputEvent> events;
  for (size_t i = 0; i < out.size(); i += piece) parser.feed(out.substr(i, piece), events);
  parser.finish(events);
  std::vector<text::OutputEvent> joined;
  for (auto& e : events) {
    if (e.kind != text::OutputEvent::Kind::ToolCall && !joined.empty() && joined.back().kind == e.kind)
      joined.back().text += e.text;
    else if (e.kind == text::OutputEvent::Kind::ToolCall || !e.text.empty())
      joined.push_back(std::move(e));
  }
  return joined;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  text::OutputFormat format;
  format.tool_calls = text::ToolCallFormat((data[0] & 0x1f) % kFormats);
  const bool tools_on = data[0] & 0x80, think = data[0] & 0x40, in_reasoning = think && (data[0] & 0x20);
  if (think) format.think_open = "<think>", format.think_close = "</think>";
  const size_t piece = 1 + data[1] % 16;
  const std::string_view out(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    const auto whole = parse(format, tools_on, in_reasoning, out, out.size() + 1);
    const auto pieces = parse(format, tools_on, in_reasoning, out, piece);
    HEARTH_FUZZ_CHECK(whole.size() == pieces.size());
    for (size_t i = 0; i < whole.size(); ++i) {
      HEARTH_FUZZ_CHECK(whole[i].kind == pieces[i].kind);
      HEARTH_FUZZ_CHECK(whole[i].text == pieces[i].text);
      HEARTH_FUZZ_CHECK(whole[i].call.name == pieces[i].call.name);
      HEARTH_FUZZ_CHECK(whole[i].call.arguments == pieces[i].call.arguments);
      HEARTH_FUZZ_CHECK(whole[i].call.id_hint == pieces[i].call.id_hint);
      if (whole[i].kind == text::OutputEvent::Kind::ToolCall) {
        const ojson args = ojson::parse(whole[i].call.arguments);
        HEARTH_FUZZ_CHECK(args.is_object());
      }
    }
    (void)text::prompt_opens_reasoning(format, out);
    (void)text::detect_output_format(out);
  } catch (const std::exception& e) {
    fuzz::unexpected("the output parser", e.what());
  }
  return 0;
}
