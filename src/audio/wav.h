// An exact RIFF/WAVE reader for uncompressed PCM: 8-bit unsigned, 16/24/32-bit
// signed integer and 32/64-bit float samples, in WAVE_FORMAT_PCM,
// WAVE_FORMAT_IEEE_FLOAT or WAVE_FORMAT_EXTENSIBLE files. WAV is what most
// speech clients send, so it gets its own bit-exact path rather than going
// through FFmpeg: 16-bit samples come out as exactly s / 32768, as Whisper's
// reference code reads them. Every length in the file is checked against the
// bytes actually there; malformed input throws AudioError, and compressed
// samples (mu-law, A-law, ADPCM) CompressedWav, for decode_audio to hand to
// FFmpeg.
#pragma once

#include <cstdint>
#include <cstddef>
#include <span>

namespace hearth::audio {

// A WAV's header, read and checked, and its samples converted a run of
// frames at a time (a caller checks the rate, channels and length before
// converting anything, and holds no float copy of the whole file).
//
// Unknown chunks are skipped (odd sizes padded to even, as RIFF requires). A
// data chunk that claims 0xFFFFFFFF bytes or more than the file holds (a WAV
// written while streaming) is read as far as the file goes, in whole frames.
// Integers map to [-1, 1): s / 2^(bits-1), 8-bit as (u - 128) / 128; floats
// are kept as they are but must be finite.
class WavReader {
 public:
  explicit WavReader(std::span<const uint8_t> bytes);  // AudioError, CompressedWav
  int sample_rate() const { return rate_; }
  int channels() const { return channels_; }
  size_t frames() const { return frames_; }
  // Frames [from, from + n) into out, interleaved (n * channels() floats).
  void read(size_t from, size_t n, float* out) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t frames_ = 0;
  int rate_ = 0, channels_ = 0, bits_ = 0;
  bool float_ = false;
};

}  // namespace hearth::audio
