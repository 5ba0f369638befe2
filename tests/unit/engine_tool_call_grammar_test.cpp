// tool_choice as a grammar: the calls each format writes are accepted
// whole, and nothing else is; sampled Qwen3-Coder and Gemma calls parse
// back into arguments that validate.
#include <gtest/gtest.h>

#include <random>

#include "engine/decoding.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar/tool_calls.h"
#include "engine_grammar_test_support.h"

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

// What the output parser makes of a whole reply in this format.
std::vector<text::OutputEvent> parse_reply(ToolCallFormat format, const ojson& tools, const std::string& reply) {
  text::OutputParser parser({format, "", ""}, true, false, &tools);
  std::vector<text::OutputEvent> events;
  parser.feed(reply, events);
  parser.finish(events);
  return events;
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

// Tool names may hold '-' and '.' (server/tool_names): in every format, the
// call the grammar allows for such a name reads back as that name.
TEST(ToolCallGrammar, NamesWithDashesAndDotsReadBackInEveryFormat) {
  const ojson tools = ojson::parse(R"([{"type":"function","function":{"name":"get-weather.v2",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])");
  for (auto format : {ToolCallFormat::Hermes, ToolCallFormat::Qwen3Coder, ToolCallFormat::Llama3Json, ToolCallFormat::Mistral,
                      ToolCallFormat::DeepSeek, ToolCallFormat::FireFunction, ToolCallFormat::FunctionaryV31,
                      ToolCallFormat::CommandR7B, ToolCallFormat::Gemma}) {
    SCOPED_TRACE(int(format));
    const std::string call = text::render_tool_call(format, "get-weather.v2", R"({"city":"Oslo"})");
    EXPECT_TRUE(accepts_whole(compile_tool_calls(format, tools, "get-weather.v2", false), call)) << call;
    const auto events = parse_reply(format, tools, call);
    ASSERT_EQ(events.size(), 1u) << call;
    EXPECT_EQ(events[0].kind, text::OutputEvent::Kind::ToolCall) << call;
    EXPECT_EQ(events[0].call.name, "get-weather.v2");
    EXPECT_EQ(ojson::parse(events[0].call.arguments), ojson::parse(R"({"city":"Oslo"})"));
  }
}

// A tool of many optional parameters (past GrammarBuilder::kMaxSkippableRun)
// is constrained in Qwen3-Coder's format too: any of them may be left out.
TEST(ToolCallGrammar, Qwen3CoderTakesAToolOfManyOptionalParameters) {
  ojson props = ojson::object();
  for (int i = 0; i < 100; ++i) {
    std::string key = std::to_string(i);
    props[key.insert(0, 1, 'p')] = {{"type", "integer"}};  // (not "p" + ..: GCC 12's false -Wrestrict)
  }
  const ojson tools = ojson::array({{{"type", "function"}, {"function", {{"name", "wide"},
      {"parameters", {{"type", "object"}, {"properties", props}, {"required", ojson::array({"p50"})}}}}}}});
  const auto g = compile_tool_calls(ToolCallFormat::Qwen3Coder, tools, "wide", false);
  ASSERT_TRUE(g);
  auto call = [](const char* args) { return text::render_tool_call(ToolCallFormat::Qwen3Coder, "wide", args); };
  EXPECT_TRUE(accepts_whole(g, call(R"({"p50":1})")));
  EXPECT_TRUE(accepts_whole(g, call(R"({"p0":1,"p50":2,"p99":3})")));
  EXPECT_FALSE(accepts_whole(g, call(R"({"p99":3})")));           // p50 is required
  EXPECT_FALSE(accepts_whole(g, call(R"({"p50":2,"p0":1})")));    // the schema's order
}

TEST(ToolCallGrammar, NoneIsNotConstrained) { EXPECT_FALSE(compile_tool_calls(ToolCallFormat::None, kTools, "", false)); }

const ojson kPythonTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "weather", "parameters": {"type": "object",
     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
                    "unit": {"type": "string", "enum": ["C", "F"]}, "rain": {"type": "boolean"}},
     "required": ["city"]}}},
  {"type": "function", "function": {"name": "time"}}
])");

TEST(ToolCallGrammar, GemmaPythonCallsWithSeparatorsOnlyBetweenPresentKeywords) {
  const auto any = compile_tool_calls(ToolCallFormat::Gemma, kPythonTools, "", false);
  ASSERT_TRUE(any);
  auto call = [](const char* name, const char* args) { return text::render_tool_call(ToolCallFormat::Gemma, name, args); };
  EXPECT_TRUE(accepts_whole(any, call("weather", R"({"city":"Oslo"})")));
  EXPECT_TRUE(accepts_whole(any, call("weather", R"({"city":"a \"b\"\n","days":3,"unit":"F","rain":true})")));
  EXPECT_TRUE(accepts_whole(any, call("weather", R"({"city":"Oslo","rain":false})")));
  EXPECT_TRUE(accepts_whole(any, call("time", "{}")));
  EXPECT_FALSE(accepts_whole(any, call("weather", R"({"days":3})")));                 // city is required
  EXPECT_FALSE(accepts_whole(any, call("weather", R"({"city":"Oslo","days":15})")));  // out of range
  EXPECT_FALSE(accepts_whole(any, "[weather(, city=\"Oslo\")]"));
  EXPECT_FALSE(accepts_whole(any, call("weather", R"({"city":"Oslo"})") + call("time", "{}")));
  const auto parallel = compile_tool_calls(ToolCallFormat::Gemma, kPythonTools, "", true);
  EXPECT_TRUE(accepts_whole(parallel, "[weather(city=\"Oslo\"), time()]"));
  // Nested objects would need Python literals all the way down: not constrained.
  const ojson nested = ojson::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
      "properties":{"o":{"type":"object"}}}}}])");
  EXPECT_FALSE(compile_tool_calls(ToolCallFormat::Gemma, nested, "", false));
}

const ojson kCoderTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "weather", "parameters": {"type": "object",
     "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                    "unit": {"type": "string", "enum": ["C", "F"]},
                    "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}},
     "required": ["city", "unit"]}}},
  {"type": "function", "function": {"name": "time"}}
])");

TEST(ToolCallGrammar, Qwen3CoderParametersInSchemaOrderTypedAsTheParserReadsThem) {
  const auto any = compile_tool_calls(ToolCallFormat::Qwen3Coder, kCoderTools, "", false);
  ASSERT_TRUE(any);
  auto call = [](const char* name, const char* args) { return text::render_tool_call(ToolCallFormat::Qwen3Coder, name, args); };
  EXPECT_TRUE(accepts_whole(any, call("weather", R"({"city":"New York","unit":"C"})")));
  EXPECT_TRUE(accepts_whole(any, call("weather", R"({"city":"Oslo\nwest","days":3,"unit":"F","where":{"lat":1.5}})")));
  EXPECT_TRUE(accepts_whole(any, call("time", "{}")));
  EXPECT_FALSE(accepts_whole(any, call("weather", R"({"city":"Oslo"})")));               // unit is required
  EXPECT_FALSE(accepts_whole(any, call("weather", R"({"city":"Oslo","unit":"K"})")));    // not in the enum
  EXPECT_FALSE(accepts_whole(any, call("weather", R"({"city":"Oslo","days":"x","unit":"C"})")));
  EXPECT_FALSE(accepts_whole(any, call("weather", R"({"unit":"C","city":"Oslo"})")));    // out of order
  EXPECT_FALSE(accepts_whole(any, call("weather", R"({"city":"a<b","unit":"C"})")));     // '<' ends a value
  // What it cannot constrain soundly: a string with length limits, a $ref.
  const ojson limited = ojson::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
      "properties":{"s":{"type":"string","maxLength":3}}}}}])");
  EXPECT_FALSE(compile_tool_calls(ToolCallFormat::Qwen3Coder, limited, "", false));
}

// 100 calls sampled from random logits through the grammar; the parser
// reads each back as one call whose arguments validate.
void sample_calls_and_validate(ToolCallFormat tool_format, const ojson& tools) {
  const auto bytes = test::synthetic_token_bytes();
  const auto vocab = std::make_shared<const Vocabulary>(bytes);
  const int32_t stop = int32_t(bytes.size() - 1);
  const Constraint constraint{compile_tool_calls(tool_format, tools, "weather", false), vocab};
  const ojson& schema = tools[0]["function"]["parameters"];
  std::minstd_rand rng(99);
  std::vector<float> logits(bytes.size());
  for (int run = 0; run < 100; ++run) {
    SamplingParams sampling;
    sampling.seed = uint64_t(run);
    Decoding d({0}, sampling, {{stop}, 600, 100000}, constraint);
    std::string out;
    while (!d.finished()) {
      for (float& l : logits) l = float(rng() % 8192) / 1024.0f;
      logits['<'] += 5, logits['\n'] += 5, logits['"'] += 5;  // free text ends in a few dozen tokens, not thousands
      const int32_t token = d.next(logits);
      if (token != stop) out += vocab->bytes(token);
    }
    ASSERT_EQ(*d.finished(), FinishReason::Stop) << out;
    const auto events = parse_reply(tool_format, tools, out);
    ASSERT_EQ(events.size(), 1u) << out;
    ASSERT_EQ(events[0].kind, text::OutputEvent::Kind::ToolCall) << out;
    EXPECT_EQ(events[0].call.name, "weather");
    const ojson args = ojson::parse(events[0].call.arguments);
    EXPECT_TRUE(test::validates(args, schema, schema)) << out << "\n" << args.dump();
  }
}

TEST(ToolCallGrammar, HundredSampledQwen3CoderCallsParseAndValidate) {
  sample_calls_and_validate(ToolCallFormat::Qwen3Coder, kCoderTools);
}

TEST(ToolCallGrammar, HundredSampledGemmaCallsParseAndValidate) {
  sample_calls_and_validate(ToolCallFormat::Gemma, kPythonTools);
}

}  // namespace
}  // namespace hearth::grammar
