// hearth's HTTP server: the OpenAI-compatible routes over one Engine, the
// admin routes (/health, /v1, /v1/models, /stats, /metrics) and the chat web
// page at /; or, without an Engine, a transcription-only server. See
// docs/server-api.md for the wire format and docs/server-config.md for the
// options.
//
// Threads: the HTTP layer's I/O thread owns the sockets (http/server.h); its
// workers parse, validate, render and tokenize; the engine thread generates.
// A worker answering a generation request blocks on its RequestHandle; the
// request is cancelled if the client disconnects.
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "io/pooling_config.h"
#include "server/audio_sessions.h"
#include "server/prompt.h"
#include "text/tokenizer/tokenizer.h"

namespace hearth::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: any free port (see Server::bind)
  std::string api_key;                 // empty: no authentication
  size_t max_body_bytes = 8u << 20;    // larger bodies get 413
  size_t max_body_memory = size_t(1) << 30;  // request bodies held at once, all clients; past it 503
  size_t max_header_bytes = 64u << 10;  // larger request heads get 431
  double header_timeout = 10;          // seconds from a request head's first byte to its end
  double keep_alive_timeout = 3;       // seconds an idle connection is kept
  int max_connections = 8192;          // open at once; past it 503
  int max_connections_per_client = 1024;  // per client address
  int http_threads = 0;                // requests handled at once; 0: max_queue + max_batch + max_audio_queue + 17
  double shutdown_grace_seconds = 10;  // in-flight requests may finish for this long
  int max_queue = 64, max_batch = 8;   // as given to the engine (shown in /stats)
  int64_t response_store_bytes = 32 << 20;  // stored Responses API responses, at most
  double response_ttl_seconds = 3600;       // and for this long
  // Speech to text beside the chat model (server/transcription.h); no
  // whisper_model: the audio routes answer 503.
  std::filesystem::path whisper_model;
  int whisper_threads = 0;                   // Whisper's kernel threads; 0: the engine's, or physical cores
  double whisper_idle_unload_seconds = 300;  // 0: kept once loaded
  bool whisper_resident = false;             // loaded at start, never unloaded
  size_t max_audio_bytes = 25u << 20;        // larger audio uploads get 413
  double max_audio_seconds = 3 * 3600;       // longer audio gets 413 (64 kB a second decoded)
  int max_audio_queue = 8;                   // transcription requests waiting beyond the running one; past it 429
  double max_audio_held_seconds = 6 * 3600;  // decoded audio held at once, all requests and sessions (server/audio_budget.h)
  std::filesystem::path vad_model;           // Silero VAD weights for "vad": true; none: a 400
  AudioSessionLimits audio_sessions;         // dictation sessions (/v1/audio/sessions)
};

struct ServedModel {
  std::string id;  // the model directory's name
  std::filesystem::path dir;
  std::string architecture;
  std::vector<int32_t> eos_ids;    // generation ends after any of these (not shown)
  std::vector<int32_t> newline_ids;  // with eos_ids: tokens XTC never removes
  SamplingParams sampling;         // defaults: built-in < generation_config.json < flags
  int64_t max_tokens = -1;         // default limit; -1: until EOS or the context ends
  std::time_t created = 0;
  // How /v1/embeddings and /api/embed pool (io/pooling_config.h), or why
  // they cannot (a pooling mode hearth does not implement).
  io::PoolingConfig pooling;
  std::string pooling_error;
};

class Server {
 public:
  Server(Engine& engine, const text::Tokenizer& tokenizer, const PromptBuilder& prompts, ServedModel model,
         ServerOptions options);
  // Transcription only: options.whisper_model is the one model served, and
  // the chat and text routes answer 503 model_unavailable.
  explicit Server(ServerOptions options);
  ~Server();

  // Binds the listening socket; returns the port (the chosen one for port 0).
  // Throws std::runtime_error if it cannot.
  int bind();
  // Serves until shutdown() has stopped it and every connection is done.
  void run();
  // Thread-safe, returns at once: stops accepting connections, lets the
  // requests in flight finish for the grace period, then cancels them.
  // A second call cancels at once.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::server
