// Anthropic's Messages API: POST /v1/messages, answered whole or as its
// event stream (message_start, content_block_start/_delta/_stop,
// message_delta, message_stop, ping, error), and
// POST /v1/messages/count_tokens.
#include "server/anthropic_request.h"
#include "server/reply.h"
#include "server/server_impl.h"

namespace hearth::server {

namespace {

std::string stop_reason(const ReplyStream& replies) {
  const std::string reason = replies.finish_reason();
  if (reason == "tool_calls") return "tool_use";
  if (reason == "length") return "max_tokens";
  return replies.generation().stopped_by_string() ? "stop_sequence" : "end_turn";
}

ojson stop_sequence(const ReplyStream& replies) {
  const GenerationStream& g = replies.generation();
  return g.stopped_by_string() ? ojson(g.stop_string()) : ojson(nullptr);
}

// Anthropic counts cache reads apart from the input they save.
ojson anthropic_usage(const GenerationStream& g, int64_t output_tokens) {
  const int64_t cached = g.finished() ? g.info().cached_tokens : 0;
  return {{"input_tokens", g.prompt_tokens() - cached},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached},
          {"output_tokens", output_tokens}};
}

ojson tool_use_block(const ToolCallOut& c) {
  ojson input = ojson::parse(c.arguments, nullptr, false);
  if (!input.is_object()) input = ojson::object();
  return {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", std::move(input)}};
}

std::string sse(const std::string& event, const ojson& data) { return "event: " + event + "\ndata: " + dump(data) + "\n\n"; }

}  // namespace

ojson Server::Impl::message_object(const Job& job) const {
  return {{"id", job.id}, {"type", "message"}, {"role", "assistant"}, {"model", model.id}, {"content", ojson::array()},
          {"stop_reason", nullptr}, {"stop_sequence", nullptr}};
}

void Server::Impl::anthropic_messages(const http::Request& req, http::Response& res) {
  ApiRequest api = parse_messages_request(parse_body(req.body));
  ++metrics.messages_requests;
  auto job = start(req, std::move(api));
  if (!job->api.stream) {
    GenerationStream& g = *job->stream;
    ReplyStream replies = reply_stream(*job, "toolu_");
    Reply reply = collect(replies);
    job->record();
    remember_reply(*job);
    check_finished(g);
    ojson out = message_object(*job);
    if (!reply.reasoning.empty())
      out["content"].push_back({{"type", "thinking"}, {"thinking", reply.reasoning}, {"signature", ""}});
    if (!reply.content.empty()) out["content"].push_back({{"type", "text"}, {"text", reply.content}});
    for (const auto& c : reply.calls) out["content"].push_back(tool_use_block(c));
    out["stop_reason"] = stop_reason(replies);
    out["stop_sequence"] = stop_sequence(replies);
    out["usage"] = anthropic_usage(g, g.completion_tokens());
    res.set_content(dump(out), "application/json");
    return;
  }

  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto provider = [this, job](http::StreamSink& sink) {
    auto send = [&](const std::string& event, const ojson& data) {
      const std::string s = sse(event, data);
      return sink.write(s);
    };
    GenerationStream& g = *job->stream;
    ReplyStream replies = reply_stream(*job, "toolu_", true);
    // The prompt's size is known once the engine has admitted it: the
    // message_start goes out with the first event (or the end).
    bool started = false, ok = true;
    int index = -1;
    std::string open;  // the type of the block being streamed ("" when none)
    auto begin = [&] {
      if (started) return;
      started = true;
      ojson m = message_object(*job);
      m["usage"] = {{"input_tokens", job->prompt_tokens}, {"cache_creation_input_tokens", 0},
                    {"cache_read_input_tokens", 0}, {"output_tokens", 0}};
      ok = send("message_start", {{"type", "message_start"}, {"message", m}}) && send("ping", {{"type", "ping"}});
    };
    auto close = [&] {
      if (open.empty()) return;
      ok = ok && send("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
      open.clear();
    };
    auto block = [&](const std::string& type, ojson start) {
      if (open == type && type != "tool_use") return;
      close();
      open = type;
      ok = ok && send("content_block_start", {{"type", "content_block_start"}, {"index", ++index}, {"content_block", start}});
    };
    auto delta = [&](ojson d) {
      ok = ok && send("content_block_delta", {{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(d)}});
    };
    std::vector<ReplyEvent> events;
    while (ok && replies.next(events)) {
      begin();
      for (auto& e : events) {
        if (e.kind == ReplyEvent::Kind::Content) {
          block("text", {{"type", "text"}, {"text", ""}});
          delta({{"type", "text_delta"}, {"text", e.text}});
        } else if (e.kind == ReplyEvent::Kind::Reasoning) {
          block("thinking", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
          delta({{"type", "thinking_delta"}, {"thinking", e.text}});
        } else if (e.kind == ReplyEvent::Kind::ToolCallArguments) {
          delta({{"type", "input_json_delta"}, {"partial_json", e.text}});
        } else if (!e.ends_streamed) {  // a whole call, or the start of one (its arguments follow)
          ojson start = tool_use_block(e.call);
          start["input"] = ojson::object();
          block("tool_use", std::move(start));
          if (e.kind == ReplyEvent::Kind::ToolCall) delta({{"type", "input_json_delta"}, {"partial_json", e.call.arguments}});
        }
      }
      events.clear();
    }
    if (!ok) {
      g.cancel();  // the client is gone
      return;
    }
    job->record();
    remember_reply(*job);
    if (auto e = stream_failure(g)) {
      begin();
      send("error", e->body(Protocol::Anthropic));
    } else if (!g.error().empty() || g.finish_reason() == "cancelled") {
      return;  // cancelled because the client left
    } else {
      begin();
      close();
      ojson usage = anthropic_usage(g, g.completion_tokens());
      send("message_delta", {{"type", "message_delta"},
                             {"delta", {{"stop_reason", stop_reason(replies)}, {"stop_sequence", stop_sequence(replies)}}},
                             {"usage", usage}});
      send("message_stop", {{"type", "message_stop"}});
    }
  };
  res.set_stream("text/event-stream", std::move(provider));
}

void Server::Impl::anthropic_count_tokens(const http::Request& req, http::Response& res) {
  const ApiRequest api = parse_messages_request(parse_body(req.body), true);
  res.set_content(dump(ojson{{"input_tokens", prompts->build(api).size()}}), "application/json");
}

}  // namespace hearth::server
