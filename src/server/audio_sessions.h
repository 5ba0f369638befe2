// Dictation sessions (/v1/audio/sessions): audio that arrives in parts
// while it is recorded, transcribed window by window as it comes
// (audio/transcript_stream.h), finished with the body a one-shot
// transcription of the same audio answers. The table holds at most
// max_open unfinished sessions (max_open_per_client from one address) and as
// many finished ones (the least recently
// used forgotten first), and forgets a session idle for idle_seconds: a
// thread sweeps it a few times per idle period, so a quiet server gives
// the memory of abandoned sessions back too.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "audio/transcript_stream.h"
#include "server/audio_budget.h"
#include "server/audio_request.h"

namespace hearth::server {

struct AudioSessionLimits {
  int max_open = 64;             // unfinished at once; past it 429
  int max_open_per_client = 16;  // unfinished at once from one client address; past it 429
  double idle_seconds = 600;  // untouched this long: forgotten (finished or not)
  double max_seconds = 3600;  // of audio per session; past it 413
};

struct AudioSession {
  std::mutex lock;  // held for a part's or the finish's whole work
  // Requests holding it (AudioSessions::find), and when the last let go: a
  // session is idle from then, never while a request works or waits on it.
  std::atomic<int> users{0};
  std::atomic<std::chrono::steady_clock::rep> released{0};
  std::string id;
  std::string client;                            // the address that opened it
  AudioRequest request;                          // options and response_format
  std::optional<audio::TranscriptStream> stream;  // emptied when finished
  AudioBudget::Charge audio;                     // the stream's samples, given back when finished
  std::atomic<bool> done{false};                  // finished: read without the lock
  bool finished() const { return done; }
};

class AudioSessions {
 public:
  explicit AudioSessions(AudioSessionLimits limits);
  ~AudioSessions();
  AudioSessions(const AudioSessions&) = delete;
  AudioSessions& operator=(const AudioSessions&) = delete;

  const AudioSessionLimits& limits() const { return limits_; }
  // Throws ApiError 429 when max_open are open, or max_open_per_client from
  // this client.
  std::shared_ptr<AudioSession> add(AudioRequest request, audio::TranscriptStream stream,
                                    const std::string& client);
  // ApiError 404 if unknown. The session is in use while the handle lives.
  std::shared_ptr<AudioSession> find(const std::string& id);
  bool remove(const std::string& id);
  int open() const;  // unfinished

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::shared_ptr<AudioSession> session;
    Clock::time_point last_used;
  };
  // These with mutex_ held.
  void forget_idle() const;
  int open_locked(const std::string* client = nullptr) const;  // all, or from one client
  void forget_finished_past(size_t keep);  // the least recently used first

  void sweep();  // the thread: forget_idle() a few times per idle period

  AudioSessionLimits limits_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, Entry> sessions_;  // forgetting idle ones is not a change
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread sweeper_;
};

}  // namespace hearth::server
