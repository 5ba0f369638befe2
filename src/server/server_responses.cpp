// OpenAI's Responses API: POST /v1/responses (whole, or its event stream:
// response.created, response.output_item.added, response.output_text.delta,
// response.function_call_arguments.delta, ..., response.completed), the
// store behind previous_response_id, GET and DELETE /v1/responses/{id}.
#include <functional>

#include "server/random_id.h"
#include "server/reply.h"
#include "server/responses_request.h"
#include "server/server_impl.h"

namespace hearth::server {

namespace {

// Builds a response's output items from reply events, telling a listener
// each step as the stream's events (none for a whole answer).
class ResponseOutput {
 public:
  using Emit = std::function<bool(const char* type, ojson data)>;  // false once the client is gone
  explicit ResponseOutput(Emit emit) : emit_(std::move(emit)) {}

  bool add(const ReplyEvent& e) {
    switch (e.kind) {
      case ReplyEvent::Kind::Content:
        reply_.content += e.text;
        return open("message") && delta("response.output_text.delta", e.text);
      case ReplyEvent::Kind::Reasoning:
        reply_.reasoning += e.text;
        return open("reasoning") && delta("response.reasoning_text.delta", e.text);
      case ReplyEvent::Kind::ToolCallStart:
        return open_call(e.call);
      case ReplyEvent::Kind::ToolCallArguments:
        return arguments_delta(e.text);
      case ReplyEvent::Kind::ToolCall:
        if (e.ends_streamed) {  // its arguments are out already
          // A call whose markup did not parse stays in the output as an
          // incomplete item (it was announced), but is no call the model made.
          if (!e.broken) reply_.calls.push_back(e.call);
          return close(e.call.arguments, e.broken ? "incomplete" : "completed");
        }
        if (!open_call(e.call)) return false;
        reply_.calls.push_back(e.call);
        return arguments_delta(e.call.arguments) && close(e.call.arguments);
    }
    return true;
  }

  // A function_call item, open for its arguments.
  bool open_call(const ToolCallOut& call) {
    if (!close()) return false;
    items_.push_back({{"id", random_id("fc_")}, {"type", "function_call"}, {"status", "in_progress"},
                      {"call_id", call.id}, {"name", call.name}, {"arguments", ""}});
    open_ = "function_call";
    return added();
  }
  bool arguments_delta(const std::string& text) {
    return emit_("response.function_call_arguments.delta", {{"item_id", item()["id"]}, {"output_index", index()}, {"delta", text}});
  }

  // Ends the open item (its .done events); a function call's with these
  // arguments and status.
  bool close(const std::string& call_arguments = {}, const char* status = "completed") {
    if (open_.empty()) return true;
    ojson& it = item();
    const std::string type = std::exchange(open_, {});
    bool ok = true;
    if (type == "message") {
      ojson& part = it["content"][0];
      ok = emit_("response.output_text.done", {{"item_id", it["id"]}, {"output_index", index()}, {"content_index", 0},
                                               {"text", part["text"]}, {"logprobs", ojson::array()}}) &&
           emit_("response.content_part.done", {{"item_id", it["id"]}, {"output_index", index()}, {"content_index", 0}, {"part", part}});
    } else if (type == "reasoning") {
      ok = emit_("response.reasoning_text.done", {{"item_id", it["id"]}, {"output_index", index()}, {"content_index", 0},
                                                  {"text", it["content"][0]["text"]}});
    } else {
      it["arguments"] = call_arguments;
      ok = emit_("response.function_call_arguments.done",
                 {{"item_id", it["id"]}, {"output_index", index()}, {"name", it["name"]}, {"arguments", it["arguments"]}});
    }
    if (it.contains("status")) it["status"] = status;
    return ok && emit_("response.output_item.done", {{"output_index", index()}, {"item", it}});
  }

  const ojson& items() const { return items_; }
  // The reply as the assistant message a later turn renders.
  ojson assistant_message() const {
    ojson m = {{"role", "assistant"}, {"content", reply_.content}};
    if (!reply_.reasoning.empty()) m["reasoning_content"] = reply_.reasoning;
    for (const auto& c : reply_.calls)
      m["tool_calls"].push_back({{"id", c.id}, {"type", "function"},
                                 {"function", {{"name", c.name}, {"arguments", arguments_object(ojson(c.arguments))}}}});
    return m;
  }

 private:
  ojson& item() { return items_.back(); }
  int index() const { return int(items_.size()) - 1; }
  bool added() { return emit_("response.output_item.added", {{"output_index", index()}, {"item", item()}}); }

  bool open(const std::string& type) {
    if (open_ == type) return true;
    if (!close()) return false;
    open_ = type;
    if (type == "message") {
      items_.push_back({{"id", random_id("msg_")}, {"type", "message"}, {"status", "in_progress"}, {"role", "assistant"},
                        {"content", ojson::array()}});
      const ojson part = {{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}};
      if (!added()) return false;
      item()["content"].push_back(part);
      return emit_("response.content_part.added", {{"item_id", item()["id"]}, {"output_index", index()}, {"content_index", 0}, {"part", part}});
    }
    items_.push_back({{"id", random_id("rs_")}, {"type", "reasoning"}, {"summary", ojson::array()},
                      {"content", ojson::array({{{"type", "reasoning_text"}, {"text", ""}}})}});
    return added();
  }

  bool delta(const char* type, const std::string& text) {
    ojson& it = item();
    std::string& all = it["content"][0]["text"].get_ref<std::string&>();
    all += text;
    ojson d = {{"item_id", it["id"]}, {"output_index", index()}, {"content_index", 0}, {"delta", text}};
    if (open_ == "message") d["logprobs"] = ojson::array();
    return emit_(type, std::move(d));
  }

  Emit emit_;
  ojson items_ = ojson::array();
  std::string open_;  // the type of the item being written, "" when none
  Reply reply_;
};

}  // namespace

ojson Server::Impl::response_object(const Job& job, const ResponseContext& ctx, const char* status) const {
  ojson r = {{"id", job.id},
             {"object", "response"},
             {"created_at", job.created},
             {"status", status},
             {"error", nullptr},
             {"incomplete_details", nullptr},
             {"instructions", nullptr},
             {"max_output_tokens", nullptr},
             {"model", model.id},
             {"output", ojson::array()},
             {"parallel_tool_calls", true},
             {"previous_response_id", ctx.previous.empty() ? ojson(nullptr) : ojson(ctx.previous)},
             {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
             {"store", ctx.store},
             {"temperature", nullptr},
             {"text", {{"format", {{"type", "text"}}}}},
             {"tool_choice", "auto"},
             {"tools", ojson::array()},
             {"top_p", nullptr},
             {"truncation", "disabled"},
             {"usage", nullptr},
             {"metadata", ojson::object()}};
  for (const auto& [k, v] : ctx.echo.items()) r[k] = v;
  return r;
}

void Server::Impl::responses_create(const http::Request& req, http::Response& res) {
  ResponsesRequest rr = parse_responses_request(parse_body(req.body));
  ++metrics.responses_requests;
  // The prompt: the instructions, the stored conversation it continues, this input.
  ojson conversation = ojson::array();
  if (!rr.previous_response_id.empty()) {
    auto prev = responses.get(rr.previous_response_id);
    if (!prev)
      throw ApiError(404, "no stored response has the id " + quote(ojson(rr.previous_response_id)) +
                              " (never stored, deleted, or expired)",
                     "invalid_request_error", "previous_response_id", "previous_response_not_found");
    conversation = std::move(prev->conversation);
  }
  for (auto& m : rr.api.messages) conversation.push_back(std::move(m));
  rr.api.messages = ojson::array();
  if (!rr.instructions.empty()) rr.api.messages.push_back({{"role", "system"}, {"content", rr.instructions}});
  for (const auto& m : conversation) rr.api.messages.push_back(m);

  auto ctx = std::make_shared<ResponseContext>();
  ctx->previous = rr.previous_response_id;
  ctx->store = rr.store;
  ctx->echo = std::move(rr.echo);
  ctx->conversation = std::move(conversation);
  auto job = start(req, std::move(rr.api));

  // Runs the generation through `out`; returns false if the client left.
  auto finish = [this, job](ResponseOutput& out, ReplyStream& replies) {
    GenerationStream& g = *job->stream;
    std::vector<ReplyEvent> events;
    bool ok = true;
    while (ok && replies.next(events)) {
      for (const auto& e : events) ok = ok && out.add(e);
      events.clear();
    }
    ok = ok && out.close();
    if (!ok) g.cancel();
    job->record();
    remember_reply(*job);
    return ok;
  };
  auto final_object = [this, job, ctx](ResponseOutput& out, ReplyStream& replies) {
    GenerationStream& g = *job->stream;
    const bool cut = replies.finish_reason() == "length";
    ojson r = response_object(*job, *ctx, cut ? "incomplete" : "completed");
    if (cut) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    r["output"] = out.items();
    const int64_t cached = g.info().cached_tokens;
    r["usage"] = {{"input_tokens", g.prompt_tokens()},
                  {"input_tokens_details", {{"cached_tokens", cached}}},
                  {"output_tokens", g.completion_tokens()},
                  {"output_tokens_details", {{"reasoning_tokens", replies.reasoning_tokens()}}},
                  {"total_tokens", g.prompt_tokens() + g.completion_tokens()}};
    if (ctx->store) {
      ctx->conversation.push_back(out.assistant_message());
      responses.put(job->id, {r, std::move(ctx->conversation)});
    }
    return r;
  };

  if (!job->api.stream) {
    ResponseOutput out([](const char*, ojson) { return true; });
    ReplyStream replies = reply_stream(*job, "call_");
    finish(out, replies);
    check_finished(*job->stream);
    res.set_content(dump(final_object(out, replies)), "application/json");
    return;
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto provider = [this, job, ctx, finish, final_object](http::StreamSink& sink) {
    int64_t sequence = 0;
    auto emit = [&](const char* type, ojson data) {
      ojson event = {{"type", type}, {"sequence_number", sequence++}};
      event.update(data);
      const std::string s = std::string("event: ") + type + "\ndata: " + dump(event) + "\n\n";
      return sink.write(s);
    };
    const ojson created = response_object(*job, *ctx, "in_progress");
    if (!emit("response.created", {{"response", created}}) || !emit("response.in_progress", {{"response", created}})) {
      job->stream->cancel();
      return;
    }
    ResponseOutput out(emit);
    ReplyStream replies = reply_stream(*job, "call_", true);
    if (!finish(out, replies)) return;
    const GenerationStream& g = *job->stream;
    if (auto e = stream_failure(g)) {
      ojson failed = response_object(*job, *ctx, "failed");
      failed["error"] = {{"code", e->code.empty() ? e->type : e->code}, {"message", e->what()}};
      emit("response.failed", {{"response", failed}});
    } else if (!g.error().empty() || g.finish_reason() == "cancelled") {
      return;  // cancelled because the client left
    } else {
      ojson r = final_object(out, replies);
      const bool complete = r["status"] == "completed";
      emit(complete ? "response.completed" : "response.incomplete", {{"response", std::move(r)}});
    }
  };
  res.set_stream("text/event-stream", std::move(provider));
}

void Server::Impl::responses_get(const http::Request& req, http::Response& res) {
  const std::string id = req.matches[1];
  auto r = responses.get(id);
  if (!r)
    throw ApiError(404, "no stored response has the id " + quote(ojson(id)), "invalid_request_error", {}, "response_not_found");
  res.set_content(dump(r->response), "application/json");
}

void Server::Impl::responses_delete(const http::Request& req, http::Response& res) {
  const std::string id = req.matches[1];
  if (!responses.erase(id))
    throw ApiError(404, "no stored response has the id " + quote(ojson(id)), "invalid_request_error", {}, "response_not_found");
  res.set_content(dump(ojson{{"id", id}, {"object", "response"}, {"deleted", true}}), "application/json");
}

}  // namespace hearth::server
