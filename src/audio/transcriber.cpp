#include "audio/transcriber.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "audio/decode.h"
#include "audio/mel.h"
#include "audio/word_timestamps.h"

namespace hearth::audio {

namespace {

constexpr double kFrameSeconds = double(kHop) / 16000.0;         // one mel frame: 10 ms
constexpr int kInputStride = 2;                                  // mel frames per encoder position
constexpr double kTimePrecision = kInputStride * kFrameSeconds;  // one timestamp step: 20 ms

bool blank(const std::string& s) {
  return s.find_first_not_of(" \t\n\r\f\v") == std::string::npos;
}

// The window starting at frame `seek`, `size` frames of it, zero-padded to
// the encoder's input length (openai-whisper's pad_or_trim).
std::vector<float> window(std::span<const float> mel, int n_mels, int64_t frames, int64_t seek,
                          int64_t size, int64_t window_frames) {
  std::vector<float> out(size_t(n_mels * window_frames), 0.0f);
  for (int m = 0; m < n_mels; ++m)
    std::copy_n(mel.begin() + ptrdiff_t(m * frames + seek), size,
                out.begin() + ptrdiff_t(m * window_frames));
  return out;
}

// utils.get_end: the end of the last word, else of the last segment.
std::optional<double> speech_end(std::span<const Segment> segments) {
  for (size_t i = segments.size(); i-- > 0;)
    if (!segments[i].words.empty()) return segments[i].words.back().end;
  if (segments.empty()) return std::nullopt;
  return segments.back().end;
}

}  // namespace

Transcript no_speech(std::span<const float> audio, const TranscribeOptions& options) {
  Transcript silent;
  silent.language = options.language;
  silent.duration = double(audio.size()) / kSampleRate;
  silent.speech.emplace();
  return silent;
}

Transcript transcribe(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                      ThreadPool& pool, std::span<const float> audio,
                      const TranscribeOptions& options, const TranscribeHooks& hooks) {
  std::optional<std::vector<SpeechSpan>> speech;
  if (options.vad) {
    speech = options.speech ? *options.speech : options.vad->speech(audio, options.vad_options);
    if (speech->empty()) return no_speech(audio, options);
    if (options.vad_trim) {
      constexpr double kMargin = 0.5;
      const size_t first = size_t(std::max(0.0, speech->front().start - kMargin) * kSampleRate);
      const size_t last =
          std::min(audio.size(), size_t((speech->back().end + kMargin) * kSampleRate));
      const double offset = double(first) / kSampleRate;  // cut from the front
      const double duration = double(audio.size()) / kSampleRate;
      audio = audio.subspan(first, std::max(last, first + 1) - first);
      Transcript t = transcribe(
          model, tokenizer, pool, audio,
          [&] {
            TranscribeOptions inner = options;
            inner.vad = nullptr;
            inner.speech = nullptr;
            return inner;
          }(),
          hooks);
      for (Segment& s : t.segments) {
        s.start += offset, s.end += offset;
        s.seek += int64_t(std::lround(offset * kSampleRate / kHop));
        for (Word& w : s.words) w.start += offset, w.end += offset;
      }
      t.duration = duration;
      t.speech = std::move(speech);
      return t;
    }
  }
  const int window_samples = model.config().mel_frames() * kHop;
  const LogMel mel = log_mel_spectrogram(audio, model.config().n_mels, window_samples);
  Transcript t = transcribe_mel(model, tokenizer, pool, mel.data, mel.frames,
                                mel.frames - model.config().mel_frames(), options, hooks);
  t.speech = std::move(speech);
  return t;
}

Transcript transcribe_mel(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                          ThreadPool& pool, std::span<const float> mel, int64_t frames,
                          int64_t content_frames, const TranscribeOptions& options,
                          const TranscribeHooks& hooks) {
  const int n_mels = model.config().n_mels;
  const int64_t window_frames = model.config().mel_frames();
  if (int64_t(mel.size()) != n_mels * frames || content_frames < 0 || content_frames > frames)
    throw std::invalid_argument("the log-mel input does not have the model's " +
                                std::to_string(n_mels) + " bins");
  if (options.task != "transcribe" && options.task != "translate")
    throw std::invalid_argument("task must be transcribe or translate, not '" + options.task + "'");
  if (options.temperatures.empty())
    throw std::invalid_argument("at least one temperature is needed");

  Transcript out;
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  WindowDecoder decoder(model, tokenizer, pool);
  WhisperModel::CrossKv cross;
  std::vector<float> features;
  auto encode = [&](int64_t seek, int64_t size) {
    const auto t0 = Clock::now();
    const std::vector<float> w = window(mel, n_mels, frames, seek, size, window_frames);
    model.encode(pool, w.data(), features);
    model.cross_kv(pool, features, cross);
    out.timings.encoder_ms += ms_since(t0);
    ++out.timings.windows;
  };

  out.duration = double(content_frames) * kFrameSeconds;
  out.language = options.language;
  if (!tokenizer.multilingual()) {
    out.language = "en";
  } else if (out.language.empty()) {
    encode(0, std::min(window_frames, frames));
    out.language = decoder.detect_language(cross);
  } else {
    const int32_t token = tokenizer.language_token(out.language);
    if (token < 0) throw std::invalid_argument("unknown language '" + options.language + "'");
    out.language = tokenizer.language_code(token);  // a name ("english") becomes its code
  }

  std::vector<int32_t> all_tokens;
  size_t prompt_reset_since = 0;
  if (!blank(options.initial_prompt)) {
    std::string prompt = options.initial_prompt;
    prompt.erase(0, prompt.find_first_not_of(" \t\n\r\f\v"));
    prompt.erase(prompt.find_last_not_of(" \t\n\r\f\v") + 1);
    all_tokens = tokenizer.encode(" " + prompt);
  }
  const size_t initial_prompt_tokens = all_tokens.size();
  std::mt19937_64 rng(options.seed);
  bool first_window = true;
  double last_speech_timestamp = 0;

  for (int64_t seek = 0; seek < content_frames;) {
    if (hooks.cancelled && hooks.cancelled()) throw Cancelled();
    const double time_offset = double(seek) * kFrameSeconds;
    const int64_t segment_size = std::min(window_frames, content_frames - seek);
    encode(seek, segment_size);

    DecodingOptions decoding;
    decoding.task = options.task;
    decoding.language = out.language;
    decoding.prompt.assign(all_tokens.begin() + ptrdiff_t(prompt_reset_since), all_tokens.end());
    decoding.suppress_tokens = options.suppress_tokens;
    decoding.suppress_blank = options.suppress_blank;
    decoding.without_timestamps = options.without_timestamps;
    decoding.beam_size = options.beam_size;
    decoding.patience = options.patience;
    decoding.best_of = options.best_of;
    decoding.sample_len = options.sample_len;
    DecodingResult result;
    for (size_t i = 0; i < options.temperatures.size(); ++i) {
      decoding.temperature = options.temperatures[i];
      const auto t0 = Clock::now();
      result = decoder.decode(cross, decoding, rng,
                              first_window && i == 0 ? hooks.first_window_steps : nullptr);
      out.timings.decoder_ms += ms_since(t0);
      ++out.timings.decodes;
      out.timings.tokens += int64_t(result.tokens.size());
      bool fallback =
          (options.compression_ratio_threshold &&
           result.compression_ratio > *options.compression_ratio_threshold) ||
          (options.logprob_threshold && result.avg_logprob < *options.logprob_threshold);
      if (options.no_speech_threshold && options.logprob_threshold &&
          result.no_speech_prob > *options.no_speech_threshold &&
          result.avg_logprob < *options.logprob_threshold)
        fallback = false;  // silence: no temperature will make it speech
      if (!fallback) break;
    }
    first_window = false;

    if (options.no_speech_threshold && result.no_speech_prob > *options.no_speech_threshold &&
        !(options.logprob_threshold && result.avg_logprob > *options.logprob_threshold)) {
      seek += segment_size;  // silence: nothing from this window
      if (hooks.on_progress) hooks.on_progress(std::min(seek, content_frames), content_frames);
      continue;
    }

    const int32_t ts = tokenizer.timestamp_begin();
    const std::vector<int32_t>& tokens = result.tokens;
    std::vector<Segment> current;
    auto add_segment = [&](double start, double end, std::span<const int32_t> span) {
      Segment s;
      s.seek = seek;
      s.start = start, s.end = end;
      s.tokens.assign(span.begin(), span.end());
      std::vector<int32_t> text_tokens;
      for (int32_t id : span)
        if (id < tokenizer.eot()) text_tokens.push_back(id);
      s.text = tokenizer.decode(text_tokens);
      s.temperature = result.temperature, s.avg_logprob = result.avg_logprob;
      s.compression_ratio = result.compression_ratio, s.no_speech_prob = result.no_speech_prob;
      current.push_back(std::move(s));
    };
    const size_t n = tokens.size();
    auto is_ts = [&](size_t i) { return tokens[i] >= ts; };
    const bool single_timestamp_ending = n >= 2 && !is_ts(n - 2) && is_ts(n - 1);
    std::vector<size_t> slices;  // where two timestamps in a row close a segment
    for (size_t i = 1; i < n; ++i)
      if (is_ts(i - 1) && is_ts(i)) slices.push_back(i);
    if (!slices.empty()) {
      if (single_timestamp_ending) slices.push_back(n);
      size_t last = 0;
      for (size_t cut : slices) {
        const std::span<const int32_t> part(tokens.data() + last, cut - last);
        add_segment(time_offset + (part.front() - ts) * kTimePrecision,
                    time_offset + (part.back() - ts) * kTimePrecision, part);
        last = cut;
      }
      if (single_timestamp_ending)
        seek += segment_size;
      else
        seek += int64_t(tokens[last - 1] - ts) * kInputStride;
    } else {
      double duration = double(segment_size) * kFrameSeconds;
      for (size_t i = n; i-- > 0;)
        if (is_ts(i)) {
          if (tokens[i] != ts) duration = (tokens[i] - ts) * kTimePrecision;
          break;
        }
      add_segment(time_offset, time_offset + duration, tokens);
      seek += segment_size;
    }

    if (options.word_timestamps) {
      add_word_timestamps(current, model, tokenizer, pool, cross, out.language, options.task,
                          segment_size, last_speech_timestamp);
      // The next window starts after the last word, unless this one was done.
      const std::optional<double> end = speech_end(current);
      if (!single_timestamp_ending && end && *end > time_offset)
        seek = int64_t(std::nearbyint(*end * 100));
      if (end) last_speech_timestamp = *end;
    }

    for (Segment& s : current) {
      if (s.start == s.end || blank(s.text)) {  // instantaneous or empty: kept, but cleared
        s.text.clear();
        s.tokens.clear();
        s.words.clear();
      }
      s.id = int(out.segments.size());
      all_tokens.insert(all_tokens.end(), s.tokens.begin(), s.tokens.end());
      if (hooks.on_segment) hooks.on_segment(s);
      out.segments.push_back(std::move(s));
    }
    if (!options.condition_on_previous_text || result.temperature > 0.5f)
      prompt_reset_since = all_tokens.size();
    if (hooks.on_progress) hooks.on_progress(std::min(seek, content_frames), content_frames);
  }
  out.text = tokenizer.decode(std::span(all_tokens).subspan(initial_prompt_tokens));
  return out;
}

}  // namespace hearth::audio
