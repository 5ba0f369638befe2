// Chat templates from fuzzed bytes: parsed, then rendered with a fixed
// conversation that has what real templates look at (system, user text and
// parts, an assistant turn with reasoning and tool calls, a tool result,
// tools, kwargs). Every failure must be a TemplateError (text/jinja/error.h):
// syntax, raise_exception, undefined, type, sandbox, or a limit (nesting,
// recursion, range, output and loop sizes) — never a crash, a hang or
// unbounded memory.
#include <cstdint>
#include <exception>

#include "fuzz_support.h"
#include "text/chat.h"
#include "text/jinja/jinja.h"

using namespace hearth;
using ojson = nlohmann::ordered_json;

namespace {

const ojson& messages() {
  static const ojson m = ojson::parse(R"([
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "", "reasoning_content": "The user wants the weather.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
    {"role": "assistant", "content": "It is 21 degrees."},
    {"role": "user", "content": [{"type": "text", "text": "Thanks! "}, {"type": "text", "text": "And tomorrow?"}]}
  ])");
  return m;
}

const ojson& tools() {
  static const ojson t = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                     "required": ["city"]}}}
  ])");
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const text::ChatTemplate t = text::ChatTemplate::from_string(source, "<s>", "</s>");
    // A two-hundredth of the default work budget: under ASan a step costs
    // microseconds, and a template that loops for long must hit the limit
    // well within libFuzzer's timeout.
    text::jinja::RenderLimits limits;
    limits.max_steps = 100'000;
    (void)t.render(messages(), tools(), true, ojson{{"enable_thinking", true}}, limits);
  } catch (const text::TemplateError&) {
  } catch (const std::exception& e) {
    fuzz::unexpected("the template engine", e.what());
  }
  return 0;
}
