// Silero VAD: the span rules on crafted probability sequences, the loader on
// broken files (each must throw a clear std::runtime_error, never crash), and
// a few properties of the forward on the shared weights. The probabilities
// themselves are checked against NumPy by tests/numerics/test_vad.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "audio/vad.h"
#include "shared_audio.h"
#include "temp_dir.h"

using namespace hearth::audio;
namespace fs = std::filesystem;

namespace {

constexpr int kW = kVadWindow;
constexpr double kRate = 16000;

// n windows of probability 0 with [from, to) set to p.
std::vector<float> probs(int n, std::initializer_list<std::tuple<int, int, float>> runs) {
  std::vector<float> v(size_t(n), 0.0f);
  for (auto [from, to, p] : runs)
    for (int i = from; i < to; ++i) v[size_t(i)] = p;
  return v;
}

std::vector<SpeechSpan> spans(const std::vector<float>& p, const VadOptions& o = {}) {
  return speech_spans(p, int64_t(p.size()) * kW, o);
}

void expect_span(const SpeechSpan& s, int64_t start, int64_t end) {
  EXPECT_DOUBLE_EQ(s.start, double(start) / kRate);
  EXPECT_DOUBLE_EQ(s.end, double(end) / kRate);
}

const int64_t kPad = 480;  // 30 ms

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// load() on these bytes must throw a runtime_error whose message has `what`.
void expect_load_error(const std::string& bytes, const std::string& what) {
  const hearth::TempDir dir;
  try {
    SileroVad::load(dir.write("vad.onnx", bytes));
    ADD_FAILURE() << "loaded; expected an error with '" << what << "'";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(VadSpans, NothingInSilence) {
  EXPECT_TRUE(spans(probs(100, {})).empty());
  EXPECT_TRUE(spans({}).empty());
  EXPECT_TRUE(spans(probs(100, {{0, 100, 0.49f}})).empty());  // just under the threshold
}

TEST(VadSpans, OneSpanPaddedBothSides) {
  // Speech at windows 10..29; silence from 30 lasts 100 ms by window 34.
  const auto s = spans(probs(100, {{10, 30, 0.9f}}));
  ASSERT_EQ(s.size(), 1u);
  expect_span(s[0], 10 * kW - kPad, 30 * kW + kPad);
}

TEST(VadSpans, ThresholdIsInclusive) {
  ASSERT_EQ(spans(probs(100, {{10, 30, 0.5f}})).size(), 1u);
  VadOptions o;
  o.threshold = 0.7f;
  EXPECT_TRUE(spans(probs(100, {{10, 30, 0.6f}}), o).empty());
}

TEST(VadSpans, ShortSpeechDropped) {
  EXPECT_TRUE(spans(probs(100, {{10, 17, 0.9f}})).empty());   // 224 ms
  EXPECT_EQ(spans(probs(100, {{10, 18, 0.9f}})).size(), 1u);  // 256 ms
  VadOptions o;
  o.min_speech_ms = 500;
  EXPECT_TRUE(spans(probs(100, {{10, 25, 0.9f}}), o).empty());
}

TEST(VadSpans, HysteresisKeepsSpeechBetweenThresholds) {
  // 0.4 is below 0.5 but above 0.35: still speech, until the zeros at 40.
  const auto s = spans(probs(100, {{10, 20, 0.9f}, {20, 40, 0.4f}}));
  ASSERT_EQ(s.size(), 1u);
  expect_span(s[0], 10 * kW - kPad, 40 * kW + kPad);
}

TEST(VadSpans, ShortDipsDoNotSplit) {
  // Three windows (96 ms) under neg_threshold: shorter than min_silence.
  const auto s = spans(probs(100, {{10, 30, 0.9f}, {33, 50, 0.9f}}));
  ASSERT_EQ(s.size(), 1u);
  expect_span(s[0], 10 * kW - kPad, 50 * kW + kPad);
}

TEST(VadSpans, CloseSpansMergeDistantOnesStaySeparate) {
  // Silence 30..35 ends the first span at 30, but the next starts 192 ms later: merged.
  auto s = spans(probs(100, {{10, 30, 0.9f}, {36, 60, 0.9f}}));
  ASSERT_EQ(s.size(), 1u);
  expect_span(s[0], 10 * kW - kPad, 60 * kW + kPad);
  // 320 ms apart: two spans, each padded fully.
  s = spans(probs(100, {{10, 30, 0.9f}, {40, 60, 0.9f}}));
  ASSERT_EQ(s.size(), 2u);
  expect_span(s[0], 10 * kW - kPad, 30 * kW + kPad);
  expect_span(s[1], 40 * kW - kPad, 60 * kW + kPad);
}

TEST(VadSpans, PaddingSplitsSmallGaps) {
  VadOptions o;
  o.speech_pad_ms = 200;  // 3200 samples; the gap is 5120 < 2 * 3200
  const auto s = spans(probs(100, {{10, 30, 0.9f}, {40, 60, 0.9f}}), o);
  ASSERT_EQ(s.size(), 2u);
  expect_span(s[0], 10 * kW - 3200, 30 * kW + 2560);
  expect_span(s[1], 40 * kW - 2560, 60 * kW + 3200);
}

TEST(VadSpans, ClampedToTheAudio) {
  // Speech from the first window to the end of audio shorter than the windows.
  const std::vector<float> p = probs(100, {{0, 100, 0.9f}});
  const int64_t samples = 100 * kW - 100;
  const auto s = speech_spans(p, samples, {});
  ASSERT_EQ(s.size(), 1u);
  expect_span(s[0], 0, samples);
}

TEST(VadSpans, SpeechRunningToTheEndMustBeLongEnough) {
  EXPECT_TRUE(spans(probs(100, {{95, 100, 0.9f}})).empty());
  ASSERT_EQ(spans(probs(100, {{90, 100, 0.9f}})).size(), 1u);
}

TEST(VadSpans, NegativeThresholdFloor) {
  // threshold 0.1: neg_threshold is 0.01, not -0.05, so zeros still end speech.
  VadOptions o;
  o.threshold = 0.1f;
  const auto s = spans(probs(100, {{10, 30, 0.2f}, {30, 40, 0.02f}}), o);
  ASSERT_EQ(s.size(), 1u);
  expect_span(s[0], 10 * kW - kPad, 40 * kW + kPad);
}

TEST(VadLoad, Errors) {
  try {
    SileroVad::load("/nonexistent/silero.bin");
    ADD_FAILURE() << "loaded a missing file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be opened"), std::string::npos) << e.what();
  }
  expect_load_error("", "truncated");
  expect_load_error("GGUF\3\0\0\0 and more bytes", "bad magic");

  const fs::path model = shared_audio("silero-v6.2.0-ggml.bin");
  if (model.empty()) GTEST_SKIP() << "shared/audio/silero-v6.2.0-ggml.bin not present";
  const std::string good = read(model);
  // Every cut of the header and the first tensors, and a few later ones.
  for (size_t n = 0; n < 2000; n += 7) expect_load_error(good.substr(0, n), "Silero VAD file");
  for (size_t n = 2000; n < good.size(); n += good.size() / 20)
    expect_load_error(good.substr(0, n), "Silero VAD file");
  // Cut just before the last tensor (the 258 x 256 f16 STFT basis): whole, but incomplete.
  const size_t basis = 3 * 4 + 3 * 4 + 32 + 258 * 256 * 2;
  expect_load_error(good.substr(0, good.size() - basis), "is missing");
  std::string bad = good;
  bad[4 + 4 + 10 + 12] = 1;  // window size 512 -> 513
  expect_load_error(bad, "window size");
  bad = good;
  bad[106 + 12] = 5;  // the first tensor's first dim 3 -> 5
  expect_load_error(bad, "wrong shape");
  bad = good;
  bad[106 + 4 + 3] = 0x40;  // its name length, huge
  expect_load_error(bad, "name length");
  bad = good;
  bad[106 + 8] = 7;  // its type
  expect_load_error(bad, "tensor type");
  expect_load_error(good + good.substr(106, 200), "Silero VAD file");  // a second, cut copy
}

TEST(VadModel, Probabilities) {
  const fs::path model = shared_audio("silero-v6.2.0-ggml.bin");
  if (model.empty()) GTEST_SKIP() << "shared/audio/silero-v6.2.0-ggml.bin not present";
  const auto vad = SileroVad::load(model);
  EXPECT_TRUE(vad->probabilities({}).empty());
  std::vector<float> audio(16000, 0.0f);
  for (size_t i = 0; i < audio.size(); ++i) audio[i] = 0.3f * float((i * 7919) % 97) / 97.0f;
  const std::vector<float> p = vad->probabilities(audio);
  ASSERT_EQ(p.size(), 32u);  // 16000 / 512, rounded up
  for (float v : p) EXPECT_TRUE(v >= 0 && v <= 1) << v;
  EXPECT_EQ(vad->probabilities(audio), p);  // no state kept between calls
  EXPECT_EQ(vad->probabilities(std::span(audio).first(1)).size(), 1u);
  const std::vector<float> silence(16000, 0.0f);
  EXPECT_TRUE(vad->speech(silence, {}).empty());
}
