// ReplyStream, end to end from the engine: the bundled model is held to an
// exact text by a grammar literal, and the reply events that text makes are
// checked: a streamed call's start, arguments and end; a call whose markup
// does not parse ends as broken and is no call (finish reason, gathered
// reply); reasoning tokens are counted; every token's logprobs are handed
// out once, with the text they carried.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/grammar/vocabulary.h"
#include "server/reply.h"

namespace hearth::server {
namespace {

const std::filesystem::path kModel = std::filesystem::path(HEARTH_SOURCE_DIR) / "models/stories260k";
constexpr int32_t kEos = 2;  // </s>

struct Fixture {
  std::unique_ptr<text::Tokenizer> tok = text::Tokenizer::load(kModel / "tokenizer.json");
  std::shared_ptr<const grammar::Vocabulary> vocab = grammar::Vocabulary::from_tokenizer(*tok);
  Engine engine{LlamaModel::load(kModel), EngineOptions{.threads = 2}};
  nlohmann::ordered_json tools = nlohmann::ordered_json::parse(
      R"([{"type":"function","function":{"name":"get","parameters":{"type":"object"}}}])");

  // A generation whose text is exactly `text`, then EOS.
  std::unique_ptr<GenerationStream> generate(const std::string& text, bool logprobs = false) {
    grammar::GrammarBuilder b;
    GenerationRequest r;
    r.prompt = tok->encode("Once", true);
    r.sampling.temperature = 0;
    r.max_tokens = int64_t(text.size()) + 1;
    r.stop_ids = {kEos};
    r.top_logprobs = logprobs ? 0 : -1;
    r.constraint = grammar::Constraint(b.build(b.literal(text)), vocab);
    return std::make_unique<GenerationStream>(engine.submit(std::move(r)), *tok, std::vector<std::string>{},
                                              std::vector<int32_t>{kEos}, logprobs);
  }

  ReplyStream replies(GenerationStream& g, bool in_reasoning = false) {
    const text::OutputFormat hermes{text::ToolCallFormat::Hermes, "<think>", "</think>"};
    return ReplyStream(g, text::OutputParser(hermes, true, in_reasoning, &tools, true), "call_");
  }
};

std::vector<ReplyEvent> all_events(ReplyStream& s) {
  std::vector<ReplyEvent> out;
  while (s.next(out)) {
  }
  return out;
}

TEST(ReplyStream, AStreamedCallOpensStreamsItsArgumentsAndEnds) {
  Fixture f;
  auto g = f.generate("<tool_call>\n{\"name\": \"get\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>");
  ReplyStream s = f.replies(*g);
  const std::vector<ReplyEvent> events = all_events(s);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().kind, ReplyEvent::Kind::ToolCallStart);
  EXPECT_EQ(events.front().call.name, "get");
  std::string streamed;
  for (size_t i = 1; i + 1 < events.size(); ++i) {
    EXPECT_EQ(events[i].kind, ReplyEvent::Kind::ToolCallArguments);
    streamed += events[i].text;
  }
  const ReplyEvent& end = events.back();
  EXPECT_EQ(end.kind, ReplyEvent::Kind::ToolCall);
  EXPECT_TRUE(end.ends_streamed);
  EXPECT_FALSE(end.broken);
  EXPECT_EQ(end.call.id, events.front().call.id);
  EXPECT_EQ(end.call.id.rfind("call_", 0), 0u);
  EXPECT_EQ(nlohmann::json::parse(streamed), nlohmann::json::parse(R"({"city": "Oslo"})"));
  EXPECT_EQ(s.finish_reason(), "tool_calls");
}

// The arguments are not JSON past their start: the call was announced and
// its arguments streamed, but it ends as broken, its text follows as
// content, and the reply is no call (finish reason stop, none gathered).
TEST(ReplyStream, ACallWhoseMarkupDoesNotParseEndsBrokenAndIsNoCall) {
  Fixture f;
  const std::string text = "<tool_call>\n{\"name\": \"get\", \"arguments\": {\"city\": Oslo}}\n</tool_call>";
  {
    auto g = f.generate(text);
    ReplyStream s = f.replies(*g);
    const std::vector<ReplyEvent> events = all_events(s);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.front().kind, ReplyEvent::Kind::ToolCallStart);
    std::string content;
    bool ended_broken = false;
    for (const ReplyEvent& e : events) {
      if (e.kind == ReplyEvent::Kind::ToolCall) {
        EXPECT_TRUE(e.ends_streamed);
        ended_broken = e.broken;
      }
      if (e.kind == ReplyEvent::Kind::Content) content += e.text;
    }
    EXPECT_TRUE(ended_broken);
    EXPECT_EQ(content, text);
    EXPECT_EQ(s.finish_reason(), "stop");
  }
  auto g = f.generate(text);
  ReplyStream s = f.replies(*g);
  const Reply r = collect(s);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, text);
}

TEST(ReplyStream, ReasoningTokensAreCountedAndEachTokensLogprobsComeOnce) {
  Fixture f;
  const std::string text = "Let me see.</think>It is sunny.";
  auto g = f.generate(text, true);
  ReplyStream s = f.replies(*g, true);
  std::string reasoning, content, bytes;
  size_t logprobs = 0;
  for (const ReplyEvent& e : all_events(s)) {
    (e.kind == ReplyEvent::Kind::Reasoning ? reasoning : content) += e.text;
    for (const TokenLogprob& t : e.logprobs) bytes += t.bytes, ++logprobs;
  }
  EXPECT_EQ(reasoning, "Let me see.");
  EXPECT_EQ(content, "It is sunny.");
  EXPECT_EQ(bytes, text);
  EXPECT_EQ(int64_t(logprobs), g->completion_tokens() - 1);  // all but the EOS, which has no text
  EXPECT_GT(s.reasoning_tokens(), 0);
  EXPECT_LT(s.reasoning_tokens(), g->completion_tokens() - 1);
  EXPECT_EQ(s.finish_reason(), "stop");
}

}  // namespace
}  // namespace hearth::server
