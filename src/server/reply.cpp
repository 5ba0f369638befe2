#include "server/reply.h"

#include "server/random_id.h"

namespace hearth::server {

ReplyStream::ReplyStream(GenerationStream& generation, text::OutputParser parser, std::string id_prefix)
    : g_(generation), parser_(std::move(parser)), id_prefix_(std::move(id_prefix)) {}

std::string ReplyStream::call_id() const {
  return id_prefix_.empty() ? random_alnum(9) : random_id(id_prefix_.c_str());
}

bool ReplyStream::next(std::vector<ReplyEvent>& out) {
  const size_t before = out.size();
  std::vector<text::OutputEvent> parsed;
  Piece p;
  while (out.size() == before && !done_) {
    // A piece's tokens are reasoning if its text is in a reasoning block,
    // its opening and closing markup included.
    const bool was_reasoning = parser_.in_reasoning();
    if (g_.next(p)) {
      parser_.feed(p.text, parsed);
      for (auto& t : p.logprobs) logprobs_.push_back(std::move(t));
    } else {
      parser_.finish(parsed);
      done_ = true;
    }
    if (was_reasoning || parser_.in_reasoning()) reasoning_tokens_ += g_.completion_tokens() - tokens_seen_;
    tokens_seen_ = g_.completion_tokens();
    for (auto& e : parsed) {
      using In = text::OutputEvent::Kind;
      using Out = ReplyEvent::Kind;
      ReplyEvent r;
      switch (e.kind) {
        case In::Content: r.kind = Out::Content; break;
        case In::Reasoning: r.kind = Out::Reasoning; break;
        case In::ToolCall: r.kind = Out::ToolCall; break;
        case In::ToolCallStart: r.kind = Out::ToolCallStart; break;
        case In::ToolCallArguments: r.kind = Out::ToolCallArguments; break;
      }
      r.text = std::move(e.text);
      if (e.kind == In::ToolCallStart) open_call_id_ = call_id();
      if (e.kind == In::ToolCallStart || e.kind == In::ToolCall) {
        const bool ends = e.kind == In::ToolCall && e.ends_streamed;
        r.call = {ends || e.kind == In::ToolCallStart ? open_call_id_ : call_id(),
                  std::move(e.call.name), std::move(e.call.arguments)};
        r.ends_streamed = ends;
        r.broken = ends && e.broken;
        tool_calls_ += e.kind == In::ToolCall && !e.broken;
      }
      out.push_back(std::move(r));
    }
    parsed.clear();
    // A token's logprobs go with the first event its text reached (at the
    // end, with an empty piece of content if none did).
    if (!logprobs_.empty() && (out.size() > before || done_)) {
      if (out.size() == before) out.emplace_back();
      out[before].logprobs = std::move(logprobs_);
      logprobs_.clear();
    }
  }
  return out.size() > before;
}

std::string ReplyStream::finish_reason() const {
  if (tool_calls_ > 0 && g_.finish_reason() == "stop") return "tool_calls";
  return g_.finish_reason();
}

Reply collect(ReplyStream& stream) {
  Reply r;
  std::vector<ReplyEvent> events;
  while (stream.next(events)) {
    for (auto& e : events) {
      switch (e.kind) {
        case ReplyEvent::Kind::Content: r.content += e.text; break;
        case ReplyEvent::Kind::Reasoning: r.reasoning += e.text; break;
        case ReplyEvent::Kind::ToolCall:
          if (!e.broken) r.calls.push_back(std::move(e.call));
          break;
        case ReplyEvent::Kind::ToolCallStart:
        case ReplyEvent::Kind::ToolCallArguments: break;  // the ToolCall that ends it has it all
      }
      for (auto& t : e.logprobs) r.logprobs.push_back(std::move(t));
    }
    events.clear();
  }
  return r;
}

}  // namespace hearth::server
