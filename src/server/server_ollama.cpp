// Ollama's API, for applications that speak only it: /api/chat and
// /api/generate (NDJSON streams by default, one object with
// "stream": false), /api/tags, /api/ps, /api/show, /api/version. Errors
// are {"error": "..."}.
#include <chrono>

#include "core/elapsed.h"
#include "server/ollama_request.h"
#include "server/reply.h"
#include "server/server_impl.h"

namespace hearth::server {

namespace {

// Ollama writes times as RFC 3339 with nanoseconds.
std::string ollama_time() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%09lldZ", static_cast<long long>(ns));
  return buf;
}

int64_t nanoseconds(double seconds) { return int64_t(seconds * 1e9); }

// Ollama's keep_alive of zero: 0, or a Go duration of zero ("0", "0s", "0.0m").
bool zero_duration(const ojson& v) {
  if (v.is_number()) return v.get<double>() == 0;
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  const size_t digits = s.find_first_not_of("0.");
  if (digits == 0 || s.find_first_not_of('.') == std::string::npos) return false;
  const std::string unit = digits == std::string::npos ? "" : s.substr(digits);
  for (const char* u : {"", "ns", "us", "\u00b5s", "ms", "s", "m", "h"})
    if (unit == u) return true;
  return false;
}

// Ollama's family names are the config's model_type.
const char* family(io::Arch arch) {
  switch (arch) {
    case io::Arch::Llama: return "llama";
    case io::Arch::Mistral: return "mistral";
    case io::Arch::Qwen2: return "qwen2";
    case io::Arch::Qwen3: return "qwen3";
  }
  return "unknown";
}

}  // namespace

ojson Server::Impl::ollama_model() const {
  const std::string fam = family(engine->model().config().arch);
  return {{"name", model.id},
          {"model", model.id},
          {"modified_at", ollama_time()},
          {"size", engine->model().weight_bytes()},
          {"digest", ""},
          {"details",
           {{"parent_model", ""},
            {"format", "safetensors"},
            {"family", fam},
            {"families", {fam}},
            {"parameter_size", ""},
            {"quantization_level", ""}}}};
}

void Server::Impl::ollama_generate(const http::Request& req, http::Response& res, bool chat) {
  const ojson body = parse_body(req.body);
  // A model and no prompt (generate) or no messages (chat) is how Ollama's
  // clients load or unload (keep_alive 0) a model. The model here is always
  // loaded: the answer is Ollama's, with nothing generated.
  const ojson* asked = field(body, chat ? "messages" : "prompt");
  if (field(body, "model") && (!asked || *asked == (chat ? ojson::array() : ojson("")))) {
    const ojson* keep_alive = field(body, "keep_alive");
    const bool unload = keep_alive && zero_duration(*keep_alive);
    ojson o = {{"model", model.id}, {"created_at", ollama_time()}};
    if (chat) o["message"] = {{"role", "assistant"}, {"content", ""}};
    else o["response"] = "";
    o["done"] = true;
    o["done_reason"] = unload ? "unload" : "load";
    const bool stream = boolean(body, "stream").value_or(true);
    res.set_content(dump(o) + (stream ? "\n" : ""), stream ? "application/x-ndjson" : "application/json");
    return;
  }
  ApiRequest api = chat ? parse_ollama_chat(body) : parse_ollama_generate(body);
  ++(chat ? metrics.chat_requests : metrics.completion_requests);
  auto job = start(req, std::move(api));

  // One NDJSON object: a piece of the reply, or (done) the summary.
  auto object = [this, job, chat](const ReplyEvent* e, const ReplyStream* end) {
    ojson o = {{"model", model.id}, {"created_at", ollama_time()}};
    ojson message = {{"role", "assistant"}, {"content", ""}};
    std::string response;
    if (e && e->kind == ReplyEvent::Kind::Content) message["content"] = e->text, response = e->text;
    else if (e && e->kind == ReplyEvent::Kind::Reasoning) message["thinking"] = e->text;
    else if (e) message["tool_calls"] = {{{"function", {{"name", e->call.name}, {"arguments", arguments_object(ojson(e->call.arguments))}}}}};
    if (chat) {
      o["message"] = std::move(message);
    } else {
      o["response"] = response;
      if (message.contains("thinking")) o["thinking"] = message["thinking"];
    }
    o["done"] = end != nullptr;
    if (end) {
      const GenerationStream& g = end->generation();
      const FinishInfo& info = g.info();
      o["done_reason"] = g.finish_reason() == "length" ? "length" : "stop";
      o["total_duration"] = nanoseconds(seconds_since(job->t0));
      o["load_duration"] = 0;
      o["prompt_eval_count"] = g.prompt_tokens();
      o["prompt_eval_duration"] = nanoseconds(info.prefill_seconds);
      o["eval_count"] = g.completion_tokens();
      o["eval_duration"] = nanoseconds(info.decode_seconds);
    }
    return o;
  };

  if (!job->api.stream) {
    ReplyStream replies = reply_stream(*job, "call_");
    Reply reply = collect(replies);
    job->record();
    remember_reply(*job);
    check_finished(*job->stream);
    ojson out = object(nullptr, &replies);
    ojson& m = chat ? out["message"] : out;
    m[chat ? "content" : "response"] = reply.content;
    if (!reply.reasoning.empty()) m["thinking"] = reply.reasoning;
    for (const auto& c : reply.calls)
      out["message"]["tool_calls"].push_back({{"function", {{"name", c.name}, {"arguments", arguments_object(ojson(c.arguments))}}}});
    res.set_content(dump(out), "application/json");
    return;
  }
  res.status = 200;
  auto provider = [this, job, object](http::StreamSink& sink) {
    auto send = [&](const ojson& o) {
      const std::string line = dump(o) + "\n";
      return sink.write(line);
    };
    GenerationStream& g = *job->stream;
    ReplyStream replies = reply_stream(*job, "call_");
    std::vector<ReplyEvent> events;
    bool ok = true;
    while (ok && replies.next(events)) {
      for (const auto& e : events) ok = ok && send(object(&e, nullptr));
      events.clear();
    }
    if (!ok) {
      g.cancel();
      return;
    }
    job->record();
    remember_reply(*job);
    if (auto e = stream_failure(g)) send(e->body(Protocol::Ollama));
    else if (!g.error().empty() || g.finish_reason() == "cancelled") return;
    else send(object(nullptr, &replies));
  };
  res.set_stream("application/x-ndjson", std::move(provider));
}

void Server::Impl::ollama_show(const http::Request& req, http::Response& res) {
  const ojson body = parse_body(req.body);
  std::string name = string(body, "model").value_or(string(body, "name").value_or(""));
  if (name != model.id && name.rfind(model.id + ":", 0) != 0)
    throw ApiError(404, "model '" + name + "' not found", "invalid_request_error");
  const std::string& tmpl = prompts->template_source();
  ojson capabilities = {"completion"};
  if (tmpl.find("tools") != std::string::npos) capabilities.push_back("tools");
  if (tmpl.find("<think>") != std::string::npos) capabilities.push_back("thinking");
  ojson m = ollama_model();
  res.set_content(dump(ojson{{"license", ""},
                             {"modelfile", ""},
                             {"parameters", ""},
                             {"template", tmpl},
                             {"details", m["details"]},
                             {"model_info",
                              {{"general.architecture", m["details"]["family"]},
                               {m["details"]["family"].get<std::string>() + ".context_length", engine->ctx_size()}}},
                             {"capabilities", capabilities},
                             {"modified_at", m["modified_at"]}}),
                  "application/json");
}

}  // namespace hearth::server
