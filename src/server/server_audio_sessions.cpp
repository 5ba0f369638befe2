// Dictation sessions: POST /v1/audio/sessions opens one, POST
// /v1/audio/sessions/{id}/audio adds audio (each complete 30 s window is
// transcribed before the answer), POST .../finish answers what
// /v1/audio/transcriptions answers for all of it, DELETE forgets it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "audio/audio_error.h"
#include "audio/decode.h"
#include "core/elapsed.h"
#include "core/seconds_text.h"
#include "server/server_impl.h"

namespace hearth::server {

namespace {

ojson segments_json(const std::vector<audio::Segment>& segments) {
  ojson out = ojson::array();
  for (const audio::Segment& s : segments)
    out.push_back({{"id", s.id}, {"start", s.start}, {"end", s.end}, {"text", s.text}});
  return out;
}

ApiError session_full(const AudioSessionLimits& limits) {
  return ApiError(413,
                  "a session holds at most " + seconds_text(limits.max_seconds) +
                      " of audio (--audio-session-max-seconds); finish this one and start "
                      "another",
                  "invalid_request_error", "audio", "request_too_large");
}

ApiError part_too_long(double max_part_seconds) {
  return ApiError(413,
                  "one part holds at most " + seconds_text(max_part_seconds) +
                      " of audio (--max-audio-seconds); send it in shorter parts",
                  "invalid_request_error", "audio", "request_too_large");
}

// A part of the audio: raw float32 (audio/pcm;rate=16000) or any container.
// Only checked here: the raw part's length and samples, a container's type.
std::optional<std::vector<float>> raw_part(const http::Request& req, double max_part_seconds) {
  const std::string content_type = req.header("Content-Type");
  const std::string type = http::media_type(content_type);
  if (type != "audio/pcm") {
    if (!type.starts_with("audio/") && !type.starts_with("video/") && type != "application/octet-stream")
      throw ApiError(415,
                     "unsupported content type '" + content_type +
                         "': send audio/pcm;rate=16000 (float32) or an audio file",
                     "invalid_request_error", {}, "unsupported_media_type");
    return std::nullopt;
  }
  std::optional<std::string> rate;
  try {
    rate = http::header_parameter(content_type, "rate");
  } catch (const std::invalid_argument&) {
  }
  if (rate != "16000")
    throw bad_request("audio",
                      "raw audio must be 16 kHz mono little-endian float32, declared as "
                      "'audio/pcm;rate=16000'; send other rates in a container (WAV...)");
  if (req.body.size() % 4) throw bad_request("audio", "raw float32 audio must be a whole number of 4-byte samples");
  std::vector<float> samples(req.body.size() / 4);
  if (!samples.empty()) std::memcpy(samples.data(), req.body.data(), req.body.size());
  if constexpr (std::endian::native == std::endian::big)
    for (float& f : samples) f = std::bit_cast<float>(__builtin_bswap32(std::bit_cast<uint32_t>(f)));
  if (double(samples.size()) / audio::kSampleRate > max_part_seconds) throw part_too_long(max_part_seconds);
  for (float f : samples)
    if (!std::isfinite(f)) throw bad_request("audio", "the samples must be finite numbers");
  audio::clip_to_full_scale(samples);
  return samples;
}

// The session's part of the path; the router matched [^/]+ there.
std::string session_id(const http::Request& req) { return req.matches[1]; }

ojson session_progress(const AudioSession& s) {
  const audio::TranscriptStream& t = *s.stream;
  const auto speech = t.speech();
  return {{"id", s.id},
          {"object", "audio.session"},
          {"samples", t.samples()},
          {"duration", double(t.samples()) / audio::kSampleRate},
          {"speech", speech ? audio::speech_json(*speech) : ojson()},
          {"windows", t.windows_transcribed()},
          {"segments", segments_json(t.segments())}};
}

}  // namespace

ojson Server::Impl::transcription_status() const {
  ojson out = transcription->status();
  out["audio_sessions"] = audio_sessions.open();
  out["audio_held_seconds"] = audio_budget.held_seconds();
  out["max_audio_held_seconds"] = audio_budget.max_seconds();
  return out;
}

void Server::Impl::audio_session_create(const http::Request& req, http::Response& res) {
  Transcription& whisper = require_transcription();
  AudioRequest r = parse_audio_session_request(req);
  const Transcription::Place place = transcription_place();
  if (r.vad && !vad)
    throw bad_request("vad",
                      "this server has no VAD model: start it with --vad-model FILE "
                      "(silero-v6.2.0-ggml.bin)");
  if (r.vad) r.options.vad = vad.get();
  std::optional<audio::TranscriptStream> stream;
  try {
    whisper.run([&](WhisperModel& model, const text::WhisperTokenizer& tokenizer, ThreadPool&) {
      stream.emplace(model.config(), tokenizer, r.options);
    });
  } catch (const std::invalid_argument& e) {
    throw ApiError(400, e.what());
  }
  std::optional<audio::VocabularyUsage> vocabulary = stream->vocabulary();
  const auto session = audio_sessions.add(std::move(r), std::move(*stream), req.client_key);
  ojson out = {{"id", session->id},
               {"object", "audio.session"},
               {"model", whisper.model_id()},
               {"vocabulary", ojson()}};
  if (vocabulary) out["vocabulary"] = audio::vocabulary_json(*vocabulary);
  res.set_content(dump(out), "application/json");
}

void Server::Impl::audio_session_append(const http::Request& req, http::Response& res) {
  Transcription& whisper = require_transcription();
  const auto session = audio_sessions.find(session_id(req));
  const Transcription::Place place = transcription_place();
  check_audio_bytes(req.body.size(), "audio");
  auto unfinished = [&] {
    if (session->finished())
      throw ApiError(409, "the audio session '" + session->id + "' is finished",
                     "invalid_request_error", {}, "session_finished");
    return session->stream->samples();
  };
  // Decoded no further than what the session has room for (a second more,
  // so a part just past it gets the 413 below). The part's charge counts
  // what the session holds (past the whole budget with it: a 413), and
  // becomes the session's once its samples are.
  double room;
  size_t session_held;
  {
    std::lock_guard lock(session->lock);
    room = std::max(0.0, audio_sessions.limits().max_seconds - double(unfinished()) / audio::kSampleRate) + 1.0;
    session_held = session->audio.samples();
  }
  AudioBudget::Charge part;
  std::vector<float> samples;
  if (auto raw = raw_part(req, opt.max_audio_seconds)) {
    samples = std::move(*raw);
    audio_budget.add(part, samples.size(), "audio", session_held);
  } else if (!req.body.empty()) {  // empty: nothing new, the answer says where the session is
    const bool session_limits = room < opt.max_audio_seconds;
    samples = decode_upload(req, req.body, std::min(room, opt.max_audio_seconds),
                            session_limits ? "--audio-session-max-seconds" : "--max-audio-seconds", part,
                            session_held, "audio", [&](const std::string&) {
                              return session_limits ? session_full(audio_sessions.limits())
                                                    : part_too_long(opt.max_audio_seconds);
                            });
  }
  std::lock_guard lock(session->lock);
  unfinished();
  audio::TranscriptStream& stream = *session->stream;
  const double seconds = double(stream.samples() + samples.size()) / audio::kSampleRate;
  if (seconds > audio_sessions.limits().max_seconds) throw session_full(audio_sessions.limits());
  stream.append(samples);
  session->audio.absorb(std::move(part));
  // A client that leaves stops the windows still to do; those done are kept,
  // and the rest wait for the next part or the finish.
  audio::TranscribeHooks hooks;
  hooks.cancelled = [client = req.client] { return client->gone(); };
  try {
    whisper.run([&](WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                    ThreadPool& pool) { stream.advance(model, tokenizer, pool, hooks); });
  } catch (const audio::Cancelled&) {
    throw client_closed();
  }
  res.set_content(dump(session_progress(*session)), "application/json");
}

void Server::Impl::audio_session_finish(const http::Request& req, http::Response& res) {
  Transcription& whisper = require_transcription();
  const auto session = audio_sessions.find(session_id(req));
  const Transcription::Place place = transcription_place();
  std::lock_guard lock(session->lock);
  if (session->finished())
    throw ApiError(409, "the audio session '" + session->id + "' is already finished",
                   "invalid_request_error", {}, "session_finished");
  audio::TranscriptStream& stream = *session->stream;
  if (stream.samples() < audio::kSampleRate / 10)
    throw bad_request("audio", "the session has less than 0.1 s of audio", "audio_too_short");
  const auto t0 = Clock::now();
  audio::TranscribeHooks hooks;
  hooks.cancelled = [client = req.client] { return client->gone(); };
  audio::Transcript t;
  ojson windows;
  struct Consumed {  // finishing uses the stream up, whether or not it succeeds
    AudioSession& s;
    ~Consumed() {
      s.stream.reset();
      s.audio.reset();
      s.done = true;
    }
  } consumed{*session};
  try {
    whisper.run([&](WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                    ThreadPool& pool) { t = stream.finish(model, tokenizer, pool, hooks); });
  } catch (const audio::Cancelled&) {
    throw client_closed();
  }
  whisper.count_request();
  windows = {{"early", stream.windows_transcribed()}, {"redone", stream.windows_redone()}};
  TranscriptAnswer a = transcript_answer(t, session->request, {{"finish_ms", ms_since(t0)}});
  if (!a.json.is_null()) a.json["hearth"]["session"] = {{"id", session->id}, {"windows", windows}};
  send_transcript(res, a);
}

void Server::Impl::audio_session_delete(const http::Request& req, http::Response& res) {
  require_transcription();
  const std::string id = session_id(req);
  if (!audio_sessions.remove(id))
    throw ApiError(404, "no audio session '" + id + "' (unknown, deleted, or idle too long)",
                   "invalid_request_error", {}, "session_not_found");
  res.status = 204;
}

}  // namespace hearth::server
