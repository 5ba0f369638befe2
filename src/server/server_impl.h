// What the server's translation units share: the server's state
// (Server::Impl) and one generation request being answered (Job). The
// routes are split by concern: server.cpp (setup, errors, auth, shutdown),
// server_generation.cpp (the OpenAI generation routes), server_admin.cpp
// (models, stats, metrics).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/embedding.h"
#include "http/server.h"
#include "server/api_error.h"
#include "server/embeddings_request.h"
#include "server/generated_history.h"
#include "server/generation.h"
#include "server/metrics.h"
#include "server/json_fields.h"
#include "server/openai_request.h"
#include "server/reply.h"
#include "server/response_store.h"
#include "server/server.h"
#include "audio/subtitles.h"
#include "audio/vad.h"
#include "server/audio_request.h"
#include "server/audio_sessions.h"
#include "server/transcription.h"

namespace hearth::server {

using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

inline constexpr const char* kVersion = "0.1.0";
inline constexpr const char* kFingerprint = "hearth-0.1.0";
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;  // ASan keeps freed memory in quarantine: RSS says little
#else
inline constexpr bool kSanitized = false;
#endif

// Generated text may hold invalid UTF-8 in per-token strings (a byte-fallback
// token alone); it is written with U+FFFD rather than failing the response.
inline std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

inline std::time_t unix_now() { return std::time(nullptr); }

// A transcription's answer: JSON for json and verbose_json, else text.
struct TranscriptAnswer {
  ojson json;  // null for text, srt and vtt
  audio::FormattedTranscript text;
};

// ---- one generation request being answered ----

struct Job {
  Server::Impl& s;
  ApiRequest api;
  std::string id;
  std::time_t created = unix_now();
  std::shared_ptr<RequestHandle> handle;
  std::unique_ptr<GenerationStream> stream;
  std::shared_ptr<void> client_watch;  // cancels the generation if the client goes
  Clock::time_point t0 = Clock::now();
  size_t text_offset = 0;  // completions logprobs: code points emitted so far
  int64_t prompt_tokens = 0;
  bool in_reasoning = false;  // the prompt opened a reasoning block for the reply

  Job(Server::Impl& server, ApiRequest request, std::shared_ptr<RequestHandle> h);
  ~Job();
  void record();  // metrics, once the stream is over
  bool recorded = false;
};

// The HTTP layer's limits from the server's options.
http::Limits http_limits(const ServerOptions& opt);

struct Server::Impl {
  // All three null on a transcription-only server, whose routes that need
  // them answer 503 before they run (setup()).
  Engine* engine;
  const text::Tokenizer* tok;
  const PromptBuilder* prompts;
  ServedModel model;  // transcription-only: the Whisper model's id, dir and architecture
  ServerOptions opt;

  http::Server http;
  ServerMetrics metrics;
  GeneratedHistory history;  // the ids behind assistant replies this server generated
  mutable ResponseStore responses;  // the Responses API's stored responses (stats() expires old ones)
  Clock::time_point started = Clock::now();
  std::time_t started_unix = unix_now();
  int port = 0;

  std::atomic<bool> draining{false};
  std::atomic<int> shutdown_calls{0};
  std::thread shutdown_thread;
  std::mutex flight_mutex;
  std::condition_variable flight_cv;
  std::set<std::shared_ptr<RequestHandle>> in_flight;
  std::unique_ptr<Transcription> transcription;  // null: no Whisper model served
  int whisper_context = 0;                       // its decoder's positions (config.json, read at start)
  std::unique_ptr<audio::SileroVad> vad;         // null: no --vad-model
  AudioBudget audio_budget;  // before the sessions, whose charges it holds
  AudioSessions audio_sessions;

  Impl(Engine* e, const text::Tokenizer* t, const PromptBuilder* p, ServedModel m, ServerOptions o)
      : engine(e),
        tok(t),
        prompts(p),
        model(std::move(m)),
        opt(std::move(o)),
        http(http_limits(opt)),
        responses(opt.response_store_bytes, std::chrono::milliseconds(int64_t(opt.response_ttl_seconds * 1000))),
        audio_budget(opt.max_audio_held_seconds),
        audio_sessions(opt.audio_sessions) {
    if (auto ids = tok ? tok->encode("a", false) : std::vector<int32_t>(); !ids.empty()) {
      anchor = ids.back();
      anchor_text = tok->decode(std::span<const int32_t>(&anchor, 1));
    }
    if (!opt.vad_model.empty()) vad = audio::SileroVad::load(opt.vad_model);
    if (!opt.whisper_model.empty()) {
      whisper_context = WhisperConfig::load(opt.whisper_model).text_ctx;
      const int threads = opt.whisper_threads > 0 ? opt.whisper_threads : engine ? engine->threads() : 0;
      transcription = std::make_unique<Transcription>(TranscriptionOptions{
          opt.whisper_model, opt.whisper_idle_unload_seconds, opt.whisper_resident, threads, opt.max_audio_queue});
    }
    setup();
  }
  ~Impl() {
    if (shutdown_thread.joinable()) shutdown_thread.join();
  }

  void setup();
  void send_error(http::Response& res, const ApiError& e, Protocol protocol = Protocol::OpenAI) const;
  void check_auth(const http::Request& req) const;
  http::Server::Handler guarded(bool auth, std::function<void(const http::Request&, http::Response&)> f,
                                   Protocol protocol = Protocol::OpenAI);

  // Validates, builds the prompt and queues a generation (throws ApiError).
  std::shared_ptr<Job> start(const http::Request& req, ApiRequest api);
  // Within the context, else a 400; `rendered` receives a chat prompt's text.
  std::vector<int32_t> prompt_ids(const ApiRequest& api, std::string* rendered = nullptr);
  // The job's reply split by the model's markup (tool calls when the
  // request offers tools); stream_arguments: a streaming writer that sends
  // tool-call arguments as they come (ReplyEvent::Kind::ToolCallArguments).
  ReplyStream reply_stream(Job& job, const char* id_prefix, bool stream_arguments = false) const;
  void check_finished(const GenerationStream& g) const;    // a failed or cancelled generation as an ApiError
  std::optional<ApiError> stream_failure(const GenerationStream& g) const;  // what to tell a stream, if anything

  // OpenAI chat and completions (server_generation.cpp).
  void generate(const http::Request& req, http::Response& res, Endpoint ep);
  // The tokenizer's vocabulary for output grammars, built on first use.
  const std::shared_ptr<const grammar::Vocabulary>& grammar_vocabulary();
  std::once_flag grammar_vocab_once;
  std::shared_ptr<const grammar::Vocabulary> grammar_vocab;
  void respond_whole(const std::shared_ptr<Job>& job, http::Response& res);
  void respond_stream(const std::shared_ptr<Job>& job, http::Response& res);
  void remember_reply(const Job& job);
  ojson chunk(Job& job, ojson delta, const std::vector<TokenLogprob>* lps, const std::string* finish_reason);

  // Anthropic Messages (server_anthropic.cpp).
  void anthropic_messages(const http::Request& req, http::Response& res);
  void anthropic_count_tokens(const http::Request& req, http::Response& res);
  ojson message_object(const Job& job) const;

  // OpenAI Responses (server_responses.cpp).
  struct ResponseContext {
    std::string previous;  // previous_response_id
    bool store = true;
    ojson echo;            // request fields the response object repeats
    ojson conversation;    // input messages so far, the reply appended once done
  };
  void responses_create(const http::Request& req, http::Response& res);
  void responses_get(const http::Request& req, http::Response& res);
  void responses_delete(const http::Request& req, http::Response& res);
  ojson response_object(const Job& job, const ResponseContext& ctx, const char* status) const;

  // Embeddings, OpenAI and Ollama (server_embeddings.cpp): the vectors in
  // input order and the tokens they took.
  EmbeddingBatch embed(const http::Request& req, const EmbeddingsRequest& r);
  void openai_embeddings(const http::Request& req, http::Response& res);
  void ollama_embed(const http::Request& req, http::Response& res);
  ojson embedding_info() const;  // what /v1/models says of the embeddings it serves

  // OpenAI audio (server_audio.cpp): translate picks the translations route.
  void audio_transcribe(const http::Request& req, http::Response& res, bool translate);
  // A transcription's body in the request's format: JSON (with the hearth
  // block: model, language, duration, these timings, speech, vocabulary) or text.
  TranscriptAnswer transcript_answer(const audio::Transcript& t, const AudioRequest& r,
                                     ojson timings) const;
  void send_transcript(http::Response& res, const TranscriptAnswer& a) const;
  Transcription& require_transcription() const;  // ApiError 503 without --whisper-model
  Transcription::Place transcription_place();    // and 429 when its queue is full
  void check_audio_bytes(size_t bytes, const char* param) const;  // 413 past --max-audio-bytes
  // An upload's audio: decoded no further than max_seconds (past it, what
  // too_long() makes of the decoder's message; more input samples than
  // max_seconds allows is a 413 naming `limit_flag`, the flag that set it),
  // charged to `held` as it grows (its holder has `with` charged already),
  // stopped by the client leaving (499); audio that cannot be read is a 400
  // naming param.
  std::vector<float> decode_upload(const http::Request& req, const std::string& bytes, double max_seconds,
                                   const char* limit_flag, AudioBudget::Charge& held, size_t with,
                                   const std::string& param,
                                   const std::function<ApiError(const std::string&)>& too_long);
  ojson transcription_status() const;           // for /health and /stats
  void audio_session_create(const http::Request& req, http::Response& res);
  void audio_session_append(const http::Request& req, http::Response& res);
  void audio_session_finish(const http::Request& req, http::Response& res);
  void audio_session_delete(const http::Request& req, http::Response& res);

  // Ollama (server_ollama.cpp).
  void ollama_generate(const http::Request& req, http::Response& res, bool chat);
  void ollama_show(const http::Request& req, http::Response& res);
  ojson ollama_model() const;
  // OpenAI's usage; a chat reply's says how many of its tokens were reasoning.
  ojson usage(const GenerationStream& g, const ReplyStream* chat = nullptr) const;
  ojson chat_logprobs(const std::vector<TokenLogprob>& lps) const;
  ojson completion_logprobs(Job& job, const std::vector<TokenLogprob>& lps) const;
  // A token's text as it reads after other text (decoders drop a leading
  // space at the start of a sequence): decode(anchor, id) - decode(anchor).
  std::string token_text(int32_t id) const {
    if (anchor < 0) return tok->decode(std::span<const int32_t>(&id, 1));
    const int32_t pair[2] = {anchor, id};
    std::string both = tok->decode(pair);
    return both.compare(0, anchor_text.size(), anchor_text) == 0 ? both.substr(anchor_text.size()) : both;
  }
  int32_t anchor = -1;
  std::string anchor_text;

  ojson model_object() const;
  ojson whisper_model_object() const;
  ojson models(bool anthropic) const;  // what /v1/models lists: the chat model, then the Whisper model
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

}  // namespace hearth::server
