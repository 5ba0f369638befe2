// tool_choice as a grammar: the calls each JSON-argument format writes are
// accepted whole, and nothing else is.
#include <gtest/gtest.h>

#include "engine/grammar/matcher.h"
#include "engine/grammar/tool_calls.h"

namespace hearth::grammar {
namespace {

using ojson = nlohmann::ordered_json;
using text::ToolCallFormat;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "weather", "parameters": {"type": "object",
     "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "time"}}
])");

bool accepts_whole(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete();
}

TEST(ToolCallGrammar, EachJsonFormatAcceptsItsOwnCallsOnly) {
  for (auto format : {ToolCallFormat::Hermes, ToolCallFormat::Llama3Json, ToolCallFormat::Mistral, ToolCallFormat::DeepSeek,
                      ToolCallFormat::FireFunction, ToolCallFormat::FunctionaryV31, ToolCallFormat::CommandR7B}) {
    SCOPED_TRACE(int(format));
    const auto any = compile_tool_calls(format, kTools, "", false);
    ASSERT_TRUE(any);
    const std::string weather = text::render_tool_call(format, "weather", R"({"city":"Oslo","days":3})");
    EXPECT_TRUE(accepts_whole(any, weather)) << weather;
    EXPECT_TRUE(accepts_whole(any, text::render_tool_call(format, "time", R"({"zone":"UTC"})")));
    // Arguments that break the schema: a missing required key, a wrong type.
    EXPECT_FALSE(accepts_whole(any, text::render_tool_call(format, "weather", R"({"days":3})")));
    EXPECT_FALSE(accepts_whole(any, text::render_tool_call(format, "weather", R"({"city":5})")));
    EXPECT_FALSE(accepts_whole(any, text::render_tool_call(format, "nope", R"({})")));
    // A named tool allows that one only; without parallel, one call.
    const auto named = compile_tool_calls(format, kTools, "time", false);
    EXPECT_FALSE(accepts_whole(named, weather));
    EXPECT_FALSE(accepts_whole(any, weather + weather));
    EXPECT_TRUE(accepts_whole(compile_tool_calls(format, kTools, "", true), weather + weather));
  }
}

TEST(ToolCallGrammar, FormatsWithoutJsonArgumentsAreNotConstrained) {
  for (auto format : {ToolCallFormat::None, ToolCallFormat::Qwen3Coder, ToolCallFormat::Gemma})
    EXPECT_FALSE(compile_tool_calls(format, kTools, "", false)) << int(format);
}

}  // namespace
}  // namespace hearth::grammar
