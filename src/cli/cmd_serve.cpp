// hearth serve: the OpenAI-compatible HTTP server with the chat page at /.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "audio/decode.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/aligned_bytes.h"
#include "engine/engine.h"
#include "io/model_dirs.h"
#include "model/whisper.h"
#include "server/prompt.h"
#include "server/server.h"
#include "text/tokenizer/tokenizer.h"

namespace hearth::cli {

namespace {

const char* kHelp = R"(usage: hearth serve [--model DIR] [--host ADDR] [--port N] [options]

Serves the model over HTTP: POST /v1/chat/completions, POST /v1/completions,
GET /v1/models, /health, /stats, /metrics, and a chat page at /.
Request values beat these flags, which beat generation_config.json, which
beats the built-in defaults. See docs/server-config.md.

  --model DIR                  model directory (default: the bundled stories260k); a Whisper
                               checkpoint makes a transcription-only server: the audio routes,
                               no chat model, and the flags that configure one are refused
  --host ADDR                  address to listen on (default: 127.0.0.1)
  --port N                     port (default: 8080; 0 picks a free one)
  --api-key KEY                require 'Authorization: Bearer KEY' (default: $HEARTH_API_KEY, else none)
  --max-tokens N               default completion limit (default: until EOS or the context ends)
  --temperature T              default temperature (default: generation_config.json, else 0 = greedy)
  --top-p P --top-k K --min-p M --seed S
  --xtc-probability P --xtc-threshold T
  --repetition-penalty R --repetition-context-size N
  --presence-penalty P --presence-context-size N
  --frequency-penalty F --frequency-context-size N
  --threads N                  kernel threads (default: physical cores)
  --ctx-size N                 context length (default: the model's max_position_embeddings)
  --kv-type T                  KV cache entries: auto (default: bf16, as the activations of
                               16-bit and quantized checkpoints; f32 for f32 ones), f32, bf16
                               or int8 (bf16: half the memory and attention traffic of f32;
                               int8: 8-bit codes and a scale per 32 dimensions, 56% of bf16's
                               memory where heads have 32 dimensions or more)
  --kv-budget GB               KV pool size (default: 85% of the memory available at start,
                               less the weights); the context shrinks to what it holds
  --prompt-cache GB            bytes of KV the prompt cache may keep for reuse (default: half
                               the KV budget; 0 turns the cache off)
  --cache-retention P          what the cache evicts first: lru (default) or cost-size (the
                               shortest prefixes, keeping long ones that cost most to recompute)
  --ssd-cache DIR               keep the prompt cache's blocks on disk too (write-behind), so
                               they survive a restart; one server per directory
  --ssd-cache-max GB           disk space for all of DIR (default: half of the free space of DIR's
                               disk plus what cached blocks there take); other models' go first
  --ssd-spill-queue GB         blocks waiting to be written, at most (default: 2; past it the
                               oldest waiting write is dropped: a future miss, never an error)
  --ssd-demote-idle SEC        blocks unused this long leave RAM once on disk (default: 300)
  --generation-checkpoint-tokens N
                               a cancelled greedy or seeded request that generated at least N
                               tokens is kept, and the same request sent again resumes where it
                               stopped (default: 16; 0: never)
  --step-tokens N              tokens per engine step, all requests together: decoding streams
                               first, then prompt chunks (default: 512, at least --max-batch);
                               smaller keeps streams smooth while long prompts prefill, larger
                               prefills faster
  --step-seconds S             while streams decode, prompt chunks are held to what keeps a step
                               near S seconds, measured as steps run (default: 0.25; at least a
                               32-token block a step; 0: --step-tokens alone)
  --max-queue N                requests waiting beyond the running ones before 429 (default: 64)
  --max-batch N                sequences generated together (default: 8)
  --max-body BYTES             largest request body (default: 8388608; past it 413)
  --max-body-memory BYTES      request bodies held at once, all clients together (default:
                               1073741824; past it 503)
  --max-header-bytes BYTES     largest request line and header fields (default: 65536; past it 431)
  --header-timeout S           seconds a request head may take from its first byte; a slower
                               one is answered 408 and closed (default: 10)
  --keep-alive-timeout S       seconds an idle connection is kept open (default: 3)
  --max-connections N          connections open at once; past it 503 (default: 8192, or fewer
                               if the open-file limit is lower)
  --max-connections-per-client N
                               connections open at once from one client address (default: 1024)
  --http-threads N             requests handled at once (default: max-queue + max-batch +
                               max-audio-queue + 17); idle and slow connections take no thread
  --shutdown-timeout S         on SIGINT/SIGTERM, seconds in-flight requests may finish (default: 10)
  --response-store-mb N        memory for stored /v1/responses responses (default: 32; LRU past it)
  --whisper-model DIR          serve speech to text (/v1/audio/transcriptions, /translations) with
                               this Whisper checkpoint beside the chat model; loaded on first use
  --whisper-idle-unload S      unload the Whisper model after S idle seconds (default: 300; 0: keep)
  --whisper-resident           load the Whisper model at start and never unload it
  --max-audio-bytes BYTES      largest audio upload (default: 26214400; past it 413)
  --max-audio-seconds S        longest audio one transcription decodes (default: 10800; 64 kB a
                               second decoded; past it 413)
  --max-audio-queue N          transcription requests waiting beyond the running one (default: 8;
                               past it 429)
  --max-audio-held S           decoded audio the server holds at once, transcriptions and sessions
                               together (default: twice the larger of --max-audio-seconds and
                               --audio-session-max-seconds; past it 429, longer audio 413)
  --vad-model FILE             Silero VAD weights (silero-v6.2.0-ggml.bin) for requests that ask
                               for "vad": true
  --max-audio-sessions N       dictation sessions (/v1/audio/sessions) open at once (default: 64)
  --max-audio-sessions-per-client N
                               of those, open from one client address (default: 16)
  --audio-session-idle S       a session untouched this long is forgotten (default: 600)
  --audio-session-max-seconds S  audio one session may hold (default: 3600; about 100 kB/s)
  --response-store-ttl S       seconds a stored response lives (default: 3600)
)";

const std::vector<std::string> kServeSamplingOptions = {
    "xtc-probability",   "xtc-threshold",         "repetition-penalty", "repetition-context-size",
    "presence-penalty",  "presence-context-size", "frequency-penalty",  "frequency-context-size"};

// Server-side sampling defaults: the shared ones (temperature, top-p, top-k,
// min-p, seed) as every command reads them, then the server's extras.
SamplingParams serve_sampling(const Args& args, const io::GenerationConfig& gen) {
  SamplingParams p = sampling_params(args, gen);
  p.xtc_probability = float(args.number("xtc-probability", 0.0));
  p.xtc_threshold = float(args.number("xtc-threshold", 0.1));
  p.repetition_penalty = float(args.number("repetition-penalty", gen.repetition_penalty.value_or(0.0)));
  p.repetition_context_size = int(args.integer("repetition-context-size", 20, 1, INT_MAX));
  p.presence_penalty = float(args.number("presence-penalty", 0.0));
  p.presence_context_size = int(args.integer("presence-context-size", 20, 1, INT_MAX));
  p.frequency_penalty = float(args.number("frequency-penalty", 0.0));
  p.frequency_context_size = int(args.integer("frequency-context-size", 20, 1, INT_MAX));
  if (p.xtc_probability < 0 || p.xtc_probability > 1) throw std::runtime_error("--xtc-probability must be in [0, 1]");
  if (p.xtc_threshold < 0 || p.xtc_threshold > 0.5) throw std::runtime_error("--xtc-threshold must be in [0, 0.5]");
  if (p.repetition_penalty < 0) throw std::runtime_error("--repetition-penalty must be >= 0");
  if (p.presence_penalty < -2 || p.presence_penalty > 2) throw std::runtime_error("--presence-penalty must be in [-2, 2]");
  if (p.frequency_penalty < -2 || p.frequency_penalty > 2)
    throw std::runtime_error("--frequency-penalty must be in [-2, 2]");
  return p;
}

// What configures the chat model alone; a transcription-only server refuses
// them rather than ignore them.
const std::vector<std::string> kChatOnlyOptions = {
    "max-tokens", "ctx-size", "kv-type", "kv-budget", "prompt-cache", "cache-retention",
    "ssd-cache", "ssd-cache-max", "ssd-spill-queue", "ssd-demote-idle",
    "generation-checkpoint-tokens", "step-tokens", "step-seconds", "max-queue", "max-batch",
    "response-store-mb", "response-store-ttl"};

void check_transcription_only(const Args& args, const std::filesystem::path& dir) {
  if (args.has("whisper-model"))
    throw std::runtime_error("--model " + dir.string() +
                             " is a Whisper checkpoint, which makes a transcription-only server; "
                             "--whisper-model serves one beside a chat model: give the chat model "
                             "as --model, or leave out --whisper-model");
  std::vector<std::string> chat_only = kChatOnlyOptions;
  chat_only.insert(chat_only.end(), kSamplingOptions.begin(), kSamplingOptions.end());
  chat_only.insert(chat_only.end(), kServeSamplingOptions.begin(), kServeSamplingOptions.end());
  for (const std::string& name : chat_only)
    if (args.has(name))
      throw std::runtime_error("--" + name + " configures a chat model, and --model " +
                               dir.string() +
                               " is a Whisper checkpoint (a transcription-only server); give a "
                               "chat model as --model and this one as --whisper-model for both");
}

// Serves until SIGINT or SIGTERM (blocked in every thread: `signals`) has
// shut the server down and its connections are done.
void serve_until_signalled(server::Server& server, sigset_t& signals) {
  std::thread signal_thread([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0 || sig == SIGUSR1) return;
      std::fprintf(stderr, "hearth serve: %s received, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
      server.shutdown();
    }
  });
  server.run();
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args args(argc, argv, {"help", "whisper-resident"});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::vector<std::string> known = {"model",     "host",      "port",     "api-key",      "max-tokens",
                                    "threads",   "ctx-size",  "max-queue", "max-batch",   "max-body", "max-body-memory",
                                    "max-header-bytes", "header-timeout", "keep-alive-timeout", "max-connections",
                                    "max-connections-per-client", "http-threads", "shutdown-timeout", "response-store-mb", "response-store-ttl", "kv-type",
                                    "kv-budget", "prompt-cache", "cache-retention", "ssd-cache",
                                    "ssd-cache-max", "ssd-spill-queue", "ssd-demote-idle",
                                    "generation-checkpoint-tokens", "step-tokens", "step-seconds", "whisper-model",
                                    "whisper-idle-unload", "whisper-resident", "max-audio-bytes", "max-audio-seconds", "max-audio-queue", "max-audio-held", "vad-model",
                                    "max-audio-sessions", "max-audio-sessions-per-client", "audio-session-idle", "audio-session-max-seconds"};
  known.insert(known.end(), kSamplingOptions.begin(), kSamplingOptions.end());
  known.insert(known.end(), kServeSamplingOptions.begin(), kServeSamplingOptions.end());
  args.allow_only(known);
  args.no_positional();
  if (transparent_huge_pages() == "never")
    std::fprintf(stderr,
                 "hearth serve: transparent huge pages are off ('never'), so the weights sit on 4 KB pages and "
                 "decode may run several times slower; 'madvise' in /sys/kernel/mm/transparent_hugepage/enabled "
                 "turns them on for hearth alone\n");
  const auto dir = model_dir(args);
  const bool transcription_only = is_whisper_checkpoint(dir);
  if (transcription_only) check_transcription_only(args, dir);

  // SIGINT/SIGTERM are taken by one thread with sigwait; block them before
  // any other thread exists so none of them gets the signal instead.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);  // internal: ends the signal thread
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client closing mid-write is an error return, not a death

  server::ServerOptions sopt;
  sopt.host = args.str("host", "127.0.0.1");
  sopt.port = int(args.integer("port", 8080, 0, 65535));
  const char* env_key = std::getenv("HEARTH_API_KEY");
  sopt.api_key = args.str("api-key", env_key ? env_key : "");
  sopt.max_body_bytes = size_t(args.integer("max-body", 8 << 20, 1024));
  sopt.max_body_memory = size_t(args.integer("max-body-memory", int64_t(1) << 30, 1024));
  sopt.max_header_bytes = size_t(args.integer("max-header-bytes", 64 << 10, 1024));
  sopt.header_timeout = args.number("header-timeout", 10.0);
  sopt.keep_alive_timeout = args.number("keep-alive-timeout", 3.0);
  sopt.max_connections = int(args.integer("max-connections", 8192, 1, INT_MAX));
  sopt.max_connections_per_client = int(args.integer("max-connections-per-client", 1024, 1, INT_MAX));
  if (!(sopt.header_timeout > 0) || !(sopt.keep_alive_timeout > 0))
    throw std::runtime_error("--header-timeout and --keep-alive-timeout must be > 0");
  sopt.http_threads = int(args.integer("http-threads", 0, 0, 65536));
  sopt.shutdown_grace_seconds = args.number("shutdown-timeout", 10.0);
  sopt.response_store_bytes = int64_t(args.number("response-store-mb", 32.0) * (1 << 20));
  sopt.response_ttl_seconds = args.number("response-store-ttl", 3600.0);
  if (sopt.response_store_bytes < 0 || !(sopt.response_ttl_seconds > 0))
    throw std::runtime_error("--response-store-mb must be >= 0 and --response-store-ttl > 0");
  // Canonical, so that a trailing slash does not empty the model id (its name).
  sopt.whisper_model = transcription_only ? dir.string() : args.str("whisper-model");
  if (!sopt.whisper_model.empty())
    sopt.whisper_model = std::filesystem::weakly_canonical(sopt.whisper_model);
  sopt.whisper_idle_unload_seconds = args.number("whisper-idle-unload", 300.0);
  sopt.whisper_resident = args.has("whisper-resident");
  sopt.max_audio_bytes = size_t(args.integer("max-audio-bytes", 25 << 20, 1024));
  sopt.max_audio_seconds = args.number("max-audio-seconds", audio::kMaxDecodeSeconds);
  if (!(sopt.max_audio_seconds > 0)) throw std::runtime_error("--max-audio-seconds must be positive");
  sopt.max_audio_queue = int(args.integer("max-audio-queue", 8, 0, 65536));
  sopt.vad_model = args.str("vad-model");
  sopt.audio_sessions.max_open = int(args.integer("max-audio-sessions", 64, 1, INT_MAX));
  sopt.audio_sessions.idle_seconds = args.number("audio-session-idle", 600.0);
  sopt.audio_sessions.max_seconds = args.number("audio-session-max-seconds", 3600.0);
  if (!(sopt.audio_sessions.idle_seconds > 0) || !(sopt.audio_sessions.max_seconds > 0))
    throw std::runtime_error("--audio-session-idle and --audio-session-max-seconds must be positive");
  sopt.audio_sessions.max_open_per_client =
      int(args.integer("max-audio-sessions-per-client", 16, 1, INT_MAX));
  sopt.max_audio_held_seconds =
      args.number("max-audio-held", 2 * std::max(sopt.max_audio_seconds, sopt.audio_sessions.max_seconds));
  if (!(sopt.max_audio_held_seconds > 0)) throw std::runtime_error("--max-audio-held must be positive");
  if (sopt.whisper_idle_unload_seconds < 0) throw std::runtime_error("--whisper-idle-unload must be >= 0");
  if ((args.has("whisper-resident") || args.has("whisper-idle-unload")) && sopt.whisper_model.empty())
    throw std::runtime_error("--whisper-resident and --whisper-idle-unload need --whisper-model DIR");
  sopt.max_queue = int(args.integer("max-queue", 64, 1, 65536));
  sopt.max_batch = int(args.integer("max-batch", 8, 1, 4096));
  if (sopt.max_body_memory < sopt.max_body_bytes)
    throw std::runtime_error("--max-body-memory must be at least --max-body");

  if (transcription_only) {
    sopt.whisper_threads = thread_count(args);
    server::Server server(sopt);
    const int port = server.bind();
    std::printf(
        "hearth serve: listening on http://%s:%d (transcription only: Whisper model %s, %d threads)\n",
        sopt.host.c_str(), port, sopt.whisper_model.filename().c_str(), sopt.whisper_threads);
    std::fflush(stdout);
    serve_until_signalled(server, signals);
    std::fprintf(stderr, "hearth serve: stopped\n");
    return 0;
  }

  const auto gen = io::GenerationConfig::load(dir);
  auto tokenizer = text::Tokenizer::load(dir / "tokenizer.json");
  server::PromptBuilder prompts(dir, *tokenizer);
  if (!prompts.has_chat_template())
    std::fprintf(stderr, "hearth serve: no chat template (%s); only /v1/completions will work\n",
                 prompts.template_error().c_str());

  server::ServedModel served;
  served.id = io::model_name(dir);
  served.dir = dir;
  served.sampling = serve_sampling(args, gen);
  served.max_tokens = args.integer("max-tokens", -1);
  if (served.max_tokens == 0 || served.max_tokens < -1) throw std::runtime_error("--max-tokens must be >= 1");
  served.eos_ids = reply_stop_ids(gen, tokenizer->eos_id());
  for (int32_t id : tokenizer->encode("\n", false))
    if (tokenizer->decode(std::span<const int32_t>(&id, 1)).find('\n') != std::string::npos) served.newline_ids.push_back(id);
  served.created = std::time(nullptr);
  try {
    served.pooling = io::read_pooling_config(dir);
  } catch (const std::exception& e) {
    served.pooling_error = std::string("this model cannot serve embeddings: ") + e.what();
    std::fprintf(stderr, "hearth serve: %s\n", served.pooling_error.c_str());
  }

  EngineOptions eopt;
  eopt.threads = thread_count(args);
  eopt.ctx_size = args.integer("ctx-size", 0);
  eopt.kv_type = kv_type(args);
  eopt.max_queue = sopt.max_queue;
  eopt.max_batch = sopt.max_batch;
  if (eopt.ctx_size < 0) throw std::runtime_error("--ctx-size must be >= 1");
  if (args.has("kv-budget")) {
    const double gb = args.number("kv-budget", 0);
    if (!(gb > 0)) throw std::runtime_error("--kv-budget must be > 0 (GB)");
    eopt.kv_budget = size_t(gb * kGB);
  }
  if (args.has("prompt-cache")) {
    const double gb = args.number("prompt-cache", 0);
    if (!(gb >= 0)) throw std::runtime_error("--prompt-cache must be >= 0 (GB; 0 turns the cache off)");
    eopt.prompt_cache = int64_t(gb * kGB);
  }
  if (args.has("ssd-cache")) {
    eopt.ssd_dir = args.str("ssd-cache");
    if (eopt.ssd_dir.empty()) throw std::runtime_error("--ssd-cache needs a directory");
    std::filesystem::create_directories(eopt.ssd_dir);
    const double max_gb = args.number("ssd-cache-max", 0);  // 0: the store's default
    const double queue_gb = args.number("ssd-spill-queue", 2);
    eopt.ssd_demote_idle_seconds = args.number("ssd-demote-idle", 300);
    if ((args.has("ssd-cache-max") && !(max_gb > 0)) || !(queue_gb > 0) || !(eopt.ssd_demote_idle_seconds >= 0))
      throw std::runtime_error("--ssd-cache-max and --ssd-spill-queue must be > 0, --ssd-demote-idle >= 0");
    eopt.ssd_max_bytes = args.has("ssd-cache-max") ? std::max<uint64_t>(1, uint64_t(max_gb * kGB)) : 0;
    eopt.ssd_queue_bytes = uint64_t(queue_gb * kGB);
  } else if (args.has("ssd-cache-max") || args.has("ssd-spill-queue") || args.has("ssd-demote-idle")) {
    throw std::runtime_error("--ssd-cache-max, --ssd-spill-queue and --ssd-demote-idle need --ssd-cache DIR");
  }
  eopt.step_tokens = args.integer("step-tokens", std::max<int64_t>(512, eopt.max_batch));
  if (eopt.step_tokens < eopt.max_batch)
    throw std::runtime_error("--step-tokens must be at least --max-batch (" + std::to_string(eopt.max_batch) + ")");
  eopt.prefill_chunk = eopt.step_tokens;  // a lone long prompt may take the whole step
  eopt.step_seconds = args.number("step-seconds", 0.25);
  if (!(eopt.step_seconds >= 0)) throw std::runtime_error("--step-seconds must be >= 0");
  eopt.generation_checkpoint_tokens = args.integer("generation-checkpoint-tokens", 16);
  if (eopt.generation_checkpoint_tokens < 0) throw std::runtime_error("--generation-checkpoint-tokens must be >= 0");
  const std::string retention = args.str("cache-retention", "lru");
  if (auto r = cache::parse_retention(retention)) eopt.retention = *r;
  else throw std::runtime_error("--cache-retention must be lru or cost-size, not '" + retention + "'");

  auto model = LlamaModel::load(dir);
  served.architecture = model->config().architecture;
  Engine engine(std::move(model), eopt);

  server::Server server(engine, *tokenizer, prompts, served, sopt);
  const int port = server.bind();
  const AdmissionInfo& ad = engine.admission();
  const auto cache = engine.cache_stats();
  std::fprintf(stderr, "hearth serve: KV budget %.2f GB (context %lld tokens), prompt cache %s\n",
               double(ad.memory_budget_bytes) / kGB, (long long)ad.enforced_context_tokens,
               cache ? (std::to_string(double(cache->max_bytes) / kGB).substr(0, 5) + " GB, " + retention).c_str()
                     : "off");
  if (auto ssd = engine.ssd_stats())
    std::fprintf(stderr,
                 "hearth serve: SSD cache %s: %lld blocks (%.2f GB of %.2f GB), %lld bad files skipped and removed\n",
                 eopt.ssd_dir.c_str(), (long long)ssd->entries, double(ssd->bytes) / kGB,
                 double(ssd->max_bytes) / kGB, (long long)ssd->skipped);
  if (served.pooling_error.empty())
    std::fprintf(stderr, "hearth serve: embeddings pool by %s token%s (%s)%s\n", io::pooling_name(served.pooling.pooling),
                 served.pooling.pooling == io::Pooling::Mean ? "s" : "",
                 served.pooling.source.empty() ? "default: no Sentence Transformers config" : served.pooling.source.c_str(),
                 engine.model().has_output_head() ? "" : "; no output head: embeddings only");
  std::printf("hearth serve: listening on http://%s:%d (model %s, context %lld, %d threads)\n", sopt.host.c_str(),
              port, served.id.c_str(), (long long)engine.ctx_size(), engine.threads());
  std::fflush(stdout);

  serve_until_signalled(server, signals);
  engine.shutdown();
  if (auto f = engine.flush_cache())  // what was published is on disk before we exit
    std::fprintf(stderr, "hearth serve: SSD cache flushed (%lld blocks written, %lld dropped, %lld failed) in %.0f ms\n",
                 (long long)f->written, (long long)f->dropped, (long long)f->failed, f->ms);
  std::fprintf(stderr, "hearth serve: stopped\n");
  return 0;
}

}  // namespace hearth::cli
