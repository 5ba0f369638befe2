// Transcribing a whole clip as openai-whisper's transcribe() does it
// (whisper/transcribe.py): log-mel of the clip plus 30 s of padding, 30 s
// windows advanced by the last timestamp the model gives, the temperature
// fallback on compression-ratio and log-probability thresholds, the
// no-speech skip, the previous text as the next window's prompt, and
// segments cut at timestamp pairs; optionally words with their times.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "audio/audio_error.h"
#include "audio/vad.h"
#include "audio/whisper_decoding.h"

namespace hearth::audio {

struct TranscribeOptions {
  std::string task = "transcribe";
  std::string language;  // empty: detected on the first window
  std::vector<float> temperatures = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
  int beam_size = 0;      // > 1: beam search at temperature 0
  float patience = 1.0f;  // beam search's patience
  int best_of = 0;        // > 1: candidates sampled per window above temperature 0
  int sample_len = 0;     // tokens sampled per window at most; 0: half the text context (224)
  std::optional<float> compression_ratio_threshold = 2.4f;
  std::optional<float> logprob_threshold = -1.0f;
  std::optional<float> no_speech_threshold = 0.6f;
  bool condition_on_previous_text = true;
  std::string initial_prompt;
  // Terms to spell as given (names, jargon): added after the prompt, whole
  // terms only, while the conditioning text fits the decoder's prompt
  // budget (half the text context, less one: 223 tokens).
  std::vector<std::string> vocabulary;
  std::string suppress_tokens = "-1";
  bool suppress_blank = true;
  bool without_timestamps = false;
  bool word_timestamps = false;  // words with times (word_timestamps.h)
  // Voice activity detection first: no speech gives an empty transcript
  // without running Whisper; vad_trim transcribes only from the first
  // speech to the last (0.5 s around them), times staying the clip's.
  const SileroVad* vad = nullptr;
  VadOptions vad_options;
  bool vad_trim = false;
  const std::vector<SpeechSpan>* speech = nullptr;  // the VAD's spans, if the caller ran it already
  uint64_t seed = 0;                                // for sampled fallbacks
};

struct Word {
  std::string word;  // with its leading space, as the model spelled it
  double start = 0, end = 0;
  float probability = 0;  // mean of its tokens' probabilities
};

struct Segment {
  int id = 0;
  int64_t seek = 0;  // mel frame where its window started
  double start = 0, end = 0;
  std::string text;
  std::vector<int32_t> tokens;
  float temperature = 0, avg_logprob = 0, compression_ratio = 0, no_speech_prob = 0;
  std::vector<Word> words;  // with TranscribeOptions::word_timestamps
};

// Where a transcription's time went (`hearth transcribe --timings`).
struct TranscribeTimings {
  int windows = 0;        // encoder runs
  double encoder_ms = 0;  // the encoder and each window's cross-attention keys and values
  int decodes = 0;        // window decodes, temperature fallbacks included
  int64_t tokens = 0;     // tokens those decodes kept (end tokens not counted)
  double decoder_ms = 0;  // the decodes: prompt, steps, logit filters and sampling
};

// Which vocabulary terms made it into the prompt.
struct VocabularyUsage {
  size_t terms = 0, used = 0;         // given, and fitted in
  size_t prompt_tokens = 0;           // the conditioning text with them, in tokens
  std::vector<std::string> dropped;   // past the budget
};

struct Transcript {
  std::string text;
  std::string language;
  TranscribeTimings timings;
  double duration = 0;  // seconds of audio
  std::vector<Segment> segments;
  std::optional<std::vector<SpeechSpan>> speech;  // what the VAD found, when it ran
  std::optional<VocabularyUsage> vocabulary;       // with TranscribeOptions::vocabulary
};

struct TranscribeHooks {
  StepObserver first_window_steps;  // raw logits per step of the first window's first decode
  std::function<void(const Segment&)> on_segment;                // as each is final
  std::function<void(int64_t done, int64_t total)> on_progress;  // in mel frames
  std::function<bool()> cancelled;                               // checked between windows
};

// openai-whisper's transcribe() loop between two windows: where the next
// window starts, the text so far (the next window's prompt), and the
// segments.
struct TranscriptState {
  int64_t seek = 0;  // mel frame where the next window starts
  std::vector<int32_t> all_tokens;
  size_t initial_prompt_tokens = 0, prompt_reset_since = 0;
  std::mt19937_64 rng;
  bool first_window = true;
  double last_speech_timestamp = 0;
  Transcript transcript;  // language (empty until detected), segments, timings

  // The state as it is, to go back to after a failed or redone window. A
  // window only appends to the tokens and segments, so a mark keeps their
  // counts, not copies: a streaming session marks every window, and copies
  // would grow with the square of its length.
  struct Mark {
    int64_t seek = 0;
    size_t tokens = 0, segments = 0, prompt_reset_since = 0;
    std::mt19937_64 rng;
    bool first_window = true;
    double last_speech_timestamp = 0;
    std::string language;
    TranscribeTimings timings;
  };
  Mark mark() const;
  void rewind(const Mark& m);
};

// The state before the first window: options checked (std::invalid_argument),
// the language set unless it is to be detected, the prompt and vocabulary
// tokenized.
TranscriptState begin_transcript(const text::WhisperTokenizer& tokenizer,
                                 const WhisperConfig& config, const TranscribeOptions& options);

// A window is the log-mel ([n_mels][mel_frames] row-major, scaled) from
// state.seek on; `size` frames of it are audio, the rest zeros.
// detect_language sets the language from the window at frame 0 (all of it,
// padding included, as openai-whisper does).
void detect_language(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                     ThreadPool& pool, TranscriptState& state, std::span<const float> window);

// Decodes the window at state.seek (with the fallback), adds its segments
// and moves state.seek on. content_frames: the clip's length in frames, for
// hooks.on_progress.
void transcribe_window(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                       ThreadPool& pool, const TranscribeOptions& options,
                       const TranscribeHooks& hooks, TranscriptState& state,
                       std::span<const float> window, int64_t size, int64_t content_frames);

// The transcript, its text joined, once every window is done.
Transcript end_transcript(TranscriptState state, const text::WhisperTokenizer& tokenizer,
                          int64_t content_frames);

// What transcribe() answers for audio where the VAD found no speech.
Transcript no_speech(std::span<const float> audio, const TranscribeOptions& options);

// audio: 16 kHz mono samples. Throws std::invalid_argument for bad options.
Transcript transcribe(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                      ThreadPool& pool, std::span<const float> audio,
                      const TranscribeOptions& options, const TranscribeHooks& hooks = {});

// The same from a log-mel spectrogram ([n_mels][frames] row-major) whose
// first content_frames frames are the clip (the rest is padding).
Transcript transcribe_mel(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                          ThreadPool& pool, std::span<const float> mel, int64_t frames,
                          int64_t content_frames, const TranscribeOptions& options,
                          const TranscribeHooks& hooks = {});

}  // namespace hearth::audio
