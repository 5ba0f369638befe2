// log_mel_spectrogram's shape, edge lengths and a few properties; the values
// themselves are checked against NumPy by tests/numerics/test_audio.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "audio/mel.h"

using namespace hearth::audio;

TEST(Mel, FiltersAreTrianglesOfUnitArea) {
  for (int n : {80, 128}) {
    const std::vector<float> f = mel_filters(n);
    ASSERT_EQ(f.size(), size_t(n) * kFreqBins);
    for (int m = 0; m < n; ++m) {
      const float* row = &f[size_t(m) * kFreqBins];
      EXPECT_TRUE(std::all_of(row, row + kFreqBins, [](float v) { return v >= 0; })) << m;
    }
    // The last band of 80 peaks near the top of the range; none is empty
    // above band 0 (the lowest bands fall between FFT bins for 128).
    EXPECT_GT(*std::max_element(f.end() - kFreqBins, f.end()), 0.0f);
  }
  EXPECT_THROW(mel_filters(0), std::invalid_argument);
}

TEST(Mel, FrameCountAndAnyLength) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (size_t len : {0, 1, 2, 150, 159, 160, 161, 199, 200, 201, 399, 400, 401, 1000}) {
    std::vector<float> x(len);
    for (float& v : x) v = u(rng);
    for (int64_t padding : {int64_t(0), int64_t(7), int64_t(kChunkSamples)}) {
      const LogMel m = log_mel_spectrogram(x, 80, padding);
      EXPECT_EQ(m.n_mels, 80);
      EXPECT_EQ(m.frames, int64_t(len + padding) / kHop) << len << " " << padding;
      ASSERT_EQ(m.data.size(), size_t(80 * m.frames));
      for (float v : m.data) ASSERT_TRUE(std::isfinite(v));
    }
  }
  EXPECT_EQ(log_mel_spectrogram({}, 128, kChunkSamples).frames, kChunkFrames);
  EXPECT_THROW(log_mel_spectrogram({}, 80, -1), std::invalid_argument);
}

TEST(Mel, SilenceIsTheFloor) {
  const LogMel m = log_mel_spectrogram(std::vector<float>(16000, 0.0f), 80);
  for (float v : m.data) ASSERT_EQ(v, (-10.0f + 4.0f) / 4.0f);
}

// A 1 kHz tone puts the same band on top in every frame, and the long audio
// (split over threads) gives the same frames as a short piece of it.
TEST(Mel, ToneAndThreads) {
  std::vector<float> x(16000 * 60);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.5f * float(std::sin(2 * std::numbers::pi * 1000 * i / 16000.0));
  const LogMel m = log_mel_spectrogram(x, 80);
  const LogMel part = log_mel_spectrogram(std::span(x).first(16000 * 5), 80);
  ASSERT_EQ(m.frames, 6000);
  int top = -1;
  for (int64_t t = 1; t + 1 < m.frames; t += 97) {
    int best = 0;
    for (int b = 1; b < 80; ++b)
      if (m.data[size_t(b * m.frames + t)] > m.data[size_t(best * m.frames + t)]) best = b;
    if (top < 0) top = best;
    ASSERT_EQ(best, top) << t;
  }
  // Frames 1..498 see only the first 5 s in both; the global clamp is the same
  // because the tone's level is.
  for (int b = 0; b < 80; ++b)
    for (int64_t t = 1; t < 498; ++t)
      ASSERT_EQ(m.data[size_t(b * m.frames + t)], part.data[size_t(b * part.frames + t)])
          << b << " " << t;
}
