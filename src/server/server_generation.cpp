// The OpenAI generation routes: /v1/chat/completions and /v1/completions,
// answered whole or as a server-sent event stream.
#include <algorithm>
#include <cstdio>

#include "server/reply.h"
#include "server/server_impl.h"
#include "text/unicode.h"

namespace hearth::server {

namespace {

ojson token_bytes(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

}  // namespace

const std::shared_ptr<const grammar::Vocabulary>& Server::Impl::grammar_vocabulary() {
  std::call_once(grammar_vocab_once, [&] { grammar_vocab = grammar::Vocabulary::from_tokenizer(*tok); });
  return grammar_vocab;
}

void Server::Impl::generate(const http::Request& req, http::Response& res, Endpoint ep) {
  const ojson body = parse_body(req.body);
  ApiRequest api = ep == Endpoint::Chat ? parse_chat_request(body) : parse_completion_request(body);
  ++(ep == Endpoint::Chat ? metrics.chat_requests : metrics.completion_requests);
  auto job = start(req, std::move(api));
  if (job->api.stream) respond_stream(job, res);
  else respond_whole(job, res);
}

std::vector<int32_t> Server::Impl::prompt_ids(const ApiRequest& api, std::string* rendered) {
  std::vector<int32_t> ids = prompts->build(api, &history, rendered);
  const int64_t ctx = engine->ctx_size();
  if (int64_t(ids.size()) >= ctx)
    throw bad_request(api.is_chat() ? "messages" : "prompt",
                      "the prompt is " + std::to_string(ids.size()) + " tokens; this server's context holds " +
                          std::to_string(ctx) + " tokens, which must leave room for at least one generated token",
                      "context_length_exceeded");
  return ids;
}

std::shared_ptr<Job> Server::Impl::start(const http::Request& req, ApiRequest api) {
  if (draining) throw ApiError(503, "the server is shutting down", "server_error", {}, "server_shutting_down");
  const std::string param = api.is_chat() ? "messages" : "prompt";
  // Body fields beat the headers: x-session-affinity, then session_id.
  for (const char* header : {"x-session-affinity", "session_id"})
    if (api.session.empty() && req.has_header(header))
      api.session = check_session_id(header, req.header(header));

  GenerationRequest g;
  std::string rendered;
  g.prompt = prompt_ids(api, &rendered);
  g.sampling = model.sampling;
  api.sampling.apply_to(g.sampling);
  const int64_t vocab = engine->model().config().vocab_size;
  for (const auto& [id, bias] : g.sampling.logit_bias)
    if (id >= vocab)
      throw bad_request("logit_bias", "token id " + std::to_string(id) + " in 'logit_bias' is outside the vocabulary (" +
                                          std::to_string(vocab) + " tokens)");
  g.sampling.xtc_special_tokens = model.eos_ids;
  g.sampling.xtc_special_tokens.insert(g.sampling.xtc_special_tokens.end(), model.newline_ids.begin(),
                                       model.newline_ids.end());
  g.max_tokens = api.max_tokens.value_or(model.max_tokens);
  g.stop_ids = model.eos_ids;
  g.top_logprobs = api.logprobs;
  g.session = api.session;
  auto grammar = compile_output_grammar(api, prompts->output_format().tool_calls);
  // A grammar holds the output to its format from the first token, which
  // leaves no room to close a reasoning block the prompt opened.
  const bool reasoning = !grammar && text::prompt_opens_reasoning(prompts->output_format(), rendered);
  if (grammar) g.constraint = grammar::Constraint{std::move(grammar), grammar_vocabulary()};
  const int64_t prompt_tokens = int64_t(g.prompt.size());

  std::shared_ptr<RequestHandle> handle;
  try {
    handle = engine->submit(std::move(g));
  } catch (const QueueFull&) {
    ++metrics.rejected_queue_full;
    throw ApiError(429, "the request queue is full (" + std::to_string(opt.max_queue) + " waiting); retry later",
                   "resource_admission", {}, "queue_full");
  } catch (const std::invalid_argument& e) {
    throw bad_request(param, e.what());
  } catch (const std::runtime_error& e) {  // the engine is shutting down
    throw ApiError(503, e.what(), "server_error", {}, "server_shutting_down");
  }
  auto job = std::make_shared<Job>(*this, std::move(api), handle);
  job->prompt_tokens = prompt_tokens;
  job->in_reasoning = reasoning;
  job->client_watch = req.client->on_gone([handle] { handle->cancel(); });
  if (job->api.stream) ++metrics.streamed_requests;
  return job;
}

ReplyStream Server::Impl::reply_stream(Job& job, const char* id_prefix, bool stream_arguments) const {
  const bool tools = job.api.tools.is_array() && !job.api.tools.empty() && job.api.tool_choice.mode != ToolChoice::Mode::None;
  // Mistral's templates take back only ids of 9 letters and digits (as vLLM makes them).
  const bool mistral = prompts->output_format().tool_calls == text::ToolCallFormat::Mistral;
  return ReplyStream(*job.stream,
                     text::OutputParser(prompts->output_format(), tools, job.in_reasoning, &job.api.tools, stream_arguments),
                     mistral ? "" : id_prefix);
}

// A request whose own grammar failed it (from response_format, a tool
// choice's schemas, Ollama's format, text.format) is the client's error.
static ApiError generation_failed(const GenerationStream& g) {
  if (g.request_fault()) return ApiError(400, g.error(), "invalid_request_error");
  return ApiError(500, "generation failed: " + g.error(), "server_error");
}

void Server::Impl::check_finished(const GenerationStream& g) const {
  if (!g.error().empty()) throw generation_failed(g);
  if (g.finish_reason() == "cancelled") {
    if (draining) throw ApiError(503, "the server is shutting down", "server_error", {}, "server_shutting_down");
    throw ApiError(500, "the request was cancelled", "server_error", {}, "cancelled");
  }
}

std::optional<ApiError> Server::Impl::stream_failure(const GenerationStream& g) const {
  if (g.error().empty() && g.finish_reason() != "cancelled") return std::nullopt;
  if (g.error().empty() && !draining) return std::nullopt;  // cancelled because the client left
  return g.error().empty() ? ApiError(503, "the server is shutting down", "server_error", {}, "server_shutting_down")
                           : generation_failed(g);
}

void Server::Impl::remember_reply(const Job& job) {
  const GenerationStream& g = *job.stream;
  if (!job.api.is_chat() || !g.error().empty() || g.finish_reason() == "cancelled" ||
      g.stopped_by_string())
    return;
  std::vector<int32_t> ids = g.generated_ids();
  if (!ids.empty() && std::find(model.eos_ids.begin(), model.eos_ids.end(), ids.back()) != model.eos_ids.end())
    ids.pop_back();
  if (tok->decode(ids) != g.text()) return;  // only ids that are exactly the text the client got
  history.remember(g.text(), std::move(ids));
}

ojson Server::Impl::usage(const GenerationStream& g, const ReplyStream* chat) const {
  ojson u = {{"prompt_tokens", g.prompt_tokens()},
             {"completion_tokens", g.completion_tokens()},
             {"total_tokens", g.prompt_tokens() + g.completion_tokens()},
             {"prompt_tokens_details", {{"cached_tokens", g.info().cached_tokens}}}};
  if (chat) u["completion_tokens_details"] = {{"reasoning_tokens", chat->reasoning_tokens()}};
  return u;
}

ojson Server::Impl::chat_logprobs(const std::vector<TokenLogprob>& lps) const {
  // An alternative's bytes are its own: part of a character where it holds
  // one (its text has a U+FFFD there).
  ojson content = ojson::array();
  for (const auto& t : lps) {
    ojson top = ojson::array();
    for (const auto& [id, lp] : t.top)
      top.push_back({{"token", token_text(id)}, {"logprob", lp}, {"bytes", token_bytes(tok->token_bytes(id))}});
    content.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", token_bytes(t.bytes)}, {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

namespace {

// A completion token's string: its text, or where its bytes are part of a
// character, "bytes:" and their escapes, so that no two such tokens read
// alike, as U+FFFD would make them.
std::string completion_token(const std::string& bytes) {
  if (text::unicode::is_valid(bytes)) return bytes;
  std::string out = "bytes:";
  for (unsigned char c : bytes) {
    char escape[5];
    std::snprintf(escape, sizeof escape, "\\x%02x", c);
    out += escape;
  }
  return out;
}

}  // namespace

ojson Server::Impl::completion_logprobs(Job& job, const std::vector<TokenLogprob>& lps) const {
  ojson tokens = ojson::array(), values = ojson::array(), tops = ojson::array(), offsets = ojson::array();
  for (const auto& t : lps) {
    tokens.push_back(completion_token(t.bytes));
    values.push_back(t.logprob);
    ojson top = ojson::object();
    for (const auto& [id, lp] : t.top) {
      const std::string raw = tok->token_bytes(id);
      top[text::unicode::is_valid(raw) ? token_text(id) : completion_token(raw)] = lp;
    }
    tops.push_back(top);
    // Where its character starts in the text: the tokens of one character share it.
    offsets.push_back(job.text_offset);
    job.text_offset += t.chars;
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

namespace {

ojson tool_call_json(const ToolCallOut& c) {
  return {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

}  // namespace

void Server::Impl::respond_whole(const std::shared_ptr<Job>& job, http::Response& res) {
  GenerationStream& g = *job->stream;
  const bool chat = job->api.is_chat();
  ReplyStream replies = reply_stream(*job, "call_");
  Reply reply;
  if (chat) {
    reply = collect(replies);
  } else {
    Piece p;
    while (g.next(p)) {
      reply.content += p.text;
      for (auto& t : p.logprobs) reply.logprobs.push_back(std::move(t));
    }
  }
  job->record();
  remember_reply(*job);
  check_finished(g);
  ojson choice;
  if (chat) {
    // refusal: always null (hearth never refuses), present as in OpenAI's
    // replies and its SDK's types (ChatCompletionMessage.refusal: string | null).
    ojson message = {{"role", "assistant"}, {"content", reply.content}, {"refusal", nullptr}};
    if (!reply.reasoning.empty()) message["reasoning_content"] = reply.reasoning;
    if (!reply.calls.empty()) {
      if (reply.content.empty()) message["content"] = nullptr;
      message["tool_calls"] = ojson::array();
      for (const auto& c : reply.calls) message["tool_calls"].push_back(tool_call_json(c));
    }
    choice = {{"index", 0},
              {"message", std::move(message)},
              {"logprobs", job->api.logprobs >= 0 ? chat_logprobs(reply.logprobs) : ojson(nullptr)},
              {"finish_reason", replies.finish_reason()}};
  } else {
    choice = {{"index", 0},
              {"text", reply.content},
              {"logprobs", job->api.logprobs >= 0 ? completion_logprobs(*job, reply.logprobs) : ojson(nullptr)},
              {"finish_reason", g.finish_reason()}};
  }
  ojson out = {{"id", job->id},
               {"object", chat ? "chat.completion" : "text_completion"},
               {"created", job->created},
               {"model", model.id},
               {"system_fingerprint", kFingerprint},
               {"choices", ojson::array({choice})},
               {"usage", usage(g, chat ? &replies : nullptr)}};
  res.status = 200;
  res.set_content(dump(out), "application/json");
}

// One chunk: `delta` (chat) or the text (completions), with logprobs.
ojson Server::Impl::chunk(Job& job, ojson delta, const std::vector<TokenLogprob>* lps, const std::string* finish_reason) {
  const bool chat = job.api.is_chat();
  ojson choice = {{"index", 0}};
  const bool lp = job.api.logprobs >= 0 && lps && !lps->empty();
  if (chat) {
    choice["delta"] = std::move(delta);
    choice["logprobs"] = lp ? chat_logprobs(*lps) : ojson(nullptr);
  } else {
    choice["text"] = delta.is_string() ? std::move(delta) : ojson("");
    choice["logprobs"] = lp ? completion_logprobs(job, *lps) : ojson(nullptr);
  }
  choice["finish_reason"] = finish_reason ? ojson(*finish_reason) : ojson(nullptr);
  return {{"id", job.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", job.created},
          {"model", model.id},
          {"system_fingerprint", kFingerprint},
          {"choices", ojson::array({choice})}};
}

void Server::Impl::respond_stream(const std::shared_ptr<Job>& job, http::Response& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto provider = [this, job](http::StreamSink& sink) {
    auto send = [&](const std::string& payload) {
      std::string event = "data: " + payload + "\n\n";
      return sink.write(event);
    };
    GenerationStream& g = *job->stream;
    ReplyStream replies = reply_stream(*job, "call_", true);
    const bool chat = job->api.is_chat();
    bool ok = !chat || send(dump(chunk(*job, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)));
    if (chat) {
      std::vector<ReplyEvent> events;
      int calls = 0;
      while (ok && replies.next(events)) {
        for (auto& e : events) {
          ojson delta = ojson::object();
          if (e.kind == ReplyEvent::Kind::Content) {
            delta["content"] = e.text;
          } else if (e.kind == ReplyEvent::Kind::Reasoning) {
            delta["reasoning_content"] = e.text;
          } else if (e.kind == ReplyEvent::Kind::ToolCallArguments) {
            delta["tool_calls"] = ojson::array({{{"index", calls}, {"function", {{"arguments", e.text}}}}});
          } else if (e.ends_streamed) {  // its arguments are out: only logprobs, if any, remain
            ++calls;
            if (e.logprobs.empty()) continue;
          } else {  // a whole call, or the start of one (its arguments follow)
            ojson call = {{"index", e.kind == ReplyEvent::Kind::ToolCall ? calls++ : calls}};
            call.update(tool_call_json(e.call));
            delta["tool_calls"] = ojson::array({std::move(call)});
          }
          ok = ok && send(dump(chunk(*job, std::move(delta), &e.logprobs, nullptr)));
        }
        events.clear();
      }
    } else {
      Piece p;
      while (ok && g.next(p))
        if (!p.empty()) ok = send(dump(chunk(*job, p.text, &p.logprobs, nullptr)));
    }
    if (!ok) {
      g.cancel();  // the client is gone: free the sequence at the next step
      return;
    }
    job->record();
    remember_reply(*job);
    if (!g.error().empty() || g.finish_reason() == "cancelled") {
      auto e = stream_failure(g);
      if (!e) return;  // cancelled because the client left
      send(dump(e->body()));
    } else {
      const std::string reason = chat ? replies.finish_reason() : g.finish_reason();
      ojson last = chunk(*job, chat ? ojson::object() : ojson(""), nullptr, &reason);
      // Usage once per stream: clients that sum every chunk's usage
      // (LangChain) would count it twice.
      if (!job->api.include_usage) last["usage"] = usage(g, chat ? &replies : nullptr);
      send(dump(last));
      if (job->api.include_usage) {
        ojson u = chunk(*job, ojson::object(), nullptr, nullptr);
        u["choices"] = ojson::array();
        u["usage"] = usage(g, chat ? &replies : nullptr);
        send(dump(u));
      }
    }
    send("[DONE]");
  };
  // The provider owns the job; both go when the response is destroyed
  // (before the socket closes), even if the provider never ran, and ~Job
  // then cancels an unfinished generation and unregisters it.
  res.set_stream("text/event-stream", std::move(provider));
}

}  // namespace hearth::server
