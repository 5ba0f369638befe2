// Audio bytes, as a client uploads them, to what Whisper listens to: 16 kHz
// mono float32. WAV goes through the exact parser of wav.h; everything else
// (MP3, FLAC, Ogg Vorbis/Opus, M4A/AAC, WebM/Matroska, MP4/MOV's audio track,
// AIFF, CAF, AMR, WMA) through FFmpeg's libraries, in-process and from memory:
// no temporary file, no ffmpeg binary, no network or file access by the
// demuxers. Both paths end in one resampler (libswresample) that averages
// the channels to mono and converts the rate to 16 kHz.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace hearth::audio {

constexpr int kSampleRate = 16000;
// Decoding stops with AudioError past this much audio: a few kilobytes of
// compressed silence can otherwise expand to gigabytes of samples.
constexpr double kMaxDecodeSeconds = 3 * 3600;

// RIFF....WAVE: the bytes are for WavReader.
bool looks_like_wav(std::span<const uint8_t> bytes);

// Clips samples to [-1, 1], as openai-whisper's 16-bit conversion does: a
// float sample far outside it (1e20) would overflow the log-mel's power and
// turn the whole clip to infinities.
void clip_to_full_scale(std::span<float> samples);

// 16 kHz mono samples, never empty, all finite, clipped to [-1, 1]. Unreadable, empty, NaN
// or stream-less (no audio track) input throws AudioError with a message for
// the client; audio longer than max_seconds, or holding more than 48 input
// samples (rate x channels) per output sample of that length, AudioTooLong.
// Any sample rate from 1 kHz to 768 kHz and up to 64 channels. `cancelled`
// (if given) is asked between blocks of samples: true throws Cancelled.
// `grew` (if given) is told the samples made so far after each block, and
// may throw to stop: a server charges them to its budget as they come.
std::vector<float> decode_audio(std::span<const uint8_t> bytes, double max_seconds = kMaxDecodeSeconds,
                                const std::function<bool()>& cancelled = {},
                                const std::function<void(size_t)>& grew = {});

}  // namespace hearth::audio
