// Whisper's log-mel spectrogram, computed exactly as openai-whisper's
// whisper/audio.py does (log_mel_spectrogram): a 400-point STFT every 160
// samples of 16 kHz audio (25 ms windows, 10 ms hop), periodic Hann window,
// reflect-padded by 200 on each side (torch.stft center=True), the last frame
// dropped, power spectrum, Slaney mel filterbank, log10 clamped at 1e-10 and
// at 8 below the maximum, scaled by (x + 4) / 4. tests/numerics/test_audio.py
// checks it against an independent NumPy version.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace hearth::audio {

constexpr int kNfft = 400, kHop = 160, kChunkSamples = 480000, kChunkFrames = 3000;
constexpr int kFreqBins = kNfft / 2 + 1;

// librosa.filters.mel(sr=16000, n_fft=400, n_mels=n_mels, htk=False,
// norm='slaney'), the filterbank Whisper ships in mel_filters.npz, computed in
// double and rounded to float: [n_mels][kFreqBins], row-major. Whisper uses 80
// or 128 mels; any count from 1 to 512 is accepted.
std::vector<float> mel_filters(int n_mels);

struct LogMel {
  int n_mels = 0;
  int64_t frames = 0;
  std::vector<float> data;  // [n_mels][frames], row-major
};

// `padding` zero samples are appended first (Whisper's transcribe appends 30 s,
// kChunkSamples). With n = audio.size() + padding there are n / kHop frames.
// Any length works: under kHop samples there are no frames (data is empty);
// where n <= 200, too short for torch's reflect padding, the reflection is
// repeated as numpy.pad(mode='reflect') does. Runs on all cores for long audio.
LogMel log_mel_spectrogram(std::span<const float> audio, int n_mels, int64_t padding = 0);

// The same in parts, for audio that arrives over time (streaming sessions):
// log10 of the mel power, at least 1e-10, of frames [first, first + count)
// of `audio` followed by zeros to `length` samples; frame first + f, mel m
// goes to out[f * frame_stride + m * mel_stride]. A frame's value depends
// only on samples within 200 of its centre (frame * kHop), so frames whose
// samples have all arrived are final.
void log10_mel_frames(std::span<const float> audio, int64_t length, int n_mels, int64_t first,
                      int64_t count, std::span<float> out, int64_t frame_stride,
                      int64_t mel_stride);

// Whisper's clamp and scaling of those values, top being the clip's largest.
inline float scale_log_mel(float v, float top) { return (std::max(v, top - 8.0f) + 4.0f) / 4.0f; }

}  // namespace hearth::audio
