#include "server/audio_sessions.h"

#include <algorithm>
#include <vector>

#include "server/api_error.h"
#include "server/random_id.h"

namespace hearth::server {

AudioSessions::AudioSessions(AudioSessionLimits limits) : limits_(limits), sweeper_([this] { sweep(); }) {}

AudioSessions::~AudioSessions() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  sweeper_.join();
}

void AudioSessions::sweep() {
  const auto period = std::chrono::duration<double>(std::clamp(limits_.idle_seconds / 4, 0.05, 30.0));
  std::unique_lock lock(mutex_);
  while (!stop_.wait_for(lock, period, [this] { return stopping_; })) forget_idle();
}

void AudioSessions::forget_idle() const {
  const auto now = Clock::now();
  const auto idle = std::chrono::duration<double>(limits_.idle_seconds);
  std::erase_if(sessions_, [&](const auto& kv) {
    const AudioSession& s = *kv.second.session;
    if (s.users > 0) return false;
    const Clock::time_point released{Clock::duration(s.released.load())};
    return now - std::max(kv.second.last_used, released) > idle;
  });
}

int AudioSessions::open_locked(const std::string* client) const {
  int n = 0;
  for (const auto& [id, e] : sessions_)
    n += !e.session->finished() && (!client || e.session->client == *client);
  return n;
}

void AudioSessions::forget_finished_past(size_t keep) {
  std::vector<std::map<std::string, Entry>::iterator> finished;
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
    if (it->second.session->finished()) finished.push_back(it);
  if (finished.size() <= keep) return;
  std::ranges::sort(finished, {}, [](const auto& it) { return it->second.last_used; });
  for (size_t i = 0; i < finished.size() - keep; ++i) sessions_.erase(finished[i]);
}

std::shared_ptr<AudioSession> AudioSessions::add(AudioRequest request, audio::TranscriptStream stream,
                                                 const std::string& client) {
  auto session = std::make_shared<AudioSession>();
  session->id = random_id("sess_");
  session->client = client;
  session->request = std::move(request);
  session->stream.emplace(std::move(stream));
  std::lock_guard lock(mutex_);
  forget_idle();
  // Finished sessions only answer 409s until they idle out; any number of
  // them would be a table without bound.
  forget_finished_past(size_t(limits_.max_open));
  const int open = open_locked();
  if (open >= limits_.max_open)
    throw ApiError(429,
                   std::to_string(open) + " audio sessions are open, the most this server keeps "
                   "(--max-audio-sessions): finish or delete one first",
                   "rate_limit_error", {}, "too_many_sessions");
  if (const int mine = open_locked(&client); mine >= limits_.max_open_per_client)
    throw ApiError(429,
                   std::to_string(mine) + " audio sessions from this client are open, the most this server keeps "
                   "for one (--max-audio-sessions-per-client): finish or delete one first",
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
  std::shared_ptr<AudioSession> session = it->second.session;
  ++session->users;
  return std::shared_ptr<AudioSession>(session.get(), [session](AudioSession* s) {
    s->released = Clock::now().time_since_epoch().count();
    --s->users;
  });
}

bool AudioSessions::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  return sessions_.erase(id) > 0;
}

int AudioSessions::open() const {
  std::lock_guard lock(mutex_);
  return open_locked();
}

}  // namespace hearth::server
