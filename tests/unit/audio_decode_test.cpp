// decode_audio on the shared speech samples (WAV, FLAC, MP3 of the same
// speech), on generated WAVs that must be mixed and resampled, and on bytes
// that are not audio, which must throw AudioError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
#include <random>
#include <vector>

#include "audio/audio_error.h"
#include "audio/decode.h"
#include "shared_audio.h"
#include "audio/wav.h"

using namespace hearth::audio;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

#define LOAD_OR_SKIP(var, name)                                                \
  const std::filesystem::path var##_path = shared_audio(name);                 \
  if (var##_path.empty()) GTEST_SKIP() << "shared/audio/" name " not present"; \
  const Bytes var = read(var##_path)

// A 16-bit PCM WAV of interleaved float samples in [-1, 1).
Bytes wav16(int rate, int channels, const std::vector<float>& samples) {
  Bytes b = {'R', 'I', 'F', 'F'};
  const auto put = [&](uint32_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
  };
  const auto tag = [&](const char* t) { b.insert(b.end(), t, t + 4); };
  put(uint32_t(36 + samples.size() * 2), 4);
  tag("WAVE"), tag("fmt ");
  put(16, 4), put(1, 2), put(uint32_t(channels), 2), put(uint32_t(rate), 4);
  put(uint32_t(rate * channels * 2), 4), put(uint32_t(channels * 2), 2), put(16, 2);
  tag("data");
  put(uint32_t(samples.size() * 2), 4);
  for (float s : samples) put(uint32_t(int16_t(std::lround(s * 32767))), 2);
  return b;
}

// The largest normalized cross-correlation of a and b over lags up to max_lag.
double best_correlation(const std::vector<float>& a, const std::vector<float>& b, int max_lag) {
  double best = -1;
  for (int lag = -max_lag; lag <= max_lag; ++lag) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = size_t(std::max(0, lag)); i < a.size() && i - lag < b.size(); ++i) {
      ab += double(a[i]) * b[i - lag], aa += double(a[i]) * a[i],
          bb += double(b[i - lag]) * b[i - lag];
    }
    if (aa > 0 && bb > 0) best = std::max(best, ab / std::sqrt(aa * bb));
  }
  return best;
}

}  // namespace

// A 16 kHz mono float32 WAV: any finite value, in range or not.
Bytes wav_f32(const std::vector<float>& samples) {
  Bytes b = {'R', 'I', 'F', 'F'};
  const auto put = [&](uint32_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
  };
  const auto tag = [&](const char* t) { b.insert(b.end(), t, t + 4); };
  put(uint32_t(36 + samples.size() * 4), 4);
  tag("WAVE"), tag("fmt ");
  put(16, 4), put(3, 2), put(1, 2), put(16000, 4), put(16000 * 4, 4), put(4, 2), put(32, 2);
  tag("data");
  put(uint32_t(samples.size() * 4), 4);
  for (float s : samples) {
    uint32_t u;
    std::memcpy(&u, &s, 4);
    put(u, 4);
  }
  return b;
}

// openai-whisper reads audio as 16-bit samples, which clips it to full
// scale; a float far past it (1e20) would overflow the log-mel's power.
TEST(Decode, FloatSamplesPastFullScaleAreClipped) {
  const std::vector<float> got = decode_audio(wav_f32({0.5f, 1e20f, -3.0f, -0.25f, 1.0f}));
  EXPECT_EQ(got, (std::vector<float>{0.5f, 1.0f, -1.0f, -0.25f, 1.0f}));
}

TEST(Decode, LooksLikeWav) {
  EXPECT_TRUE(looks_like_wav(wav16(16000, 1, {0})));
  const Bytes not_wav = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'A', 'V', 'I', ' '};
  EXPECT_FALSE(looks_like_wav(not_wav));
  EXPECT_FALSE(looks_like_wav({}));
}

TEST(Decode, Wav16kMonoIsExact) {
  LOAD_OR_SKIP(wav, "jfk.wav");
  const std::vector<float> got = decode_audio(wav);
  ASSERT_EQ(got.size(), 176000u);
  // The file's int16 samples, read independently: they are its last bytes.
  const size_t data = wav.size() - 2 * got.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const int16_t s = int16_t(wav[data + 2 * i] | wav[data + 2 * i + 1] << 8);
    ASSERT_EQ(got[i], float(s) / 32768.0f) << i;
  }
}

// jfk.flac is a different master of the speech (44.1 kHz stereo, from
// openai/whisper) than jfk.wav (whisper.cpp's 16 kHz mono), so the samples
// cannot match exactly: the check is the length and the waveform's shape.
TEST(Decode, FlacMatchesWav) {
  LOAD_OR_SKIP(wav, "jfk.wav");
  LOAD_OR_SKIP(flac, "jfk.flac");
  const std::vector<float> a = decode_audio(wav), b = decode_audio(flac);
  EXPECT_NEAR(double(b.size()), double(a.size()), 0.05 * kSampleRate);
  EXPECT_GT(best_correlation(a, b, 800), 0.95);
}

TEST(Decode, Mp3MatchesWav) {
  LOAD_OR_SKIP(wav, "jfk.wav");
  LOAD_OR_SKIP(mp3, "jfk.mp3");
  const std::vector<float> a = decode_audio(wav), b = decode_audio(mp3);
  EXPECT_NEAR(double(b.size()), double(a.size()), 0.05 * kSampleRate);
  EXPECT_GT(best_correlation(a, b, 800), 0.95);
}

// 44.1 kHz stereo: the mean of the channels, resampled. A 1 kHz tone of
// amplitude 0.5 on the left and 0.3 on the right is a 1 kHz tone of 0.4.
TEST(Decode, ResamplesAndMixesStereo) {
  const int rate = 44100, n = rate * 2;
  std::vector<float> s;
  for (int i = 0; i < n; ++i) {
    const float v = float(std::sin(2 * std::numbers::pi * 1000 * i / rate));
    s.push_back(0.5f * v), s.push_back(0.3f * v);
  }
  const std::vector<float> got = decode_audio(wav16(rate, 2, s));
  EXPECT_NEAR(double(got.size()), 32000, 2);
  // Away from the resampler's edges: zero crossings give the frequency, the
  // peak gives the amplitude.
  int crossings = 0;
  float peak = 0;
  for (size_t i = 1600; i < 30400; ++i) {
    crossings += (got[i - 1] < 0) != (got[i] < 0);
    peak = std::max(peak, std::abs(got[i]));
  }
  EXPECT_NEAR(crossings / 2.0 / (28800.0 / kSampleRate), 1000, 2);
  EXPECT_NEAR(peak, 0.4, 0.005);
}

// Channels in opposite phase average to silence: a plain mean, not a
// speaker-position downmix.
TEST(Decode, StereoMixIsThePlainMean) {
  std::vector<float> s;
  for (int i = 0; i < 16000; ++i) {
    const float v = float(std::sin(i * 0.05));
    s.push_back(0.5f * v), s.push_back(-0.5f * v);
  }
  for (float v : decode_audio(wav16(16000, 2, s))) ASSERT_LE(std::abs(v), 1.0f / 32768);
}

TEST(Decode, LimitsDuration) {
  const std::vector<float> s(16000 * 3, 0.1f);
  EXPECT_EQ(decode_audio(wav16(16000, 1, s), 3.0).size(), 48000u);
  EXPECT_THROW(decode_audio(wav16(16000, 1, s), 2.0), AudioError);
}

// A WAV's length is known from its header: one too long is refused before
// a sample is converted (the NaN past the limit is never reached).
TEST(Decode, AWavTooLongIsRefusedBeforeItsSamplesAreRead) {
  const std::vector<float> s(16000 * 3, 0.1f);
  Bytes b = wav16(16000, 1, s);
  b.resize(b.size() - s.size() * 2);  // 32-bit float samples instead, NaN from the second second
  b[20] = 3, b[34] = 32, b[32] = 4, b[28] = 0x00, b[29] = 0xFA, b[30] = 0;  // tag, bits, align, 64000 B/s
  for (size_t i = 0; i < s.size(); ++i) {
    const float v = i < 16000 ? 0.1f : std::nanf("");
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + 4);
  }
  const uint32_t data = uint32_t(s.size() * 4);
  std::memcpy(&b[40], &data, 4);
  EXPECT_THROW(decode_audio(b, 10.0), AudioError);  // read: the NaN
  try {
    decode_audio(b, 2.0);
    ADD_FAILURE() << "accepted";
  } catch (const AudioTooLong&) {
  }
}

// Little output from much input (64 channels at 48 kHz: 192 input samples
// per output sample) is refused past 48 per output sample of the limit.
TEST(Decode, LimitsInputSamplesAcrossChannels) {
  const std::vector<float> one_second_64(48000 * 64, 0.1f), one_second_8(48000 * 8, 0.1f);
  EXPECT_THROW(decode_audio(wav16(48000, 64, one_second_64), 1.5), AudioTooLong);
  EXPECT_EQ(decode_audio(wav16(48000, 8, one_second_8), 1.5).size(), 16000u);
  EXPECT_EQ(decode_audio(wav16(48000, 64, one_second_64), 5.0).size(), 16000u);
}

// The caller's cancelled() (the client left) stops a decode on either path.
TEST(Decode, ACancelledDecodeStops) {
  const std::vector<float> s(16000, 0.1f);
  EXPECT_THROW(decode_audio(wav16(16000, 1, s), kMaxDecodeSeconds, [] { return true; }), Cancelled);
  EXPECT_EQ(decode_audio(wav16(16000, 1, s), kMaxDecodeSeconds, [] { return false; }).size(), 16000u);
  LOAD_OR_SKIP(flac, "jfk.flac");
  EXPECT_THROW(decode_audio(flac, kMaxDecodeSeconds, [] { return true; }), Cancelled);
}

// grew() hears the samples made so far, block by block and on either path,
// ending at the whole; what it throws stops the decode.
TEST(Decode, GrewFollowsTheOutput) {
  struct Full {};
  auto check = [](const auto& bytes) {
    std::vector<size_t> told;
    const size_t n = decode_audio(bytes, kMaxDecodeSeconds, {}, [&](size_t k) { told.push_back(k); }).size();
    ASSERT_GT(told.size(), 2u);
    EXPECT_TRUE(std::is_sorted(told.begin(), told.end()));
    EXPECT_EQ(told.back(), n);
    EXPECT_THROW(decode_audio(bytes, kMaxDecodeSeconds, {}, [&](size_t k) { if (k > n / 2) throw Full(); }), Full);
  };
  check(wav16(16000, 1, std::vector<float>(200000, 0.1f)));  // 12.5 s: several 65,536-frame blocks
  LOAD_OR_SKIP(flac, "jfk.flac");
  check(flac);
}

// G.711 mu-law, as telephony systems write WAVs: the exact reader leaves
// compressed samples to FFmpeg, which expands each byte by the standard's
// table (an independent copy of it here).
TEST(Decode, MuLawWavGoesThroughFfmpeg) {
  Bytes codes;
  for (int i = 0; i < 16000; ++i) codes.push_back(uint8_t(i * 7 + (i >> 3)));
  Bytes b = {'R', 'I', 'F', 'F'};
  const auto put = [&](uint32_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
  };
  const auto tag = [&](const char* t) { b.insert(b.end(), t, t + 4); };
  put(uint32_t(36 + codes.size()), 4);
  tag("WAVE"), tag("fmt ");
  put(16, 4), put(7, 2), put(1, 2), put(16000, 4), put(16000, 4), put(1, 2), put(8, 2);  // tag 7: mu-law
  tag("data");
  put(uint32_t(codes.size()), 4);
  b.insert(b.end(), codes.begin(), codes.end());
  const std::vector<float> got = decode_audio(b);
  ASSERT_EQ(got.size(), codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    const int u = ~codes[i] & 0xFF;
    int linear = (((u & 0x0F) << 3) + 0x84) << ((u >> 4) & 7);
    linear = (u & 0x80) ? 0x84 - linear : linear - 0x84;
    ASSERT_EQ(got[i], float(linear) / 32768.0f) << "code " << int(codes[i]);
  }
}

TEST(Decode, NotAudioThrows) {
  EXPECT_THROW(decode_audio({}), AudioError);
  std::mt19937 rng(1);
  Bytes garbage(4096);
  for (auto& b : garbage) b = uint8_t(rng());
  EXPECT_THROW(decode_audio(garbage), AudioError);
  const std::string text = "{\"model\": \"whisper-1\", \"file\": \"hello\"}";
  EXPECT_THROW(decode_audio(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())),
               AudioError);
  EXPECT_THROW(decode_audio(wav16(16000, 1, {})), AudioError);    // no samples
  EXPECT_THROW(decode_audio(wav16(100, 1, {0.5f})), AudioError);  // 100 Hz
}

// A damaged stretch in the middle of a compressed file loses its frames, not
// the whole upload, as with the ffmpeg command line openai-whisper runs.
TEST(Decode, DamagedFramesAreSkipped) {
  LOAD_OR_SKIP(mp3, "jfk.mp3");
  const size_t full = decode_audio(mp3).size();
  for (const char* file : {"jfk.mp3", "jfk.flac"}) {
    const Bytes clean = read(shared_audio(file));
    for (uint32_t seed : {1u, 2u, 3u}) {
      Bytes damaged = clean;
      std::mt19937 rng(seed);
      for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 600; ++i) damaged[i] = uint8_t(rng());
      std::vector<float> got;
      ASSERT_NO_THROW(got = decode_audio(damaged)) << file << " seed " << seed;
      EXPECT_GT(got.size(), full * 8 / 10) << file << " seed " << seed;
    }
  }
}

TEST(Decode, TruncatedMp3GivesFewerSamplesOrThrows) {
  LOAD_OR_SKIP(mp3, "jfk.mp3");
  const size_t full = decode_audio(mp3).size();
  for (size_t n : {size_t(10), size_t(100), size_t(2000), mp3.size() / 3, mp3.size() / 2 + 1,
                   mp3.size() - 1}) {
    try {
      const std::vector<float> got = decode_audio(std::span(mp3.data(), n));
      EXPECT_LT(got.size(), full + 1) << n;
      EXPECT_GT(got.size(), 0u) << n;
    } catch (const AudioError&) {
    }
  }
}
