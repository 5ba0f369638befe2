// A chat generation seen as a reply: the generated text split into content,
// reasoning and tool calls as it streams, protocol-neutral. The OpenAI chat,
// Anthropic Messages and OpenAI Responses routes each turn these events into
// their own JSON or event stream.
#pragma once

#include <string>
#include <vector>

#include "server/generation.h"
#include "text/tools/output_parser.h"

namespace hearth::server {

struct ToolCallOut {
  std::string id;         // this server's id for the call ("call_...", "toolu_...")
  std::string name;
  std::string arguments;  // compact JSON text of the arguments object
};

struct ReplyEvent {
  enum class Kind { Content, Reasoning, ToolCall, ToolCallStart, ToolCallArguments } kind = Kind::Content;
  std::string text;  // Content, Reasoning; ToolCallArguments: more of the open call's arguments
  ToolCallOut call;  // ToolCall; ToolCallStart: its id and name
  // ToolCall: it ends the call ToolCallStart opened, whose arguments (these)
  // have all been sent as ToolCallArguments.
  bool ends_streamed = false;
  // ToolCall with ends_streamed: its markup did not parse, so it is no call
  // (the text follows as content); a protocol that already announced it
  // must say so, and a later turn must not show it as made.
  bool broken = false;
  std::vector<TokenLogprob> logprobs;  // the tokens released with this event
};

class ReplyStream {
 public:
  // `parser` splits the text (see text/tools); tool calls get ids of
  // `id_prefix` and 32 random hex digits, or with an empty prefix 9 random
  // letters and digits (Mistral's templates refuse other ids).
  ReplyStream(GenerationStream& generation, text::OutputParser parser, std::string id_prefix);

  // Blocks for the next events (appended to `out`). Returns false once the
  // generation is over and everything has been handed out.
  bool next(std::vector<ReplyEvent>& out);

  // The generation's finish reason, except "tool_calls" when the reply made
  // a call and ended on its own.
  std::string finish_reason() const;
  // Generated tokens that went into reasoning (usage's reasoning_tokens).
  int64_t reasoning_tokens() const { return reasoning_tokens_; }
  GenerationStream& generation() { return g_; }
  const GenerationStream& generation() const { return g_; }

 private:
  GenerationStream& g_;
  text::OutputParser parser_;
  std::string id_prefix_;
  size_t tool_calls_ = 0;
  std::string open_call_id_;  // the call whose arguments are streaming
  std::string call_id() const;
  bool done_ = false;
  int64_t tokens_seen_ = 0, reasoning_tokens_ = 0;
  std::vector<TokenLogprob> logprobs_;  // of text the parser holds back still
};

// A whole reply, gathered.
struct Reply {
  std::string content, reasoning;
  std::vector<ToolCallOut> calls;
  std::vector<TokenLogprob> logprobs;
};
Reply collect(ReplyStream& stream);

}  // namespace hearth::server
