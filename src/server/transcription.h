// The Whisper model a server runs beside its chat model: loaded on the first
// transcription, unloaded after an idle period (unless resident), one
// transcription at a time on its own kernel threads. /health, /stats and
// POST /admin/transcription/unload read and drive it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "audio/transcriber.h"
#include "core/thread_pool.h"
#include "io/model_dirs.h"
#include "model/whisper.h"
#include "text/tokenizer/whisper.h"

namespace hearth::server {

struct TranscriptionOptions {
  std::filesystem::path model_dir;
  double idle_unload_seconds = 300;  // 0: never unloaded once loaded
  bool resident = false;             // loaded at start and never unloaded
  int threads = 0;                   // kernel threads; 0: physical cores
  int max_queue = 8;                 // requests waiting beyond the running one; past it admit() refuses
};

class Transcription {
 public:
  explicit Transcription(TranscriptionOptions options);
  ~Transcription();

  std::string model_id() const { return io::model_name(options_.model_dir); }

  // One request's place, held from before its audio is decoded to its
  // answer: transcriptions run one at a time, so without a bound the waiting
  // ones (and their decoded audio) would take every HTTP worker.
  class Place {
   public:
    explicit Place(Transcription& t) : t_(&t) {}
    Place(Place&& o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
    Place& operator=(Place&&) = delete;
    ~Place() {
      if (t_) --t_->in_flight_;
    }

   private:
    Transcription* t_;
  };
  // A place, or nothing when max_queue requests already wait.
  std::optional<Place> admit();
  int max_queue() const { return options_.max_queue; }

  // Loads the model if needed (throws std::runtime_error when it cannot) and
  // transcribes; waits while another transcription runs.
  audio::Transcript transcribe(std::span<const float> samples, const audio::TranscribeOptions& o,
                               const audio::TranscribeHooks& hooks);
  // Runs work with the model loaded (loading it if needed), one at a time:
  // what a streaming session does with each part of its audio.
  using Work =
      std::function<void(WhisperModel&, const text::WhisperTokenizer&, ThreadPool&)>;
  void run(const Work& work);
  void count_request();  // a transcription not made by transcribe()

  bool unload();  // false if it was not loaded (or is resident)
  nlohmann::ordered_json status() const;

 private:
  void load_locked();
  void idle_watch();

  void unload_locked();  // with run_ held

  TranscriptionOptions options_;
  std::atomic<int> in_flight_{0};  // requests holding a Place
  std::mutex run_;            // held for a whole load, transcription or unload
  mutable std::mutex state_;  // the counters and loaded_, so status() never waits on a run
  std::condition_variable wake_;
  bool loaded_ = false;
  std::unique_ptr<WhisperModel> model_;
  std::optional<text::WhisperTokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  std::chrono::steady_clock::time_point last_used_;
  int64_t loads_ = 0, unloads_ = 0, requests_ = 0;
  double last_load_ms_ = 0;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace hearth::server
