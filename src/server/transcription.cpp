#include "server/transcription.h"

#include <algorithm>
#include <stdexcept>

#include "core/elapsed.h"

namespace hearth::server {

Transcription::Transcription(TranscriptionOptions options) : options_(std::move(options)) {
  if (options_.resident) {
    std::lock_guard lock(run_);
    load_locked();
  } else if (options_.idle_unload_seconds > 0) {
    watcher_ = std::thread([this] { idle_watch(); });
  }
}

Transcription::~Transcription() {
  {
    std::lock_guard lock(state_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

void Transcription::load_locked() {
  if (model_) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto model = WhisperModel::load(options_.model_dir);
  tokenizer_.emplace(
      text::WhisperTokenizer::load_dir(options_.model_dir, model->config().vocab_size));
  if (!pool_)
    pool_ = std::make_unique<ThreadPool>(options_.threads > 0 ? options_.threads
                                                              : ThreadPool::default_threads());
  model_ = std::move(model);
  std::lock_guard lock(state_);
  loaded_ = true;
  ++loads_;
  last_load_ms_ = ms_since(t0);
}

void Transcription::unload_locked() {
  model_.reset();
  tokenizer_.reset();
  std::lock_guard lock(state_);
  loaded_ = false;
  ++unloads_;
}

audio::Transcript Transcription::transcribe(std::span<const float> samples,
                                            const audio::TranscribeOptions& o,
                                            const audio::TranscribeHooks& hooks) {
  count_request();
  // The VAD first, outside the lock (it shares nothing): audio without
  // speech never waits for or loads Whisper. It runs over a minute of audio
  // at a time, so that a client that leaves stops it.
  audio::TranscribeOptions options = o;
  std::vector<audio::SpeechSpan> speech;
  if (o.vad) {
    constexpr size_t kStep = size_t(1) << 20;  // 65 s
    audio::VadState state;
    for (size_t end = 0; end < samples.size();) {
      if (hooks.cancelled && hooks.cancelled()) throw audio::Cancelled();
      end = std::min(samples.size(), end + kStep);
      o.vad->extend(samples.first(end), state, end == samples.size());
    }
    speech = audio::speech_spans(state.probs, int64_t(samples.size()), o.vad_options);
    if (speech.empty()) return audio::no_speech(samples, o);
    options.speech = &speech;
  }
  audio::Transcript t;
  run([&](WhisperModel& model, const text::WhisperTokenizer& tokenizer, ThreadPool& pool) {
    t = audio::transcribe(model, tokenizer, pool, samples, options, hooks);
  });
  return t;
}

std::optional<Transcription::Place> Transcription::admit() {
  // The running one, and max_queue behind it.
  if (++in_flight_ > options_.max_queue + 1) {
    --in_flight_;
    return std::nullopt;
  }
  return Place(*this);
}

void Transcription::count_request() {
  std::lock_guard state(state_);
  ++requests_;
}

void Transcription::run(const Work& work) {
  std::lock_guard lock(run_);
  load_locked();
  struct Touch {  // the idle clock starts when the work ends, however it ends
    Transcription& t;
    ~Touch() {
      std::lock_guard state(t.state_);
      t.last_used_ = std::chrono::steady_clock::now();
    }
  } touch{*this};
  work(*model_, *tokenizer_, *pool_);
}

bool Transcription::unload() {
  std::lock_guard lock(run_);
  if (!model_ || options_.resident) return false;
  unload_locked();
  return true;
}

// Unloads a model idle for idle_unload_seconds; a busy one is left alone.
void Transcription::idle_watch() {
  const auto idle = std::chrono::duration<double>(options_.idle_unload_seconds);
  std::unique_lock state(state_);
  while (!stopping_) {
    wake_.wait_for(state, std::chrono::milliseconds(250));
    if (stopping_ || !loaded_ || std::chrono::steady_clock::now() - last_used_ < idle) continue;
    state.unlock();
    if (std::unique_lock run(run_, std::try_to_lock); run.owns_lock() && model_) {
      bool still_idle;  // a transcription may have ended since the check
      {
        std::lock_guard again(state_);
        still_idle = std::chrono::steady_clock::now() - last_used_ >= idle;
      }
      if (still_idle) unload_locked();
    }
    state.lock();
  }
}

nlohmann::ordered_json Transcription::status() const {
  std::lock_guard lock(state_);
  return {{"model", model_id()},           {"loaded", loaded_},
          {"resident", options_.resident}, {"loads", loads_},
          {"unloads", unloads_},           {"requests", requests_},
          {"last_load_ms", last_load_ms_}, {"idle_unload_sec", options_.idle_unload_seconds}};
}

}  // namespace hearth::server
