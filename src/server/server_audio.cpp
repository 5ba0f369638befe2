// OpenAI's audio routes: /v1/audio/transcriptions and /v1/audio/translations
// on the Whisper model served beside the chat model (server/transcription.h),
// and POST /admin/transcription/unload.
#include <chrono>

#include "audio/audio_error.h"
#include "audio/decode.h"
#include "audio/subtitles.h"
#include "core/elapsed.h"
#include "core/read_file.h"
#include "server/audio_request.h"
#include "server/server_impl.h"

namespace hearth::server {

namespace {

constexpr size_t kMinSamples = audio::kSampleRate / 10;  // 0.1 s

std::string sse(const ojson& event) {
  return "data: " + dump(event) + "\n\n";
}

ojson segment_json(const audio::Segment& s) {
  return {{"id", s.id}, {"start", s.start}, {"end", s.end}};
}

}  // namespace

Transcription& Server::Impl::require_transcription() const {
  if (!transcription)
    throw ApiError(503,
                   "this server has no speech-to-text model: start it with --whisper-model DIR (a "
                   "Whisper checkpoint in the Hugging Face layout)",
                   "server_error", {}, "model_unavailable");
  return *transcription;
}

Transcription::Place Server::Impl::transcription_place() {
  std::optional<Transcription::Place> place = require_transcription().admit();
  if (!place) {
    ++metrics.rejected_queue_full;
    throw ApiError(429,
                   "the transcription queue is full (" + std::to_string(transcription->max_queue()) +
                       " waiting); retry later",
                   "resource_admission", {}, "queue_full");
  }
  return std::move(*place);
}

void Server::Impl::check_audio_bytes(size_t bytes, const char* param) const {
  if (bytes > opt.max_audio_bytes)
    throw ApiError(413,
                   "the audio is " + std::to_string(bytes) + " bytes; the limit is " +
                       std::to_string(opt.max_audio_bytes) + " (--max-audio-bytes)",
                   "invalid_request_error", param, "request_too_large");
}

TranscriptAnswer Server::Impl::transcript_answer(const audio::Transcript& t, const AudioRequest& r,
                                                 ojson timings) const {
  TranscriptAnswer a;
  if (r.response_format != "json" && r.response_format != "verbose_json") {
    a.text = audio::format_transcript(t, r.response_format, r.options.task);
    return a;
  }
  a.json = audio::transcript_json(t, r.response_format == "verbose_json", r.options.task,
                                  r.options.word_timestamps);
  a.json["hearth"] = {{"model", transcription->model_id()},
                      {"language", t.language},
                      {"duration", t.duration},
                      {"timings", std::move(timings)}};
  if (t.speech) a.json["hearth"]["speech"] = audio::speech_json(*t.speech);
  if (t.vocabulary) a.json["hearth"]["vocabulary"] = audio::vocabulary_json(*t.vocabulary);
  return a;
}

void Server::Impl::send_transcript(http::Response& res, const TranscriptAnswer& a) const {
  if (a.json.is_null())
    res.set_content(a.text.body, a.text.content_type);
  else
    res.set_content(dump(a.json), "application/json");
}

std::vector<float> Server::Impl::decode_upload(const http::Request& req, const std::string& bytes,
                                               double max_seconds, const char* limit_flag,
                                               AudioBudget::Charge& held, size_t with,
                                               const std::string& param,
                                               const std::function<ApiError(const std::string&)>& too_long) {
  try {
    return audio::decode_audio(
        as_bytes(bytes), max_seconds, [client = req.client] { return client->gone(); },
        [&](size_t n) { audio_budget.grow_to(held, n, param, with); });
  } catch (const audio::Cancelled&) {
    throw client_closed();
  } catch (const audio::TooManyInputSamples& e) {  // the upload's own rate and channels
    throw ApiError(413, std::string(e.what()) + " (" + limit_flag + ")", "invalid_request_error", param,
                   "request_too_large");
  } catch (const audio::AudioTooLong& e) {
    throw too_long(e.what());
  } catch (const audio::AudioError& e) {
    throw bad_request(param, std::string("the audio could not be decoded: ") + e.what(), "invalid_audio");
  }
}

void Server::Impl::audio_transcribe(const http::Request& req, http::Response& res, bool translate) {
  require_transcription();
  const auto t0 = Clock::now();
  AudioRequest r = parse_audio_request(req, translate);
  auto place = std::make_shared<Transcription::Place>(transcription_place());  // a streamed answer keeps it
  if (r.vad && !vad)
    throw bad_request("vad",
                      "this server has no VAD model: start it with --vad-model FILE "
                      "(silero-v6.2.0-ggml.bin)");
  if (r.vad) r.options.vad = vad.get();
  check_audio_bytes(r.audio.size(), "file");
  // Charged to the server's budget for decoded audio as it is decoded, and
  // held as long as the samples are, streamed or not.
  auto held = std::make_shared<AudioBudget::Charge>();
  std::vector<float> samples = decode_upload(req, r.audio, opt.max_audio_seconds, "--max-audio-seconds", *held, 0, "file", [](const std::string& why) {
    return ApiError(413, why + " (--max-audio-seconds)", "invalid_request_error", "file", "request_too_large");
  });
  std::string().swap(r.audio);  // its memory too, while the transcription waits
  if (samples.size() < kMinSamples)
    throw bad_request("file", "the audio is shorter than 0.1 s", "audio_too_short");
  const double decode_ms = ms_since(t0);

  auto run = [this, client = req.client, t0, decode_ms](const std::vector<float>& samples,
                                                        const AudioRequest& r,
                                                        audio::TranscribeHooks hooks) {
    hooks.cancelled = [client] { return client->gone(); };
    const auto t1 = Clock::now();
    audio::Transcript t;
    try {
      t = transcription->transcribe(samples, r.options, hooks);
    } catch (const audio::Cancelled&) {
      throw client_closed();
    } catch (const std::invalid_argument& e) {
      throw ApiError(400, e.what());
    }
    const auto now = Clock::now();
    return transcript_answer(
        t, r,
        {{"decode_ms", decode_ms},
         {"transcribe_ms", std::chrono::duration<double, std::milli>(now - t1).count()},
         {"total_ms", std::chrono::duration<double, std::milli>(now - t0).count()}});
  };

  if (!r.stream) {
    send_transcript(res, run(samples, r, {}));
    return;
  }
  // Streamed: a delta per final segment, progress per window, then the whole body.
  res.set_header("Cache-Control", "no-cache");
  res.set_stream("text/event-stream", [this, run, place, held, samples = std::move(samples),
                                       r = std::move(r)](http::StreamSink& sink) {
    audio::TranscribeHooks hooks;
    hooks.on_segment = [&](const audio::Segment& s) {
      sink.write(sse(
          {{"type", "transcript.text.delta"}, {"delta", s.text}, {"segment", segment_json(s)}}));
    };
    hooks.on_progress = [&](int64_t done, int64_t total) {
      sink.write(sse({{"type", "transcript.progress"}, {"done", done}, {"total", total}}));
    };
    try {
      const TranscriptAnswer a = run(samples, r, hooks);
      ojson done = {{"type", "transcript.text.done"}};
      if (a.json.is_null()) {
        done["text"] = a.text.body;
      } else {
        done["text"] = a.json["text"];
        done["response"] = a.json;
      }
      sink.write(sse(done));
    } catch (const ApiError& e) {
      sink.write(sse(e.body()));
    } catch (const std::exception& e) {
      sink.write(
          sse(ApiError(500, std::string("internal error: ") + e.what(), "server_error").body()));
    }
    sink.write("data: [DONE]\n\n");
  });
}

}  // namespace hearth::server
