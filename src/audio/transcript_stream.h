// Transcribing audio while it is still being recorded (a dictation session):
// samples arrive in parts, each 30 s window is transcribed as soon as all of
// its log-mel frames are final, and finish() transcribes the rest. The
// result is the transcript transcribe() gives for all of the audio at once.
//
// Two things in that transcript depend on audio not yet heard: the log-mel
// clamp (8 below the clip's loudest frame) and, with a VAD, whether the
// clip has speech. A window is transcribed early with the loudest frame so
// far; finish() checks, window by window, whether the final clamp changes
// any of its values, and if so goes back to the state before that window
// and transcribes again from there. With a VAD, windows wait until it has
// heard speech; finish() then runs the gate on the whole clip.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "audio/transcriber.h"
#include "audio/vad.h"

namespace hearth::audio {

class TranscriptStream {
 public:
  // Checks the options as begin_transcript does (std::invalid_argument);
  // options.vad_trim is not supported here.
  TranscriptStream(const WhisperConfig& config, const text::WhisperTokenizer& tokenizer,
                   TranscribeOptions options);

  // 16 kHz mono samples, in order. Cheap: the log-mel of what is final, and
  // the VAD in 8 s blocks.
  void append(std::span<const float> samples);

  // Transcribes every window whose frames are final (once the VAD, if any,
  // has heard speech). hooks.on_segment sees each new segment.
  void advance(WhisperModel& model, const text::WhisperTokenizer& tokenizer, ThreadPool& pool,
               const TranscribeHooks& hooks = {});

  // The rest of the audio, and the transcript of all of it. No audio may
  // follow, even when it throws (hooks.cancelled).
  Transcript finish(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                    ThreadPool& pool, const TranscribeHooks& hooks = {});

  size_t samples() const { return audio_.size(); }
  const std::vector<Segment>& segments() const { return state_.transcript.segments; }
  // What the VAD has found so far (nullopt without one).
  std::optional<std::vector<SpeechSpan>> speech() const;
  const std::optional<VocabularyUsage>& vocabulary() const { return state_.transcript.vocabulary; }
  int64_t windows_transcribed() const { return int64_t(early_.size()); }
  int64_t windows_redone() const { return redone_; }

 private:
  // The window from frame `seek`, `size` frames of it audio, scaled with `top`.
  std::vector<float> window(int64_t seek, int64_t size, float top) const;
  void add_frames(int64_t end, int64_t length);  // raw log-mel up to frame `end`

  int n_mels_, window_frames_;
  TranscribeOptions options_;
  std::vector<float> audio_;
  std::vector<float> raw_;  // log10 mel, [frame][mel]: every frame computed so far
  int64_t frames_ = 0;      // how many
  float top_ = -std::numeric_limits<float>::infinity();  // the largest of them
  TranscriptState state_;

  // A window transcribed before the clip's end: the state before it, and
  // whether the final clamp can change it.
  struct EarlyWindow {
    TranscriptState::Mark before;
    int64_t seek = 0;
    float top = 0, low = 0;  // the loudest frame when it ran; its own quietest value
  };
  std::vector<EarlyWindow> early_;
  int64_t redone_ = 0;

  VadState vad_;
  bool heard_speech_ = false;
  bool finishing_ = false;
};

}  // namespace hearth::audio
