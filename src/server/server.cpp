#include "server/server.h"

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>

#include "core/elapsed.h"
#include "io/model_dirs.h"
#include "server/random_id.h"
#include "server/server_impl.h"
#include "server/web_ui.h"

namespace hearth::server {

namespace {

struct Route {
  const char* method;
  const char* pattern;  // a regex over the whole path
  const char* path;     // as shown in /v1
  const char* description;
  bool auth;            // needs the API key when one is set
};

const Route kRoutes[] = {
    {"GET", "/", "/", "chat web page", false},
    {"GET", "/health", "/health", "liveness: 200 while serving, 503 while shutting down", false},
    {"GET", "/v1", "/v1", "this index of endpoints", true},
    {"GET", "/v1/models", "/v1/models", "the served model (OpenAI list format)", true},
    {"GET", "/v1/models/(.+)", "/v1/models/{id}", "one model by id", true},
    {"POST", "/v1/chat/completions", "/v1/chat/completions", "chat completion (OpenAI), streaming with \"stream\": true", true},
    {"POST", "/v1/completions", "/v1/completions", "text completion of a raw prompt (OpenAI legacy)", true},
    {"POST", "/v1/messages", "/v1/messages", "Anthropic Messages, streaming with \"stream\": true", true},
    {"POST", "/v1/responses", "/v1/responses", "OpenAI Responses, streaming with \"stream\": true", true},
    {"GET", "/v1/responses/([^/]+)", "/v1/responses/{id}", "a stored response", true},
    {"DELETE", "/v1/responses/([^/]+)", "/v1/responses/{id}", "delete a stored response", true},
    {"POST", "/v1/embeddings", "/v1/embeddings", "embeddings of strings or token ids (OpenAI)", true},
    {"POST", "/v1/audio/transcriptions", "/v1/audio/transcriptions", "speech to text (OpenAI; --whisper-model)", true},
    {"POST", "/v1/audio/translations", "/v1/audio/translations", "speech to English text (OpenAI; --whisper-model)", true},
    {"POST", "/v1/audio/sessions", "/v1/audio/sessions", "open a dictation session: audio in parts, transcribed as it comes (--whisper-model)", true},
    {"POST", "/v1/audio/sessions/([^/]+)/audio", "/v1/audio/sessions/{id}/audio", "add audio to a session (float32 16 kHz or a file); the segments so far", true},
    {"POST", "/v1/audio/sessions/([^/]+)/finish", "/v1/audio/sessions/{id}/finish", "the session's transcription, as /v1/audio/transcriptions answers it", true},
    {"DELETE", "/v1/audio/sessions/([^/]+)", "/v1/audio/sessions/{id}", "forget a session", true},
    {"POST", "/v1/messages/count_tokens", "/v1/messages/count_tokens", "the prompt tokens of a Messages request", true},
    {"POST", "/api/chat", "/api/chat", "Ollama chat (NDJSON stream unless \"stream\": false)", true},
    {"POST", "/api/generate", "/api/generate", "Ollama generate", true},
    {"POST", "/api/embed", "/api/embed", "Ollama embeddings", true},
    {"GET", "/api/tags", "/api/tags", "Ollama: the served model", true},
    {"GET", "/api/ps", "/api/ps", "Ollama: the loaded model", true},
    {"POST", "/api/show", "/api/show", "Ollama: the model's details and template", true},
    {"GET", "/api/version", "/api/version", "Ollama: the server's version", true},
    {"GET", "/stats", "/stats", "server, model, queue, memory and generation counters (JSON)", true},
    {"GET", "/metrics", "/metrics", "the same counters in Prometheus text format", true},
    {"POST", "/admin/cache/session/close", "/admin/cache/session/close",
     "forget a session's prompt-cache checkpoint (its blocks stay cached)", true},
    {"POST", "/admin/cache/flush", "/admin/cache/flush",
     "wait until every published prompt-cache block is durable on SSD", true},
    {"POST", "/admin/transcription/unload", "/admin/transcription/unload",
     "unload the Whisper model now (it loads again on the next transcription)", true},
};

const std::vector<std::regex>& route_patterns() {
  static const std::vector<std::regex> patterns = [] {
    std::vector<std::regex> v;
    for (const auto& r : kRoutes) v.emplace_back(r.pattern);
    return v;
  }();
  return patterns;
}

// Anthropic's routes answer errors in Anthropic's shape.
Protocol protocol_of(const std::string& path) {
  if (path.rfind("/v1/messages", 0) == 0) return Protocol::Anthropic;
  if (path.rfind("/api/", 0) == 0) return Protocol::Ollama;
  return Protocol::OpenAI;
}

// RFC 3339, as Anthropic writes times.
std::string rfc3339(std::time_t t) {
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The route a path belongs to (for metrics labels), or "other".
std::string route_label(const std::string& path) {
  for (size_t i = 0; i < std::size(kRoutes); ++i)
    if (std::regex_match(path, route_patterns()[i])) return kRoutes[i].path;
  return "other";
}

}  // namespace

http::Limits http_limits(const ServerOptions& opt) {
  http::Limits l;
  l.max_header_bytes = opt.max_header_bytes;
  l.max_body_bytes = opt.max_body_bytes;  // the audio routes' own: audio_body_limit
  l.max_body_memory = opt.max_body_memory;
  l.header_timeout = opt.header_timeout;
  l.keep_alive_timeout = opt.keep_alive_timeout;
  l.max_connections = opt.max_connections;
  l.max_connections_per_client = opt.max_connections_per_client;
  // Every request the queues admit, and 16 for the quick routes.
  l.worker_threads = opt.http_threads > 0 ? opt.http_threads
                                          : opt.max_queue + opt.max_batch + opt.max_audio_queue + 1 + 16;
  return l;
}

Job::Job(Server::Impl& server, ApiRequest request, std::shared_ptr<RequestHandle> h)
    : s(server), api(std::move(request)), handle(std::move(h)) {
  static const char* kPrefix[] = {"chatcmpl-", "cmpl-", "msg_", "resp_"};
  id = random_id(kPrefix[int(api.endpoint)]);
  std::vector<int32_t> eos = s.model.eos_ids;
  stream = std::make_unique<GenerationStream>(handle, *s.tok, api.stop, std::move(eos), api.logprobs >= 0);
  s.begin_flight(handle);
}

Job::~Job() {
  handle->cancel();  // a no-op once finished; frees the KV of an abandoned one
  record();
  s.end_flight(handle);
}

void Job::record() {
  if (recorded) return;
  recorded = true;
  auto& m = s.metrics;
  const std::string& reason = stream->finish_reason();
  if (!stream->error().empty()) ++m.failed;
  else if (reason == "cancelled" || reason.empty()) ++m.client_cancelled;
  else ++m.completed;
  m.completion_tokens += stream->completion_tokens();
  if (stream->completion_tokens() > 0) m.time_to_first_token.observe(stream->time_to_first_token());
  if (stream->finished()) {  // else the engine may still be writing it
    const FinishInfo& info = stream->info();
    m.prompt_tokens += info.prompt_tokens;
    if (info.generated_tokens > 1 && info.decode_seconds > 0) {
      m.decode_us += int64_t(info.decode_seconds * 1e6);
      m.decode_tokens += info.generated_tokens - 1;
    }
  }
  m.request_duration.observe(seconds_since(t0));
}

ojson Server::Impl::models(bool anthropic) const {
  ojson out = ojson::array();
  if (engine) out.push_back(model_object());
  if (transcription) out.push_back(whisper_model_object());
  if (anthropic)  // Anthropic's SDK reads its own model shape
    for (auto& m : out)
      m = {{"type", "model"},
           {"id", m["id"]},
           {"display_name", m["id"]},
           {"created_at", rfc3339(m["created"].get<std::time_t>())}};
  return out;
}

// ---- errors, auth ----

void Server::Impl::send_error(http::Response& res, const ApiError& e, Protocol protocol) const {
  res.status = e.status;
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  if (e.status == 429) res.set_header("Retry-After", "1");
  // A missing model stays missing: the OpenAI and Anthropic SDKs would
  // otherwise retry a 503.
  if (e.code == "model_unavailable") res.set_header("x-should-retry", "false");
  res.set_content(dump(e.body(protocol)), "application/json");
}

namespace {

// Compares without an early exit, so timing says nothing about the key.
bool same_secret(const std::string& given, const std::string& expect) {
  unsigned diff = given.size() != expect.size();
  for (size_t i = 0; i < expect.size(); ++i) diff |= unsigned(i < given.size() ? given[i] : 0) ^ unsigned(expect[i]);
  return diff == 0;
}

}  // namespace

void Server::Impl::check_auth(const http::Request& req) const {
  if (opt.api_key.empty()) return;
  // OpenAI clients send a bearer token, Anthropic's send x-api-key.
  const std::string bearer = req.header("Authorization");
  const std::string api_key = req.header("x-api-key");
  if (!bearer.empty() ? same_secret(bearer, "Bearer " + opt.api_key) : same_secret(api_key, opt.api_key)) return;
  throw ApiError(401,
                 bearer.empty() && api_key.empty()
                     ? "missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'"
                     : "invalid API key",
                 "invalid_request_error", {}, "invalid_api_key");
}

http::Server::Handler Server::Impl::guarded(bool auth,
                                               std::function<void(const http::Request&, http::Response&)> f,
                                               Protocol protocol) {
  return [this, auth, protocol, f = std::move(f)](const http::Request& req, http::Response& res) {
    try {
      if (auth) check_auth(req);
      f(req, res);
    } catch (const ApiError& e) {
      send_error(res, e, protocol);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hearth serve: internal error on %s %s: %s\n", req.method.c_str(), req.path.c_str(), e.what());
      send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"), protocol);
    }
  };
}

// ---- setup ----

void Server::Impl::setup() {
  // Routes that answer from memory run on the I/O thread: they answer even
  // when every worker is busy.
  auto get = [this](const char* pattern, http::Server::Handler h, bool run_inline = false) {
    http.route("GET", pattern, std::move(h), run_inline);
  };
  auto post = [this](const char* pattern, http::Server::Handler h) { http.route("POST", pattern, std::move(h)); };
  // Audio may come as base64 in JSON: a third larger than the file. Only
  // the audio routes take bodies that large.
  if (!opt.whisper_model.empty())
    http.body_limit("/v1/audio/.*", std::max(opt.max_body_bytes, opt.max_audio_bytes / 3 * 4 + (64u << 10)));

  get(
      "/",
      [](const http::Request&, http::Response& res) {
        res.set_header("Cache-Control", "no-cache");
        res.set_content(web_index_html(), "text/html; charset=utf-8");
      },
      true);
  get(
      "/health",
      [this](const http::Request&, http::Response& res) {
    const EngineStats st = engine ? engine->stats() : EngineStats{};
    ojson out = {{"status", draining ? "shutting_down" : "ok"},
                 {"model", model.id},
                 {"uptime_seconds", seconds_since(started)},
                 {"queued", st.queued},
                 {"running", st.running}};
    if (transcription) out["transcription"] = transcription_status();
    res.status = draining ? 503 : 200;
    res.set_content(dump(out), "application/json");
  },
      true);
  get("/v1", guarded(true, [this](const http::Request&, http::Response& res) {
             ojson endpoints = ojson::array();
             for (const auto& r : kRoutes) endpoints.push_back(std::string(r.method) + " " + r.path);
             res.set_content(
                 dump(ojson{{"name", "hearth"}, {"version", kVersion}, {"model", model.id}, {"endpoints", endpoints}}),
                 "application/json");
           }));
  // Anthropic's SDK sends anthropic-version and reads its own shapes.
  get("/v1/models", guarded(true, [this](const http::Request& req, http::Response& res) {
             const bool anthropic = req.has_header("anthropic-version");
             const ojson data = models(anthropic);
             ojson out = anthropic ? ojson{{"data", data},
                                           {"has_more", false},
                                           {"first_id", data.front()["id"]},
                                           {"last_id", data.back()["id"]}}
                                   : ojson{{"object", "list"}, {"data", data}};
             res.set_content(dump(out), "application/json");
           }));
  get("/v1/models/(.+)", guarded(true, [this](const http::Request& req, http::Response& res) {
             const std::string id = req.matches[1];
             std::string served;
             for (const ojson& m : models(req.has_header("anthropic-version"))) {
               if (m["id"] == id) {
                 res.set_content(dump(m), "application/json");
                 return;
               }
               served += (served.empty() ? "'" : " and '") + m["id"].get<std::string>() + "'";
             }
             throw ApiError(404, "the model '" + id + "' does not exist; this server serves " + served,
                            "invalid_request_error", "model", "model_not_found");
           }));
  // Routes that need the chat model; a transcription-only server answers
  // them 503 in the route's protocol, saying what it serves instead.
  auto chat = [this](auto f) {
    return [this, f](const http::Request& req, http::Response& res) {
      if (!engine)
        throw ApiError(503,
                       "this server serves only speech to text (/v1/audio/transcriptions, "
                       "/v1/audio/translations) with the Whisper model '" + model.id +
                           "'; for chat, completions and embeddings start hearth serve with "
                           "--model DIR of a chat model (and --whisper-model DIR for speech to "
                           "text beside it)",
                       "server_error", {}, "model_unavailable");
      f(req, res);
    };
  };
  post("/v1/chat/completions", guarded(true, chat([this](const http::Request& req, http::Response& res) {
              generate(req, res, Endpoint::Chat);
            })));
  post("/v1/completions", guarded(true, chat([this](const http::Request& req, http::Response& res) {
              generate(req, res, Endpoint::Completion);
            })));
  post("/v1/embeddings", guarded(true, chat([this](const http::Request& req, http::Response& res) {
              openai_embeddings(req, res);
            })));
  post("/v1/audio/transcriptions", guarded(true, [this](const http::Request& req, http::Response& res) {
              audio_transcribe(req, res, false);
            }));
  post("/v1/audio/translations", guarded(true, [this](const http::Request& req, http::Response& res) {
              audio_transcribe(req, res, true);
            }));
  post("/v1/audio/sessions", guarded(true, [this](const http::Request& req, http::Response& res) {
              audio_session_create(req, res);
            }));
  post("/v1/audio/sessions/([^/]+)/audio", guarded(true, [this](const http::Request& req, http::Response& res) {
              audio_session_append(req, res);
            }));
  post("/v1/audio/sessions/([^/]+)/finish", guarded(true, [this](const http::Request& req, http::Response& res) {
              audio_session_finish(req, res);
            }));
  http.route("DELETE", "/v1/audio/sessions/([^/]+)", guarded(true, [this](const http::Request& req, http::Response& res) {
                audio_session_delete(req, res);
              }));
  post("/admin/transcription/unload", guarded(true, [this](const http::Request&, http::Response& res) {
              const bool unloaded = require_transcription().unload();
              ojson out = {{"unloaded", unloaded}};
              out.update(transcription_status());
              res.set_content(dump(out), "application/json");
            }));
  post("/v1/responses", guarded(true, chat([this](const http::Request& req, http::Response& res) {
              responses_create(req, res);
            })));
  get("/v1/responses/([^/]+)", guarded(true, chat([this](const http::Request& req, http::Response& res) {
             responses_get(req, res);
           })));
  http.route("DELETE", "/v1/responses/([^/]+)", guarded(true, chat([this](const http::Request& req, http::Response& res) {
                responses_delete(req, res);
              })));
  post("/v1/messages", guarded(
                                true, chat([this](const http::Request& req, http::Response& res) { anthropic_messages(req, res); }),
                                Protocol::Anthropic));
  post("/v1/messages/count_tokens",
            guarded(
                true, chat([this](const http::Request& req, http::Response& res) { anthropic_count_tokens(req, res); }),
                Protocol::Anthropic));
  // Every Ollama route but /api/version is about the chat model.
  auto ollama = [this, chat](auto f) { return guarded(true, chat(f), Protocol::Ollama); };
  post("/api/chat", ollama([this](const http::Request& req, http::Response& res) { ollama_generate(req, res, true); }));
  post("/api/generate",
            ollama([this](const http::Request& req, http::Response& res) { ollama_generate(req, res, false); }));
  post("/api/embed", ollama([this](const http::Request& req, http::Response& res) { ollama_embed(req, res); }));
  post("/api/show", ollama([this](const http::Request& req, http::Response& res) { ollama_show(req, res); }));
  get("/api/tags", ollama([this](const http::Request&, http::Response& res) {
             res.set_content(dump(ojson{{"models", {ollama_model()}}}), "application/json");
           }));
  get("/api/ps", ollama([this](const http::Request&, http::Response& res) {
             ojson m = ollama_model();
             m["expires_at"] = "9999-12-31T23:59:59Z";  // loaded for as long as the server runs
             m["size_vram"] = 0;
             res.set_content(dump(ojson{{"models", {m}}}), "application/json");
           }));
  get("/api/version", guarded(
                          true,
                          [](const http::Request&, http::Response& res) {
                            res.set_content(dump(ojson{{"version", kVersion}}), "application/json");
                          },
                          Protocol::Ollama));
  get("/stats", guarded(true, [this](const http::Request&, http::Response& res) {
             res.set_content(dump(stats()), "application/json");
           }));
  get("/metrics", guarded(true, [this](const http::Request&, http::Response& res) {
             res.set_content(prometheus(), "text/plain; version=0.0.4; charset=utf-8");
           }));
  post("/admin/cache/session/close", guarded(true, [this](const http::Request& req, http::Response& res) {
              const ojson body = parse_body(req.body);
              std::string id;
              if (auto it = body.find("session_id"); it != body.end() && !it->is_null()) {
                if (!it->is_string()) throw bad_request("session_id", "'session_id' must be a string");
                id = check_session_id("session_id", it->get<std::string>());
              }
              // Transcription only: no prompt cache, so no session to close.
              if (engine && !id.empty()) engine->close_session(id);
              res.set_content(dump(ojson{{"closed", engine && !id.empty()}}), "application/json");
            }));
  post("/admin/cache/flush", guarded(true, [this](const http::Request&, http::Response& res) {
              const auto f = engine ? engine->flush_cache() : std::nullopt;
              ojson out = {{"flushed", f.has_value()}};
              if (f) {
                out["written"] = f->written;
                out["dropped"] = f->dropped;
                out["failed"] = f->failed;
                out["elapsed_ms"] = f->ms;
              }
              res.set_content(dump(out), "application/json");
            }));

  // No route: 404, or 405 with Allow when the path has routes for other methods.
  http.set_fallback([this](const http::Request& req, http::Response& res) {
    const Protocol protocol = protocol_of(req.path);
    std::string allow;
    for (size_t i = 0; i < std::size(kRoutes); ++i)
      if (std::regex_match(req.path, route_patterns()[i]) && req.method != kRoutes[i].method)
        allow += std::string(allow.empty() ? "" : ", ") + kRoutes[i].method;
    if (!allow.empty()) {
      res.set_header("Allow", allow);
      send_error(res,
                 ApiError(405, "method " + req.method + " is not allowed on " + req.path + " (allowed: " + allow + ")",
                          "invalid_request_error", {}, "method_not_allowed"),
                 protocol);
    } else {
      send_error(res,
                 ApiError(404, "no route for " + req.method + " " + req.path + "; GET /v1 lists them",
                          "invalid_request_error", {}, "unknown_route"),
                 protocol);
    }
  });
  // What the HTTP layer answers itself (malformed requests, limits) gets
  // the route's error shape.
  http.set_error_writer([this](const http::Request& req, http::Response& res, int status, const std::string& message) {
    const bool client_side = status < 500 || status == 503;
    const char* code = status == 408   ? "request_timeout"
                       : status == 413 ? "request_too_large"
                       : status == 414 ? "path_too_long"
                       : status == 431 ? "headers_too_large"
                                       : "";
    send_error(res, ApiError(status, message, client_side ? "invalid_request_error" : "server_error", {}, code),
               protocol_of(req.path));
  });
  http.set_logger([this](const http::Request& req, const http::Response& res) {
    metrics.count_http(route_label(req.path), res.status);
  });
}

void Server::Impl::shutdown() {
  if (shutdown_calls++ > 0) {
    cancel_all();  // asked again: no more waiting
    http.stop(1);
    return;
  }
  draining = true;
  // Connections without a request in progress close now; the rest once
  // answered, and every one by the end of the grace period (plus a moment
  // for the cancelled ones to write their last bytes).
  http.stop(opt.shutdown_grace_seconds + 1);
  shutdown_thread = std::thread([this] {
    std::unique_lock lock(flight_mutex);
    const auto grace = std::chrono::duration<double>(opt.shutdown_grace_seconds);
    if (!flight_cv.wait_for(lock, grace, [&] { return in_flight.empty(); })) {
      std::fprintf(stderr, "hearth serve: cancelling %zu request(s) still running\n", in_flight.size());
      for (auto& h : in_flight) h->cancel();
    }
  });
}

// ---- Server ----

Server::Server(Engine& engine, const text::Tokenizer& tokenizer, const PromptBuilder& prompts, ServedModel model,
               ServerOptions options)
    : impl_(std::make_unique<Impl>(&engine, &tokenizer, &prompts, std::move(model), std::move(options))) {}

namespace {

ServedModel whisper_served(const ServerOptions& options) {
  if (options.whisper_model.empty())
    throw std::invalid_argument("a transcription-only server needs options.whisper_model");
  ServedModel m;
  m.id = io::model_name(options.whisper_model);  // as Transcription::model_id() names it
  m.dir = options.whisper_model;
  m.architecture = "whisper";
  return m;
}

}  // namespace

Server::Server(ServerOptions options)
    : impl_(std::make_unique<Impl>(nullptr, nullptr, nullptr, whisper_served(options), std::move(options))) {}

Server::~Server() = default;

int Server::bind() {
  auto& s = *impl_;
  s.port = s.http.bind(s.opt.host, s.opt.port);
  return s.port;
}

void Server::run() {
  auto& s = *impl_;
  s.http.run();
}

void Server::shutdown() { impl_->shutdown(); }

}  // namespace hearth::server
