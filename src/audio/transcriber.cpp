#include "audio/transcriber.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "audio/decode.h"
#include "audio/mel.h"
#include "audio/word_timestamps.h"
#include "core/elapsed.h"

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

TranscriptState begin_transcript(const text::WhisperTokenizer& tokenizer,
                                 const WhisperConfig& config, const TranscribeOptions& options) {
  if (options.task != "transcribe" && options.task != "translate")
    throw std::invalid_argument("task must be transcribe or translate, not '" + options.task + "'");
  if (options.temperatures.empty())
    throw std::invalid_argument("at least one temperature is needed");
  TranscriptState state;
  state.rng.seed(options.seed);
  Transcript& out = state.transcript;
  out.language = options.language;
  if (!tokenizer.multilingual()) {
    out.language = "en";
  } else if (!out.language.empty()) {
    const int32_t token = tokenizer.language_token(out.language);
    if (token < 0) throw std::invalid_argument("unknown language '" + options.language + "'");
    out.language = tokenizer.language_code(token);  // a name ("english") becomes its code
  }

  std::string prompt;
  if (!blank(options.initial_prompt)) {
    prompt = options.initial_prompt;
    prompt.erase(0, prompt.find_first_not_of(" \t\n\r\f\v"));
    prompt.erase(prompt.find_last_not_of(" \t\n\r\f\v") + 1);
    prompt = " " + prompt;
  }
  if (!options.vocabulary.empty()) {
    // Whole terms after the prompt while the decoder keeps all of it.
    const size_t budget = size_t(config.text_ctx / 2 - 1);
    VocabularyUsage usage;
    usage.terms = options.vocabulary.size();
    std::string with_terms = prompt;
    for (const std::string& term : options.vocabulary) {
      const std::string next = with_terms + (usage.used ? ", " : " ") + term;
      if (!blank(term) && usage.dropped.empty() && tokenizer.encode(next).size() <= budget) {
        with_terms = next;
        ++usage.used;
      } else {
        usage.dropped.push_back(term);  // and every term after it, to keep their order
      }
    }
    prompt = with_terms;
    usage.prompt_tokens = tokenizer.encode(prompt).size();
    out.vocabulary = std::move(usage);
  }
  if (!prompt.empty()) state.all_tokens = tokenizer.encode(prompt);
  state.initial_prompt_tokens = state.all_tokens.size();
  return state;
}

TranscriptState::Mark TranscriptState::mark() const {
  return {.seek = seek,
          .tokens = all_tokens.size(),
          .segments = transcript.segments.size(),
          .prompt_reset_since = prompt_reset_since,
          .rng = rng,
          .first_window = first_window,
          .last_speech_timestamp = last_speech_timestamp,
          .language = transcript.language,
          .timings = transcript.timings};
}

void TranscriptState::rewind(const Mark& m) {
  seek = m.seek;
  all_tokens.resize(m.tokens);
  transcript.segments.resize(m.segments);
  prompt_reset_since = m.prompt_reset_since;
  rng = m.rng;
  first_window = m.first_window;
  last_speech_timestamp = m.last_speech_timestamp;
  transcript.language = m.language;
  transcript.timings = m.timings;
}

namespace {

void encode_window(WhisperModel& model, ThreadPool& pool, TranscriptState& state,
                   std::span<const float> window, WhisperModel::CrossKv& cross) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::vector<float> features;
  model.encode(pool, window.data(), features);
  model.cross_kv(pool, features, cross);
  state.transcript.timings.encoder_ms += ms_since(t0);
  ++state.transcript.timings.windows;
}

void check_window(const WhisperModel& model, std::span<const float> window) {
  const WhisperConfig& c = model.config();
  if (window.size() != size_t(c.n_mels) * size_t(c.mel_frames()))
    throw std::invalid_argument("a log-mel window must be " + std::to_string(c.n_mels) + " x " +
                                std::to_string(c.mel_frames()));
}

}  // namespace

void detect_language(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                     ThreadPool& pool, TranscriptState& state, std::span<const float> window) {
  check_window(model, window);
  WhisperModel::CrossKv cross;
  encode_window(model, pool, state, window, cross);
  state.transcript.language = WindowDecoder(model, tokenizer, pool).detect_language(cross);
}

void transcribe_window(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                       ThreadPool& pool, const TranscribeOptions& options,
                       const TranscribeHooks& hooks, TranscriptState& state,
                       std::span<const float> window, int64_t segment_size,
                       int64_t content_frames) {
  check_window(model, window);
  using Clock = std::chrono::steady_clock;
  Transcript& out = state.transcript;
  TranscribeTimings& timings = out.timings;
  WindowDecoder decoder(model, tokenizer, pool);
  WhisperModel::CrossKv cross;
  encode_window(model, pool, state, window, cross);
  const int64_t seek = state.seek;
  const double time_offset = double(seek) * kFrameSeconds;

  DecodingOptions decoding;
  decoding.task = options.task;
  decoding.language = out.language;
  decoding.prompt.assign(state.all_tokens.begin() + ptrdiff_t(state.prompt_reset_since),
                         state.all_tokens.end());
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
    result = decoder.decode(cross, decoding, state.rng,
                            state.first_window && i == 0 ? hooks.first_window_steps : nullptr);
    timings.decoder_ms += ms_since(t0);
    ++timings.decodes;
    timings.tokens += int64_t(result.tokens.size());
    bool fallback = (options.compression_ratio_threshold &&
                     result.compression_ratio > *options.compression_ratio_threshold) ||
                    (options.logprob_threshold && result.avg_logprob < *options.logprob_threshold);
    if (options.no_speech_threshold && options.logprob_threshold &&
        result.no_speech_prob > *options.no_speech_threshold &&
        result.avg_logprob < *options.logprob_threshold)
      fallback = false;  // silence: no temperature will make it speech
    if (!fallback) break;
  }
  state.first_window = false;
  const auto progress = [&] {
    if (hooks.on_progress)
      hooks.on_progress(std::min(state.seek, content_frames), content_frames);
  };

  if (options.no_speech_threshold && result.no_speech_prob > *options.no_speech_threshold &&
      !(options.logprob_threshold && result.avg_logprob > *options.logprob_threshold)) {
    state.seek += segment_size;  // silence: nothing from this window
    progress();
    return;
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
      state.seek += segment_size;
    else
      state.seek += int64_t(tokens[last - 1] - ts) * kInputStride;
  } else {
    double duration = double(segment_size) * kFrameSeconds;
    for (size_t i = n; i-- > 0;)
      if (is_ts(i)) {
        if (tokens[i] != ts) duration = (tokens[i] - ts) * kTimePrecision;
        break;
      }
    add_segment(time_offset, time_offset + duration, tokens);
    state.seek += segment_size;
  }

  if (options.word_timestamps) {
    add_word_timestamps(current, model, tokenizer, pool, cross, out.language, options.task,
                        segment_size, state.last_speech_timestamp);
    // The next window starts after the last word, unless this one was done.
    const std::optional<double> end = speech_end(current);
    if (!single_timestamp_ending && end && *end > time_offset)
      state.seek = int64_t(std::nearbyint(*end * 100));
    if (end) state.last_speech_timestamp = *end;
  }

  for (Segment& s : current) {
    if (s.start == s.end || blank(s.text)) {  // instantaneous or empty: kept, but cleared
      s.text.clear();
      s.tokens.clear();
      s.words.clear();
    }
    s.id = int(out.segments.size());
    state.all_tokens.insert(state.all_tokens.end(), s.tokens.begin(), s.tokens.end());
    if (hooks.on_segment) hooks.on_segment(s);
    out.segments.push_back(std::move(s));
  }
  if (!options.condition_on_previous_text || result.temperature > 0.5f)
    state.prompt_reset_since = state.all_tokens.size();
  progress();
}

Transcript end_transcript(TranscriptState state, const text::WhisperTokenizer& tokenizer,
                          int64_t content_frames) {
  Transcript out = std::move(state.transcript);
  out.duration = double(content_frames) * kFrameSeconds;
  out.text = tokenizer.decode(std::span(state.all_tokens).subspan(state.initial_prompt_tokens));
  return out;
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
  TranscriptState state = begin_transcript(tokenizer, model.config(), options);
  if (state.transcript.language.empty())
    detect_language(model, tokenizer, pool, state,
                    window(mel, n_mels, frames, 0, std::min(window_frames, frames), window_frames));
  while (state.seek < content_frames) {
    if (hooks.cancelled && hooks.cancelled()) throw Cancelled();
    const int64_t size = std::min(window_frames, content_frames - state.seek);
    transcribe_window(model, tokenizer, pool, options, hooks, state,
                      window(mel, n_mels, frames, state.seek, size, window_frames), size,
                      content_frames);
  }
  return end_transcript(std::move(state), tokenizer, content_frames);
}

}  // namespace hearth::audio
