#include "server/audio_sessions.h"

#include "server/api_error.h"
#include "server/random_id.h"

namespace hearth::server {

void AudioSessions::forget_idle() const {
  const auto now = Clock::now();
  const auto idle = std::chrono::duration<double>(limits_.idle_seconds);
  std::erase_if(sessions_, [&](const auto& kv) { return now - kv.second.last_used > idle; });
}

std::shared_ptr<AudioSession> AudioSessions::add(AudioRequest request,
                                                 audio::TranscriptStream stream) {
  auto session = std::make_shared<AudioSession>();
  session->id = random_id("sess_");
  session->request = std::move(request);
  session->stream.emplace(std::move(stream));
  std::lock_guard lock(mutex_);
  forget_idle();
  int open = 0;
  for (const auto& [id, e] : sessions_) open += !e.session->finished();
  if (open >= limits_.max_open)
    throw ApiError(429,
                   std::to_string(open) + " audio sessions are open, the most this server keeps "
                   "(--max-audio-sessions): finish or delete one first",
                   "rate_limit_error", {}, "too_many_sessions");
  sessions_[session->id] = {session, Clock::now()};
  return session;
}

std::shared_ptr<AudioSession> AudioSessions::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  forget_idle();
  auto it = sessions_.find(id);
  if (it == sessions_.end())
    throw ApiError(404, "no audio session '" + id + "' (unknown, deleted, or idle too long)",
                   "invalid_request_error", {}, "session_not_found");
  it->second.last_used = Clock::now();
  return it->second.session;
}

bool AudioSessions::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  return sessions_.erase(id) > 0;
}

int AudioSessions::open() const {
  std::lock_guard lock(mutex_);
  forget_idle();
  int n = 0;
  for (const auto& [id, e] : sessions_) n += !e.session->finished();
  return n;
}

}  // namespace hearth::server
