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
#include <span>
#include <vector>

namespace hearth::audio {

struct Pcm {
  int sample_rate = 0;
  int channels = 0;
  std::vector<float> samples;  // interleaved: frame f, channel c at [f * channels + c]
};

// Unknown chunks are skipped (odd sizes padded to even, as RIFF requires). A
// data chunk that claims 0xFFFFFFFF bytes or more than the file holds (a WAV
// written while streaming) is read as far as the file goes, in whole frames.
// Integers map to [-1, 1): s / 2^(bits-1), 8-bit as (u - 128) / 128; floats
// are kept as they are but must be finite.
Pcm parse_wav(std::span<const uint8_t> bytes);

}  // namespace hearth::audio
