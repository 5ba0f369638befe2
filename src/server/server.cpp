#include "server/server.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "server/api_error.h"
#include "server/connection_watch.h"
#include "server/generation.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/web_ui.h"

namespace hearth::server {

using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kVersion = "0.1.0";
constexpr const char* kFingerprint = "hearth-0.1.0";
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // ASan keeps freed memory in quarantine: RSS says little
#else
constexpr bool kSanitized = false;
#endif

// Generated text may hold invalid UTF-8 in per-token strings (a byte-fallback
// token alone); it is written with U+FFFD rather than failing the response.
std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += hex[rng() % 16];
  return id;
}

std::time_t unix_now() { return std::time(nullptr); }

struct Route {
  const char* method;
  const char* pattern;  // httplib regex
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
    {"GET", "/stats", "/stats", "server, model, queue, memory and generation counters (JSON)", true},
    {"GET", "/metrics", "/metrics", "the same counters in Prometheus text format", true},
};

const std::vector<std::regex>& route_patterns() {
  static const std::vector<std::regex> patterns = [] {
    std::vector<std::regex> v;
    for (const auto& r : kRoutes) v.emplace_back(r.pattern);
    return v;
  }();
  return patterns;
}

// The route a path belongs to (for metrics labels), or "other".
std::string route_label(const std::string& path) {
  for (size_t i = 0; i < std::size(kRoutes); ++i)
    if (std::regex_match(path, route_patterns()[i])) return kRoutes[i].path;
  return "other";
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

ojson token_bytes(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

}  // namespace

// ---- one generation request being answered ----

struct Job {
  Server::Impl& s;
  ApiRequest api;
  std::string id;
  std::time_t created = unix_now();
  std::shared_ptr<RequestHandle> handle;
  std::unique_ptr<GenerationStream> stream;
  int watch_id = -1;
  Clock::time_point t0 = Clock::now();
  size_t text_offset = 0;  // completions logprobs: code points emitted so far

  Job(Server::Impl& server, ApiRequest request, std::shared_ptr<RequestHandle> h);
  ~Job();
  void record();  // metrics, once the stream is over
  bool recorded = false;
};

struct Server::Impl {
  Engine& engine;
  const text::Tokenizer& tok;
  const PromptBuilder& prompts;
  ServedModel model;
  ServerOptions opt;

  httplib::Server http;
  ConnectionWatch watch;
  ServerMetrics metrics;
  Clock::time_point started = Clock::now();
  std::time_t started_unix = unix_now();
  int port = 0;

  std::atomic<bool> draining{false}, run_done{false};
  std::atomic<int> shutdown_calls{0};
  std::thread shutdown_thread;
  std::mutex flight_mutex;
  std::condition_variable flight_cv;
  std::set<std::shared_ptr<RequestHandle>> in_flight;

  Impl(Engine& e, const text::Tokenizer& t, const PromptBuilder& p, ServedModel m, ServerOptions o)
      : engine(e), tok(t), prompts(p), model(std::move(m)), opt(std::move(o)) {
    if (auto ids = tok.encode("a", false); !ids.empty()) {
      anchor = ids.back();
      anchor_text = tok.decode(std::span<const int32_t>(&anchor, 1));
    }
    setup();
  }
  ~Impl() {
    if (shutdown_thread.joinable()) shutdown_thread.join();
  }

  void setup();
  void send_error(httplib::Response& res, const ApiError& e) const;
  void check_auth(const httplib::Request& req) const;
  httplib::Server::Handler guarded(bool auth, std::function<void(const httplib::Request&, httplib::Response&)> f);

  void generate(const httplib::Request& req, httplib::Response& res, Endpoint ep);
  void respond_whole(const std::shared_ptr<Job>& job, httplib::Response& res);
  void respond_stream(const std::shared_ptr<Job>& job, httplib::Response& res);
  ojson chunk(Job& job, const Piece* piece, const std::string* finish_reason, bool first);
  ojson usage(const GenerationStream& g) const;
  ojson chat_logprobs(const std::vector<TokenLogprob>& lps) const;
  ojson completion_logprobs(Job& job, const std::vector<TokenLogprob>& lps) const;
  // A token's text as it reads after other text (decoders drop a leading
  // space at the start of a sequence): decode(anchor, id) - decode(anchor).
  std::string token_text(int32_t id) const {
    if (anchor < 0) return tok.decode(std::span<const int32_t>(&id, 1));
    const int32_t pair[2] = {anchor, id};
    std::string both = tok.decode(pair);
    return both.compare(0, anchor_text.size(), anchor_text) == 0 ? both.substr(anchor_text.size()) : both;
  }
  int32_t anchor = -1;
  std::string anchor_text;

  ojson model_object() const;
  ojson stats() const;
  std::string prometheus() const;
  void trim_if_idle() const;

  void begin_flight(const std::shared_ptr<RequestHandle>& h) {
    std::lock_guard lock(flight_mutex);
    in_flight.insert(h);
    metrics.in_flight = int64_t(in_flight.size());
  }
  void end_flight(const std::shared_ptr<RequestHandle>& h) {
    {
      std::lock_guard lock(flight_mutex);
      in_flight.erase(h);
      metrics.in_flight = int64_t(in_flight.size());
    }
    flight_cv.notify_all();
  }
  void cancel_all() {
    std::lock_guard lock(flight_mutex);
    for (auto& h : in_flight) h->cancel();
  }
  void shutdown();
};

Job::Job(Server::Impl& server, ApiRequest request, std::shared_ptr<RequestHandle> h)
    : s(server), api(std::move(request)), handle(std::move(h)) {
  id = random_id(api.endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-");
  std::vector<int32_t> eos = s.model.eos_ids;
  stream = std::make_unique<GenerationStream>(handle, s.tok, api.stop, std::move(eos), api.logprobs >= 0);
  s.begin_flight(handle);
}

Job::~Job() {
  if (watch_id >= 0) s.watch.remove(watch_id);
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
  m.request_duration.observe(std::chrono::duration<double>(Clock::now() - t0).count());
}

// ---- errors, auth ----

void Server::Impl::send_error(httplib::Response& res, const ApiError& e) const {
  res.status = e.status;
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  if (e.status == 429) res.set_header("Retry-After", "1");
  res.set_content(dump(e.body()), "application/json");
}

void Server::Impl::check_auth(const httplib::Request& req) const {
  if (opt.api_key.empty()) return;
  const std::string header = req.get_header_value("Authorization");
  const std::string expect = "Bearer " + opt.api_key;
  // Compare without an early exit, so timing says nothing about the key.
  bool ok = header.size() == expect.size();
  unsigned diff = 0;
  for (size_t i = 0; i < expect.size(); ++i) diff |= unsigned(i < header.size() ? header[i] : 0) ^ unsigned(expect[i]);
  if (!ok || diff != 0)
    throw ApiError(401, header.empty() ? "missing API key: send 'Authorization: Bearer <key>'" : "invalid API key",
                   "invalid_request_error", {}, "invalid_api_key");
}

httplib::Server::Handler Server::Impl::guarded(bool auth,
                                               std::function<void(const httplib::Request&, httplib::Response&)> f) {
  return [this, auth, f = std::move(f)](const httplib::Request& req, httplib::Response& res) {
    try {
      if (auth) check_auth(req);
      f(req, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hearth serve: internal error on %s %s: %s\n", req.method.c_str(), req.path.c_str(), e.what());
      send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
    }
  };
}

// ---- generation routes ----

void Server::Impl::generate(const httplib::Request& req, httplib::Response& res, Endpoint ep) {
  const ojson body = parse_body(req.body);
  ApiRequest api = ep == Endpoint::Chat ? parse_chat_request(body) : parse_completion_request(body);
  ++(ep == Endpoint::Chat ? metrics.chat_requests : metrics.completion_requests);
  if (draining) throw ApiError(503, "the server is shutting down", "server_error", {}, "server_shutting_down");
  const std::string param = ep == Endpoint::Chat ? "messages" : "prompt";

  GenerationRequest g;
  g.prompt = prompts.build(api);
  const int64_t ctx = engine.ctx_size();
  if (int64_t(g.prompt.size()) >= ctx)
    throw bad_request(param,
                      "the prompt is " + std::to_string(g.prompt.size()) + " tokens; this server's context holds " +
                          std::to_string(ctx) + " tokens, which must leave room for at least one generated token",
                      "context_length_exceeded");
  g.sampling = model.sampling;
  api.sampling.apply_to(g.sampling);
  const int64_t vocab = engine.model().config().vocab_size;
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

  std::shared_ptr<RequestHandle> handle;
  try {
    handle = engine.submit(std::move(g));
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
  const int fd = find_socket(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  if (fd >= 0) job->watch_id = watch.add(fd, [handle] { handle->cancel(); });

  if (job->api.stream) {
    ++metrics.streamed_requests;
    respond_stream(job, res);
  } else {
    respond_whole(job, res);
  }
}

ojson Server::Impl::usage(const GenerationStream& g) const {
  return {{"prompt_tokens", g.prompt_tokens()},
          {"completion_tokens", g.completion_tokens()},
          {"total_tokens", g.prompt_tokens() + g.completion_tokens()},
          {"prompt_tokens_details", {{"cached_tokens", 0}}}};
}

ojson Server::Impl::chat_logprobs(const std::vector<TokenLogprob>& lps) const {
  ojson content = ojson::array();
  for (const auto& t : lps) {
    ojson top = ojson::array();
    for (const auto& [id, lp] : t.top) {
      std::string text = token_text(id);
      top.push_back({{"token", text}, {"logprob", lp}, {"bytes", token_bytes(text)}});
    }
    content.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", token_bytes(t.text)}, {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

ojson Server::Impl::completion_logprobs(Job& job, const std::vector<TokenLogprob>& lps) const {
  ojson tokens = ojson::array(), values = ojson::array(), tops = ojson::array(), offsets = ojson::array();
  for (const auto& t : lps) {
    tokens.push_back(t.text);
    values.push_back(t.logprob);
    ojson top = ojson::object();
    for (const auto& [id, lp] : t.top) top[token_text(id)] = lp;
    tops.push_back(top);
    offsets.push_back(job.text_offset);
    job.text_offset += utf8_length(t.text);
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

void Server::Impl::respond_whole(const std::shared_ptr<Job>& job, httplib::Response& res) {
  GenerationStream& g = *job->stream;
  std::string text;
  std::vector<TokenLogprob> lps;
  Piece p;
  while (g.next(p)) {
    text += p.text;
    for (auto& t : p.logprobs) lps.push_back(std::move(t));
  }
  job->record();
  if (!g.error().empty()) throw ApiError(500, "generation failed: " + g.error(), "server_error");
  if (g.finish_reason() == "cancelled") {
    if (draining) throw ApiError(503, "the server is shutting down", "server_error", {}, "server_shutting_down");
    throw ApiError(500, "the request was cancelled", "server_error", {}, "cancelled");
  }
  const bool chat = job->api.endpoint == Endpoint::Chat;
  ojson choice;
  if (chat) {
    choice = {{"index", 0},
              {"message", {{"role", "assistant"}, {"content", text}}},
              {"logprobs", job->api.logprobs >= 0 ? chat_logprobs(lps) : ojson(nullptr)},
              {"finish_reason", g.finish_reason()}};
  } else {
    choice = {{"index", 0},
              {"text", text},
              {"logprobs", job->api.logprobs >= 0 ? completion_logprobs(*job, lps) : ojson(nullptr)},
              {"finish_reason", g.finish_reason()}};
  }
  ojson out = {{"id", job->id},
               {"object", chat ? "chat.completion" : "text_completion"},
               {"created", job->created},
               {"model", model.id},
               {"system_fingerprint", kFingerprint},
               {"choices", ojson::array({choice})},
               {"usage", usage(g)}};
  res.status = 200;
  res.set_content(dump(out), "application/json");
}

ojson Server::Impl::chunk(Job& job, const Piece* piece, const std::string* finish_reason, bool first) {
  const bool chat = job.api.endpoint == Endpoint::Chat;
  ojson choice = {{"index", 0}};
  const bool lp = job.api.logprobs >= 0 && piece && !piece->logprobs.empty();
  if (chat) {
    ojson delta = ojson::object();
    if (first) delta["role"] = "assistant";
    if (piece) delta["content"] = piece->text;
    else if (first) delta["content"] = "";
    choice["delta"] = delta;
    choice["logprobs"] = lp ? chat_logprobs(piece->logprobs) : ojson(nullptr);
  } else {
    choice["text"] = piece ? piece->text : "";
    choice["logprobs"] = lp ? completion_logprobs(job, piece->logprobs) : ojson(nullptr);
  }
  choice["finish_reason"] = finish_reason ? ojson(*finish_reason) : ojson(nullptr);
  return {{"id", job.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", job.created},
          {"model", model.id},
          {"system_fingerprint", kFingerprint},
          {"choices", ojson::array({choice})}};
}

void Server::Impl::respond_stream(const std::shared_ptr<Job>& job, httplib::Response& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto provider = [this, job](size_t, httplib::DataSink& sink) -> bool {
    auto send = [&](const std::string& payload) {
      std::string event = "data: " + payload + "\n\n";
      return sink.write(event.data(), event.size());
    };
    GenerationStream& g = *job->stream;
    const bool chat = job->api.endpoint == Endpoint::Chat;
    if (chat && !send(dump(chunk(*job, nullptr, nullptr, true)))) {
      g.cancel();
      return false;
    }
    Piece p;
    while (g.next(p)) {
      if (p.empty()) continue;
      if (!send(dump(chunk(*job, &p, nullptr, false)))) {
        g.cancel();  // the client is gone: free the sequence at the next step
        return false;
      }
    }
    job->record();
    if (!g.error().empty() || g.finish_reason() == "cancelled") {
      if (g.error().empty() && !draining) return false;  // cancelled because the client left
      ApiError e = g.error().empty()
                       ? ApiError(503, "the server is shutting down", "server_error", {}, "server_shutting_down")
                       : ApiError(500, "generation failed: " + g.error(), "server_error");
      send(dump(e.body()));
    } else {
      ojson last = chunk(*job, nullptr, &g.finish_reason(), false);
      if (chat) last["choices"][0]["delta"] = ojson::object();
      last["usage"] = usage(g);
      send(dump(last));
      if (job->api.include_usage) {
        ojson u = chunk(*job, nullptr, nullptr, false);
        u["choices"] = ojson::array();
        u["usage"] = usage(g);
        send(dump(u));
      }
    }
    send("[DONE]");
    sink.done();
    return true;
  };
  // The provider owns the job; both go when the response is destroyed
  // (before the socket closes), even if the provider never ran, and ~Job
  // then cancels an unfinished generation and unregisters it.
  res.set_chunked_content_provider("text/event-stream", std::move(provider));
}

// ---- admin routes ----

ojson Server::Impl::model_object() const {
  return {{"id", model.id},
          {"object", "model"},
          {"created", model.created},
          {"owned_by", "hearth"},
          {"architecture", model.architecture},
          {"context_length", engine.ctx_size()}};
}

void Server::Impl::trim_if_idle() const {
  // Freed heap goes back to the OS only when asked; do it while idle so RSS
  // reflects what is live.
  if (metrics.in_flight.load() == 0) {
    EngineStats st = engine.stats();
    if (st.queued == 0 && st.running == 0) malloc_trim(0);
  }
}

ojson Server::Impl::stats() const {
  trim_if_idle();
  const EngineStats st = engine.stats();
  const ProcessMemory mem = process_memory();
  const double uptime = std::chrono::duration<double>(Clock::now() - started).count();
  const auto& m = metrics;
  const double decode_s = double(m.decode_us.load()) / 1e6;
  const auto& cfg = engine.model().config();
  return {
      {"server",
       {{"version", kVersion},
        {"sanitized", kSanitized},
        {"host", opt.host},
        {"port", port},
        {"started", started_unix},
        {"uptime_seconds", uptime},
        {"api_key_required", !opt.api_key.empty()},
        {"max_body_bytes", opt.max_body_bytes},
        {"shutting_down", draining.load()},
        {"http_requests_total", m.http_total()},
        {"requests_in_flight", m.in_flight.load()}}},
      {"model",
       {{"id", model.id},
        {"path", model.dir.string()},
        {"architecture", model.architecture},
        {"vocab_size", cfg.vocab_size},
        {"context_length", engine.ctx_size()},
        {"layers", cfg.num_layers},
        {"hidden_size", cfg.hidden_size},
        {"weight_bytes", engine.model().weight_bytes()},
        {"threads", engine.threads()}}},
      {"queue",
       {{"queued", st.queued},
        {"running", st.running},
        {"max_queue", opt.max_queue},
        {"max_batch", opt.max_batch},
        {"rejected_total", st.requests_rejected}}},
      {"memory",
       {{"rss_bytes", mem.rss_bytes},
        {"peak_rss_bytes", mem.peak_rss_bytes},
        {"virtual_bytes", mem.virtual_bytes},
        {"weight_bytes", engine.model().weight_bytes()},
        {"kv_bytes", st.kv_bytes},
        {"kv_blocks_total", st.kv_blocks_total},
        {"kv_blocks_free", st.kv_blocks_free}}},
      {"generation",
       {{"requests_total", st.requests_total},
        {"chat_requests", m.chat_requests.load()},
        {"completion_requests", m.completion_requests.load()},
        {"streamed_requests", m.streamed_requests.load()},
        {"completed", m.completed.load()},
        {"cancelled", m.client_cancelled.load()},
        {"failed", m.failed.load()},
        {"engine_cancelled", st.requests_cancelled},
        {"prompt_tokens_total", st.prompt_tokens_total},
        {"generated_tokens_total", st.generated_tokens_total},
        {"engine_steps", st.steps},
        {"time_to_first_token_avg_seconds",
         m.time_to_first_token.count() ? m.time_to_first_token.sum() / double(m.time_to_first_token.count()) : 0.0},
        {"decode_tokens_per_second_avg", decode_s > 0 ? double(m.decode_tokens.load()) / decode_s : 0.0}}},
  };
}

std::string Server::Impl::prometheus() const {
  trim_if_idle();
  const EngineStats st = engine.stats();
  const ProcessMemory mem = process_memory();
  std::ostringstream o;
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n' << name << ' ' << value << '\n';
  };
  auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " histogram\n";
    auto b = h.buckets();
    for (size_t i = 0; i < b.size(); ++i) o << name << "_bucket{le=\"" << Histogram::kBounds[i] << "\"} " << b[i] << '\n';
    o << name << "_bucket{le=\"+Inf\"} " << h.count() << '\n';
    o << name << "_sum " << h.sum() << '\n' << name << "_count " << h.count() << '\n';
  };
  o << "# HELP hearth_http_requests_total HTTP requests answered, by route and status.\n"
       "# TYPE hearth_http_requests_total counter\n";
  for (const auto& [key, n] : metrics.http_counts())
    o << "hearth_http_requests_total{route=\"" << key.first << "\",status=\"" << key.second << "\"} " << n << '\n';
  const auto& m = metrics;
  metric("hearth_uptime_seconds", "gauge", "Seconds since the server started.",
         std::chrono::duration<double>(Clock::now() - started).count());
  metric("hearth_requests_in_flight", "gauge", "Generation requests being answered.", m.in_flight.load());
  metric("hearth_queue_waiting", "gauge", "Requests waiting for a batch slot.", st.queued);
  metric("hearth_queue_running", "gauge", "Requests being generated.", st.running);
  metric("hearth_queue_max", "gauge", "Queue limit (--max-queue).", opt.max_queue);
  metric("hearth_requests_rejected_total", "counter", "Requests refused with 429 because the queue was full.",
         st.requests_rejected);
  metric("hearth_generation_requests_total", "counter", "Requests accepted by the engine.", st.requests_total);
  metric("hearth_generation_completed_total", "counter", "Requests answered in full.", m.completed.load());
  metric("hearth_generation_cancelled_total", "counter", "Requests cancelled (client gone or shutdown).",
         m.client_cancelled.load());
  metric("hearth_generation_failed_total", "counter", "Requests the engine failed.", m.failed.load());
  metric("hearth_prompt_tokens_total", "counter", "Prompt tokens prefilled.", st.prompt_tokens_total);
  metric("hearth_generated_tokens_total", "counter", "Tokens generated.", st.generated_tokens_total);
  metric("hearth_engine_steps_total", "counter", "Engine batch steps run.", st.steps);
  metric("hearth_kv_blocks_total", "gauge", "KV pool blocks.", st.kv_blocks_total);
  metric("hearth_kv_blocks_free", "gauge", "KV pool blocks free.", st.kv_blocks_free);
  metric("hearth_kv_bytes", "gauge", "KV pool size in bytes.", st.kv_bytes);
  metric("hearth_weight_bytes", "gauge", "Model weights in bytes.", engine.model().weight_bytes());
  metric("hearth_process_resident_memory_bytes", "gauge", "Resident set size.", mem.rss_bytes);
  metric("hearth_process_peak_resident_memory_bytes", "gauge", "Peak resident set size.", mem.peak_rss_bytes);
  histogram("hearth_time_to_first_token_seconds", "From acceptance to the first generated token.",
            m.time_to_first_token);
  histogram("hearth_request_duration_seconds", "From acceptance to the last token.", m.request_duration);
  metric("hearth_decode_seconds_total", "counter", "Time spent decoding after the first token.",
         double(m.decode_us.load()) / 1e6);
  metric("hearth_decode_tokens_total", "counter", "Tokens decoded after the first one.", m.decode_tokens.load());
  return o.str();
}

// ---- setup ----

void Server::Impl::setup() {
  const int threads = opt.http_threads > 0 ? opt.http_threads : opt.max_queue + opt.max_batch + 16;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  http.set_payload_max_length(opt.max_body_bytes);
  http.set_tcp_nodelay(true);
  http.set_keep_alive_max_count(1000);
  http.set_keep_alive_timeout(3);
  http.set_read_timeout(30);
  http.set_write_timeout(30);

  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(web_index_html(), "text/html; charset=utf-8");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const EngineStats st = engine.stats();
    ojson out = {{"status", draining ? "shutting_down" : "ok"},
                 {"model", model.id},
                 {"uptime_seconds", std::chrono::duration<double>(Clock::now() - started).count()},
                 {"queued", st.queued},
                 {"running", st.running}};
    res.status = draining ? 503 : 200;
    res.set_content(dump(out), "application/json");
  });
  http.Get("/v1", guarded(true, [](const httplib::Request&, httplib::Response& res) {
             ojson list = ojson::array();
             for (const auto& r : kRoutes)
               list.push_back({{"method", r.method}, {"path", r.path}, {"description", r.description}});
             res.set_content(dump(ojson{{"object", "list"}, {"data", list}}), "application/json");
           }));
  http.Get("/v1/models", guarded(true, [this](const httplib::Request&, httplib::Response& res) {
             res.set_content(dump(ojson{{"object", "list"}, {"data", ojson::array({model_object()})}}),
                             "application/json");
           }));
  http.Get("/v1/models/(.+)", guarded(true, [this](const httplib::Request& req, httplib::Response& res) {
             const std::string id = req.matches[1];
             if (id != model.id)
               throw ApiError(404, "the model '" + id + "' does not exist; this server serves '" + model.id + "'",
                              "invalid_request_error", "model", "model_not_found");
             res.set_content(dump(model_object()), "application/json");
           }));
  http.Post("/v1/chat/completions", guarded(true, [this](const httplib::Request& req, httplib::Response& res) {
              generate(req, res, Endpoint::Chat);
            }));
  http.Post("/v1/completions", guarded(true, [this](const httplib::Request& req, httplib::Response& res) {
              generate(req, res, Endpoint::Completion);
            }));
  http.Get("/stats", guarded(true, [this](const httplib::Request&, httplib::Response& res) {
             res.set_content(dump(stats()), "application/json");
           }));
  http.Get("/metrics", guarded(true, [this](const httplib::Request&, httplib::Response& res) {
             res.set_content(prometheus(), "text/plain; version=0.0.4; charset=utf-8");
           }));

  // Whatever httplib itself answers with an error status (no route, body too
  // large, malformed request) gets OpenAI's error shape; a wrong method on a
  // known path is 405 with Allow.
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) -> httplib::Server::HandlerResponse {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours already
        if (res.status == 404) {
          std::string allow;
          for (size_t i = 0; i < std::size(kRoutes); ++i)
            if (std::regex_match(req.path, route_patterns()[i]) && req.method != kRoutes[i].method)
              allow += std::string(allow.empty() ? "" : ", ") + kRoutes[i].method;
          if (!allow.empty()) {
            res.set_header("Allow", allow);
            send_error(res, ApiError(405, "method " + req.method + " is not allowed on " + req.path + " (allowed: " +
                                              allow + ")",
                                     "invalid_request_error", {}, "method_not_allowed"));
          } else {
            send_error(res, ApiError(404, "no route for " + req.method + " " + req.path + "; GET /v1 lists them",
                                     "invalid_request_error", {}, "unknown_route"));
          }
        } else if (res.status == 413) {
          // httplib caps form-encoded bodies (curl -d's default type) at 8 KiB.
          const bool form = req.get_header_value("Content-Type") == "application/x-www-form-urlencoded";
          std::string why = "the request body is larger than the limit of " + std::to_string(opt.max_body_bytes) + " bytes";
          if (form && req.get_header_value<uint64_t>("Content-Length") <= opt.max_body_bytes)
            why = "form-encoded bodies are limited to 8192 bytes; send JSON with 'Content-Type: application/json'";
          send_error(res, ApiError(413, why, "invalid_request_error", {}, "request_too_large"));
        } else if (res.status >= 500) {
          send_error(res, ApiError(res.status, "internal server error", "server_error"));
        } else {
          send_error(res, ApiError(res.status, "malformed HTTP request", "invalid_request_error"));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, "internal error: " + what, "server_error"));
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics.count_http(route_label(req.path), res.status);
  });
}

void Server::Impl::shutdown() {
  if (shutdown_calls++ > 0) {
    cancel_all();  // asked again: no more waiting
    return;
  }
  draining = true;
  shutdown_thread = std::thread([this] {
    // stop() is a no-op until the listener runs; wait for run() to start it.
    for (int i = 0; i < 500 && !http.is_running() && !run_done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    http.stop();
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
    : impl_(std::make_unique<Impl>(engine, tokenizer, prompts, std::move(model), std::move(options))) {}

Server::~Server() = default;

int Server::bind() {
  auto& s = *impl_;
  if (s.opt.port == 0) {
    s.port = s.http.bind_to_any_port(s.opt.host);
    if (s.port <= 0) throw std::runtime_error("cannot listen on " + s.opt.host);
  } else {
    if (!s.http.bind_to_port(s.opt.host, s.opt.port))
      throw std::runtime_error("cannot listen on " + s.opt.host + ":" + std::to_string(s.opt.port) +
                               " (in use, or not an address of this machine)");
    s.port = s.opt.port;
  }
  return s.port;
}

void Server::run() {
  auto& s = *impl_;
  if (!s.draining) s.http.listen_after_bind();
  s.run_done = true;
}

void Server::shutdown() { impl_->shutdown(); }

}  // namespace hearth::server
