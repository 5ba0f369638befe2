#include "server/reply.h"

namespace hearth::server {

ReplyStream::ReplyStream(GenerationStream& generation, std::string id_prefix)
    : g_(generation), id_prefix_(std::move(id_prefix)) {}

bool ReplyStream::next(std::vector<ReplyEvent>& out) {
  Piece p;
  while (g_.next(p)) {
    if (p.empty()) continue;
    ReplyEvent e;
    e.text = std::move(p.text);
    e.logprobs = std::move(p.logprobs);
    out.push_back(std::move(e));
    return true;
  }
  return false;
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
        case ReplyEvent::Kind::ToolCall: r.calls.push_back(std::move(e.call)); break;
      }
      for (auto& t : e.logprobs) r.logprobs.push_back(std::move(t));
    }
    events.clear();
  }
  return r;
}

}  // namespace hearth::server
