// Tool-call arguments streamed as they are written (OutputParser with
// stream_arguments): for each JSON-call format, whole, split at every byte
// and byte by byte, a call is a ToolCallStart, argument pieces that join to
// the arguments object as written, and a ToolCall that ends it with those
// arguments; the text around it stays as it was. Markup that does not parse
// is content besides, and its call ends with what was sent.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/tools/output_parser.h"

namespace {

using namespace hearth::text;
using Kind = OutputEvent::Kind;

const OutputFormat kHermes{ToolCallFormat::Hermes, "<think>", "</think>"};
const OutputFormat kLlama3{ToolCallFormat::Llama3Json, "", ""};
const OutputFormat kMistral{ToolCallFormat::Mistral, "", ""};
const OutputFormat kCommandR7B{ToolCallFormat::CommandR7B, "<|START_THINKING|>", "<|END_THINKING|>"};

// The events as a compact trace: "C:text" content, "S:name" a start,
// "A:text" arguments (pieces joined), "E:args" the end of a streamed call
// ("X:args" where its markup did not parse), "T:name args" a whole call.
std::vector<std::string> trace(const OutputFormat& f, const std::vector<std::string>& pieces) {
  OutputParser p(f, true, false, nullptr, true);
  std::vector<OutputEvent> events;
  for (const auto& piece : pieces) p.feed(piece, events);
  p.finish(events);
  std::vector<std::string> out;
  auto add = [&](const std::string& tag, const std::string& text) {
    if (!out.empty() && out.back().starts_with(tag) && (tag == "C:" || tag == "A:")) out.back() += text;
    else out.push_back(tag + text);
  };
  for (const auto& e : events) {
    switch (e.kind) {
      case Kind::Content: add("C:", e.text); break;
      case Kind::Reasoning: add("R:", e.text); break;
      case Kind::ToolCallStart: add("S:", e.call.name); break;
      case Kind::ToolCallArguments: add("A:", e.text); break;
      case Kind::ToolCall:
        if (!e.ends_streamed) add("T:", e.call.name + " " + e.call.arguments);
        else add(e.broken ? "X:" : "E:", e.call.arguments);
        break;
    }
  }
  return out;
}

// The same trace whole, split in two at every byte, and byte by byte.
void expect_trace(const OutputFormat& f, const std::string& text, const std::vector<std::string>& want) {
  EXPECT_EQ(trace(f, {text}), want) << "whole";
  for (size_t i = 1; i < text.size(); ++i)
    ASSERT_EQ(trace(f, {text.substr(0, i), text.substr(i)}), want) << "split at " << i;
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(trace(f, bytes), want) << "byte by byte";
}

TEST(ToolCallStreaming, HermesArgumentsStreamAsWritten) {
  const std::string args = R"({"city": "Oslo", "days": 3, "tags": ["a", {"b": null}], "ok": true})";
  expect_trace(kHermes, "Let me check.<tool_call>\n{\"name\": \"weather\", \"arguments\": " + args + "}\n</tool_call>",
               {"C:Let me check.", "S:weather", "A:" + args, "E:" + args});
}

TEST(ToolCallStreaming, ParallelCallsEachStream) {
  expect_trace(kHermes,
               "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": 1}}</tool_call>\n"
               "<tool_call>{\"name\": \"b\", \"arguments\": {\"y\": \"</\"}}</tool_call>",
               {"S:a", "A:{\"x\": 1}", "E:{\"x\": 1}", "S:b", "A:{\"y\": \"</\"}", "E:{\"y\": \"</\"}"});
}

TEST(ToolCallStreaming, Llama3AndCommandR7B) {
  expect_trace(kLlama3, R"({"name": "weather", "parameters": {"city": "Oslo"}})",
               {"S:weather", R"(A:{"city": "Oslo"})", R"(E:{"city": "Oslo"})"});
  expect_trace(kCommandR7B,
               R"(<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "weather", "parameters": {"city": "Oslo"}}]<|END_ACTION|>)",
               {"S:weather", R"(A:{"city": "Oslo"})", R"(E:{"city": "Oslo"})"});
}

TEST(ToolCallStreaming, FormsThatCannotStreamComeWhole) {
  // Arguments as a string holding JSON, and Mistral's NAME[ARGS] form.
  expect_trace(kHermes, R"(<tool_call>{"name": "w", "arguments": "{\"a\": 1}"}</tool_call>)", {R"(T:w {"a":1})"});
  expect_trace(kMistral, R"([TOOL_CALLS]weather[ARGS]{"city": "Oslo"})", {R"(T:weather {"city":"Oslo"})"});
}

TEST(ToolCallStreaming, CutShortOrBrokenMarkupEndsTheCallAndIsContent) {
  // The output ends inside the arguments.
  const std::string cut = R"(<tool_call>{"name": "weather", "arguments": {"city": "Os)";
  expect_trace(kHermes, cut, {"S:weather", R"(A:{"city": "Os)", R"(X:{"city": "Os)", "C:" + cut});
  // A byte no JSON has there stops the arguments; the markup does not parse.
  const std::string broken = R"(<tool_call>{"name": "w", "arguments": {"a": 1 <oops}}</tool_call>)";
  expect_trace(kHermes, broken, {"S:w", R"(A:{"a": 1 )", R"(X:{"a": 1 )", "C:" + broken});
  // A string left open ends at the close: the close and the text after it
  // are content only, never arguments too.
  const std::string open = R"(<tool_call>{"name": "w", "arguments": {"q": "abc</tool_call> Sure, done.)";
  expect_trace(kHermes, open, {"S:w", R"(A:{"q": "abc)", R"(X:{"q": "abc)", "C:" + open});
  // Nor does a name left open: no call starts with the close in its name.
  const std::string open_name = R"(<tool_call>{"name": "w</tool_call> ok", "arguments": {}}</tool_call>)";
  expect_trace(kHermes, open_name, {"C:" + open_name});
}

TEST(ToolCallStreaming, OffByDefault) {
  OutputParser p(kHermes, true, false);
  std::vector<OutputEvent> events;
  p.feed(R"(<tool_call>{"name": "w", "arguments": {"a": 1}})", events);
  EXPECT_TRUE(events.empty());
  p.feed("</tool_call>", events);
  p.finish(events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Kind::ToolCall);
  EXPECT_FALSE(events[0].ends_streamed);
}

}  // namespace

// A call with no closing marker (Llama 3's JSON) was found by scanning the
// whole body at every piece, and a header whose name never ended was read
// again at every piece: a megabyte written a few bytes at a time is
// hundreds of billions of steps that way. Both are linear now.
TEST(ToolCallStreaming, LongCallsWrittenInSmallPiecesStayLinear) {
  auto pieces = [](const std::string& text) {
    std::vector<std::string> out;
    for (size_t i = 0; i < text.size(); i += 7) out.push_back(text.substr(i, 7));
    return out;
  };
  const std::string args = "{\"text\": \"" + std::string(1 << 20, 'x') + "\"}";
  EXPECT_EQ(trace(kLlama3, pieces("{\"name\": \"write\", \"parameters\": " + args + "}")),
            (std::vector<std::string>{"S:write", "A:" + args, "E:" + args}));
  // A name of a megabyte: its arguments are not streamed, the call comes whole.
  const std::string name(1 << 20, 'n');
  EXPECT_EQ(trace(kHermes, pieces("<tool_call>{\"name\": \"" + name + "\", \"arguments\": {\"a\": 1}}</tool_call>")),
            (std::vector<std::string>{"T:" + name + " {\"a\":1}"}));
}
