// OutputParser: model output → content, reasoning and tool calls, for each
// format, with outputs written as the templates and the references (vLLM's
// tool parsers, llama.cpp's common/chat.cpp) have them. Every case is parsed
// whole, split at every byte position, and byte by byte: all must agree.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "text_tool_calls_support.h"

namespace {

using namespace tool_calls_test;

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

// tests/fuzz/text_output_parser_fuzz: bytes that are not UTF-8 in a value
// the model wrote as bare text made building the arguments' JSON throw.
TEST(ToolCalls, BytesThatAreNotUtf8InArgumentsBecomeReplacementCharacters) {
  EXPECT_EQ(parse(kQwen3Coder, "<tool_call>\n<function=f>\n<parameter=a>\n[\"a\xe1]\n</parameter>\n</function>\n</tool_call>"),
            (Events{"T:f {\"a\":\"[\\\"a\xEF\xBF\xBD]\"}"}));
  EXPECT_EQ(parse(kGemma, "[f(s='x\xff')]"), (Events{"T:f {\"s\":\"x\xEF\xBF\xBD\"}"}));
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
  // Arguments holding fences (a file of code) are V3.1's arguments, not
  // R1's fenced block; R1's fenced block may hold fences too.
  EXPECT_EQ(parse(kDeepSeek,
                  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write<｜tool▁sep｜>{\"text\": \"```bash\\nmake\\n```\"}"
                  "<｜tool▁call▁end｜><｜tool▁call▁begin｜>write<｜tool▁sep｜>{\"text\": \"a ``` b\"}<｜tool▁call▁end｜>"
                  "<｜tool▁call▁begin｜>function<｜tool▁sep｜>write\n```json\n{\"text\": \"```py\\nx\\n```\"}\n```"
                  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"),
            (Events{"T:write {\"text\":\"```bash\\nmake\\n```\"}", "T:write {\"text\":\"a ``` b\"}",
                    "T:write {\"text\":\"```py\\nx\\n```\"}"}));
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
  // Python's escapes, as Python reads them: \u, \U, \x and octal are
  // characters, \<newline> is nothing, an unknown escape stays as written;
  // \N{..} and a lone surrogate name no UTF-8, so the call is content.
  EXPECT_EQ(parse(kGemma, R"([f(s="caf\u00e9 \U0001F600 \x41\101\0 \b\f\v\a \d \
x")])"),
            (Events{"T:f {\"s\":\"café 😀 AA\\u0000 \\b\\f\\u000b\\u0007 \\\\d x\"}"}));
  EXPECT_EQ(parse(kGemma, R"([f(s="\N{BULLET}")])"), (Events{R"(C:[f(s="\N{BULLET}")])"}));
  EXPECT_EQ(parse(kGemma, R"([f(s="\ud800")])"), (Events{R"(C:[f(s="\ud800")])"}));
  EXPECT_EQ(parse(kGemma, "```python\nx = 1\n```"), (Events{"C:```python\nx = 1\n```"}));
  // The bare list Google's current guide asks for.
  EXPECT_EQ(parse(kGemma, "[get_product_name_by_PID(PID=\"807ZPKBL9V\"), f(s='a]b', t=[1, (2, 3)])]"),
            (Events{"T:get_product_name_by_PID {\"PID\":\"807ZPKBL9V\"}", "T:f {\"s\":\"a]b\",\"t\":[1,[2,3]]}"}));
  EXPECT_EQ(parse(kGemma, "[1, 2] are numbers"), (Events{"C:[1, 2] are numbers"}));
  EXPECT_EQ(parse(kGemma, "See [docs](x) and [f(a=1)]"), (Events{"C:See [docs](x) and [f(a=1)]"}));
  EXPECT_EQ(parse(kGemma, "[2fa_code(x=1)]"), (Events{"T:2fa_code {\"x\":1}"}));  // a name may lead with a digit
  EXPECT_EQ(parse(kGemma, "[Note: I can't browse] Here's what I know."),
            (Events{"C:[Note: I can't browse] Here's what I know."}));
}

// An opener that is prose too ("functools", Gemma's bare "[") with a start
// no call has: the text comes out as it streams, not at the end of output
// (a quote in "can't" once held a whole reply for a closing quote).
TEST(ToolCalls, ProseAfterAnOpenerThatIsAlsoAWordStreams) {
  auto streamed_before_end = [](const OutputFormat& f, std::string_view text) {
    OutputParser p(f, true, false);
    std::vector<OutputEvent> events;
    p.feed(text, events);
    std::string content;
    for (const auto& e : events) content += e.kind == Kind::Content ? e.text : "?";
    return content;
  };
  EXPECT_EQ(streamed_before_end(kGemma, "[Note: I can't browse the web"), "[Note: I can't browse the web");
  EXPECT_EQ(streamed_before_end(kGemma, "[1, 2, and"), "[1, 2, and");
  EXPECT_EQ(streamed_before_end(kFireFunction, "Use functools.lru_cache for it"), "Use functools.lru_cache for it");
  // A start that may still be a call is held.
  EXPECT_EQ(streamed_before_end(kGemma, "[get_weather"), "");
  EXPECT_EQ(streamed_before_end(kFireFunction, "Sure. functools  "), "Sure.");
  EXPECT_EQ(parse(kFireFunction, "Use functools.lru_cache, or functools[{\"name\": \"f\", \"arguments\": {}}]"),
            (Events{"C:Use functools.lru_cache, or", "T:f {}"}));
}

// A model made to nest (logit_bias on '[') must not overflow the stack of
// the reader or of the dumps after it: past a request body's depth (64) its
// call is plain content.
TEST(ToolCalls, CallsNestedPastTheBodyDepthAreContent) {
  const std::string deep_py = "```tool_code\nf(a=" + std::string(5000, '[') + std::string(5000, ']') + ")\n```";
  EXPECT_EQ(parse(kGemma, deep_py), (Events{"C:" + deep_py}));
  std::string prints = "```tool_code\n";
  for (int i = 0; i < 70; ++i) prints += "print(";
  prints += "f()" + std::string(70, ')') + "\n```";
  EXPECT_EQ(parse(kGemma, prints), (Events{"C:" + prints}));
  const std::string ok_py = "```tool_code\nf(a=" + std::string(60, '[') + std::string(60, ']') + ")\n```";
  const Events ok = parse(kGemma, ok_py);
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].rfind("T:f ", 0), 0u) << ok[0];
  const std::string deep_json = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(5000, '[') +
                                std::string(5000, ']') + "}}</tool_call>";
  EXPECT_EQ(parse(kHermes, deep_json), (Events{"C:" + deep_json}));
}


}  // namespace
