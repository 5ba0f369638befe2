// Voice activity detection with Silero VAD v6.2 (16 kHz), the gate in front of
// Whisper: which stretches of an upload hold speech, so silence and noise are
// never transcribed (Whisper hallucinates text on them) and cost no encoder
// passes. The weights are read as whisper.cpp ships them (its ggml container,
// silero-v6.2.0-ggml.bin). The forward is silero's own model run on 512-sample
// windows: the previous window's last 64 samples prepended, a 256-point STFT
// by convolution, four conv+ReLU layers, an LSTM whose state runs across the
// whole clip, ReLU, a 1x1 conv and a sigmoid. The span rules are whisper.cpp's
// whisper_vad_segments_from_probs, which follows silero's
// get_speech_timestamps. tests/numerics/test_vad.py checks the probabilities
// against an independent NumPy forward.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace hearth::audio {

constexpr int kVadWindow = 512;  // samples per probability (32 ms at 16 kHz)
constexpr int kVadContext = 64;  // samples of the previous window the model also sees

struct VadOptions {
  float threshold = 0.5f;    // a window at or above this starts speech
  int min_speech_ms = 250;   // shorter spans are dropped
  int min_silence_ms = 100;  // silence (below threshold - 0.15) this long ends a span
  int speech_pad_ms = 30;    // added on both sides of each span
};

struct SpeechSpan {
  double start = 0, end = 0;  // seconds
};

// The span rules on per-window probabilities (window i covers samples
// [512 i, 512 i + 512)) of audio `samples` long; spans never pass its end.
// As whisper.cpp: a span starts at a window >= threshold, ends where
// probabilities stay below max(threshold - 0.15, 0.01) for min_silence_ms,
// must last more than min_speech_ms; spans less than 200 ms apart are merged,
// then padded by speech_pad_ms (half the gap each where the gap is smaller
// than twice that). No maximum span length.
std::vector<SpeechSpan> speech_spans(std::span<const float> probs, int64_t samples,
                                     const VadOptions& options);

// The LSTM's state and the probabilities so far of audio that arrives in
// parts (SileroVad::extend).
struct VadState {
  std::vector<float> probs;
  std::vector<float> h, c;
  int64_t windows_done = 0;
};

class SileroVad {
 public:
  // Reads and checks a Silero VAD ggml file; throws std::runtime_error naming
  // the file and what is wrong with it.
  static std::unique_ptr<SileroVad> load(const std::filesystem::path& file);

  // Speech probability of each 512-sample window of 16 kHz mono audio (the
  // last one zero-padded), the LSTM state carried from the first to the last.
  // Thread-safe: the state lives in the call.
  std::vector<float> probabilities(std::span<const float> samples16k) const;

  // The same for audio that arrives in parts: samples16k is all of it so
  // far; probabilities are added in blocks of 256 windows (8.2 s), and to
  // its end when final. The result equals probabilities() of the whole.
  void extend(std::span<const float> samples16k, VadState& state, bool final) const;

  std::vector<SpeechSpan> speech(std::span<const float> samples16k,
                                 const VadOptions& options) const {
    return speech_spans(probabilities(samples16k), int64_t(samples16k.size()), options);
  }

 private:
  SileroVad() = default;

  struct Conv {  // Conv1d, kernel 3, padding 1
    int in = 0, out = 0, stride = 1;
    std::vector<float> weight;  // [out][in][3]
    std::vector<float> bias;    // [out]
  };

  std::vector<float> stft_basis_;  // [258][256]: 129 real rows, then 129 imaginary
  Conv encoder_[4];
  std::vector<float> lstm_ih_, lstm_hh_;  // [512][128], gates i, f, g, o
  std::vector<float> lstm_bias_;          // [512]: bias_ih + bias_hh
  std::vector<float> out_weight_;         // [128]
  float out_bias_ = 0;
};

}  // namespace hearth::audio
