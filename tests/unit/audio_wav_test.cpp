// WavReader on WAV files built byte by byte: every sample format with known
// values (exact equality), WAVE_FORMAT_EXTENSIBLE, unknown chunks, streamed
// sizes, and malformed files, which must throw AudioError.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "audio/audio_error.h"
#include "audio/wav.h"

using namespace hearth::audio;

namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, uint32_t v) {
  b.push_back(uint8_t(v));
  b.push_back(uint8_t(v >> 8));
}
void put32(Bytes& b, uint32_t v) {
  put16(b, v & 0xFFFF);
  put16(b, v >> 16);
}
void chunk(Bytes& b, const char* id, const Bytes& body, uint32_t size) {
  b.insert(b.end(), id, id + 4);
  put32(b, size);
  b.insert(b.end(), body.begin(), body.end());
  if (body.size() & 1) b.push_back(0);
}
void chunk(Bytes& b, const char* id, const Bytes& body) {
  chunk(b, id, body, uint32_t(body.size()));
}

struct Spec {
  uint16_t tag = 1;
  int channels = 1;
  uint32_t rate = 16000;
  int bits = 16;
  int block_align = -1;     // -1: channels * bits / 8
  bool extensible = false;  // tag goes into the sub-format GUID
  int fmt_size = -1;        // -1: 16, or 40 when extensible
};

Bytes fmt_body(const Spec& s) {
  Bytes f;
  put16(f, s.extensible ? 0xFFFE : s.tag);
  put16(f, uint32_t(s.channels));
  put32(f, s.rate);
  const int align = s.block_align >= 0 ? s.block_align : s.channels * s.bits / 8;
  put32(f, s.rate * uint32_t(align));
  put16(f, uint32_t(align));
  put16(f, uint32_t(s.bits));
  if (s.extensible) {
    put16(f, 22);
    put16(f, uint32_t(s.bits));  // valid bits
    put32(f, 0);                 // channel mask
    put16(f, s.tag);
    const uint8_t tail[14] = {0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71};
    f.insert(f.end(), tail, tail + 14);
  }
  if (s.fmt_size >= 0) f.resize(size_t(s.fmt_size));
  return f;
}

Bytes wav(const Spec& s, const Bytes& data) {
  Bytes b = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
  chunk(b, "fmt ", fmt_body(s));
  chunk(b, "data", data);
  const uint32_t riff = uint32_t(b.size() - 8);
  std::memcpy(b.data() + 4, &riff, 4);
  return b;
}

struct Pcm {
  int sample_rate = 0;
  int channels = 0;
  std::vector<float> samples;  // interleaved
};

// The whole file at once.
Pcm parse(const Bytes& b) {
  const WavReader wav(b);
  Pcm p{wav.sample_rate(), wav.channels(), std::vector<float>(wav.frames() * size_t(wav.channels()))};
  wav.read(0, wav.frames(), p.samples.data());
  return p;
}

}  // namespace

TEST(Wav, Unsigned8) {
  const Pcm p = parse(wav({.bits = 8}, {0, 64, 128, 192, 255}));
  EXPECT_EQ(p.sample_rate, 16000);
  EXPECT_EQ(p.channels, 1);
  EXPECT_EQ(p.samples, (std::vector<float>{-1.0f, -0.5f, 0.0f, 0.5f, 127.0f / 128}));
}

TEST(Wav, Signed16Stereo) {
  Bytes d;
  for (int v : {-32768, 32767, 0, -1, 16384, -16384}) put16(d, uint32_t(v));
  const Pcm p = parse(wav({.channels = 2, .rate = 44100}, d));
  EXPECT_EQ(p.sample_rate, 44100);
  EXPECT_EQ(p.channels, 2);
  EXPECT_EQ(p.samples,
            (std::vector<float>{-1.0f, 32767.0f / 32768, 0.0f, -1.0f / 32768, 0.5f, -0.5f}));
}

TEST(Wav, Signed24) {
  Bytes d = {0x00, 0x00, 0x80, 0xFF, 0xFF, 0x7F, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0xFF};
  const Pcm p = parse(wav({.bits = 24}, d));
  EXPECT_EQ(p.samples,
            (std::vector<float>{-1.0f, 8388607.0f / 8388608, 1.0f / 8388608, -1.0f / 8388608}));
}

TEST(Wav, Signed32) {
  Bytes d;
  for (uint32_t v : {0x80000000u, 0x40000000u, 0xFFFFFF00u, 0u}) put32(d, v);
  const Pcm p = parse(wav({.bits = 32}, d));
  EXPECT_EQ(p.samples, (std::vector<float>{-1.0f, 0.5f, -256.0f / 2147483648.0f, 0.0f}));
}

TEST(Wav, Float32And64) {
  const std::vector<float> want = {0.25f, -1.5f, 3e-8f, 0.0f};
  Bytes d(want.size() * 4);
  std::memcpy(d.data(), want.data(), d.size());
  EXPECT_EQ(parse(wav({.tag = 3, .bits = 32}, d)).samples, want);
  const std::vector<double> dv = {0.25, -1.5, 0.1};
  Bytes d64(dv.size() * 8);
  std::memcpy(d64.data(), dv.data(), d64.size());
  EXPECT_EQ(parse(wav({.tag = 3, .bits = 64}, d64)).samples,
            (std::vector<float>{0.25f, -1.5f, 0.1f}));
}

TEST(Wav, NonFiniteFloatIsRefused) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Bytes d(4);
  std::memcpy(d.data(), &nan, 4);
  EXPECT_THROW(parse(wav({.tag = 3, .bits = 32}, d)), AudioError);
}

TEST(Wav, Extensible) {
  Bytes d;
  for (int v : {1, -2, 3, -4}) put16(d, uint32_t(v));
  const Pcm p = parse(wav({.channels = 2, .extensible = true}, d));
  EXPECT_EQ(p.channels, 2);
  EXPECT_EQ(p.samples,
            (std::vector<float>{1.0f / 32768, -2.0f / 32768, 3.0f / 32768, -4.0f / 32768}));
  Bytes f(8);
  const float fv[2] = {0.5f, -0.25f};
  std::memcpy(f.data(), fv, 8);
  EXPECT_EQ(parse(wav({.tag = 3, .bits = 32, .extensible = true}, f)).samples,
            (std::vector<float>{0.5f, -0.25f}));
}

TEST(Wav, SkipsUnknownChunksWithOddSizes) {
  Bytes b = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
  chunk(b, "LIST", {'a', 'b', 'c'});  // 3 bytes + 1 pad
  chunk(b, "fmt ", fmt_body({}));
  chunk(b, "junk", {1});  // 1 byte + 1 pad
  Bytes d;
  put16(d, 100);
  chunk(b, "data", d);
  chunk(b, "id3 ", {9, 9, 9});  // after the data, ignored
  EXPECT_EQ(parse(b).samples, (std::vector<float>{100.0f / 32768}));
}

TEST(Wav, StreamedDataSizeReadsWholeFramesThere) {
  Bytes d;
  for (int v : {1, 2, 3, 4, 5}) put16(d, uint32_t(v));
  d.push_back(7);  // half a frame at the end: dropped
  for (uint32_t size : {0xFFFFFFFFu, 0x7FFFFFF0u, 1000u}) {
    Bytes b = {'R', 'I', 'F', 'F', 0xFF, 0xFF, 0xFF, 0xFF, 'W', 'A', 'V', 'E'};
    chunk(b, "fmt ", fmt_body({.channels = 2}));
    b.insert(b.end(), {'d', 'a', 't', 'a'});
    put32(b, size);
    b.insert(b.end(), d.begin(), d.end());
    const Pcm p = parse(b);
    EXPECT_EQ(p.samples, (std::vector<float>{1 / 32768.f, 2 / 32768.f, 3 / 32768.f, 4 / 32768.f}))
        << size;
  }
}

TEST(Wav, EmptyDataIsNoSamples) {
  EXPECT_TRUE(parse(wav({}, {})).samples.empty());
}

TEST(Wav, MalformedInputsThrow) {
  const Bytes good = wav({}, {1, 0, 2, 0});
  ASSERT_NO_THROW(parse(good));
  std::vector<std::pair<std::string, Bytes>> cases;
  cases.push_back({"empty", {}});
  for (size_t n : {4, 11, 12, 20, 35})
    cases.push_back(
        {"truncated to " + std::to_string(n), Bytes(good.begin(), good.begin() + long(n))});
  Bytes not_wave = good;
  not_wave[8] = 'X';
  cases.push_back({"not WAVE", not_wave});
  cases.push_back({"zero channels", wav({.channels = 0, .block_align = 2}, {1, 0})});
  cases.push_back({"zero rate", wav({.rate = 0}, {1, 0})});
  cases.push_back({"12-bit", wav({.bits = 12, .block_align = 2}, {1, 0})});
  cases.push_back({"16-bit float", wav({.tag = 3, .bits = 16}, {1, 0})});
  cases.push_back({"8-bit float", wav({.tag = 3, .bits = 8}, {1, 0})});
  cases.push_back({"block align mismatch", wav({.channels = 2, .block_align = 2}, {1, 0})});
  cases.push_back({"block align zero", wav({.block_align = 0}, {1, 0})});
  cases.push_back({"a-law", wav({.tag = 6, .bits = 8}, {1, 0})});
  cases.push_back({"short fmt", wav({.fmt_size = 14}, {1, 0})});
  cases.push_back({"short extensible fmt", wav({.extensible = true, .fmt_size = 30}, {1, 0})});
  Bytes bad_guid = wav({.extensible = true}, {1, 0});
  bad_guid[12 + 8 + 30] ^= 1;
  cases.push_back({"unknown sub-format GUID", bad_guid});
  Bytes no_fmt = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
  chunk(no_fmt, "data", {1, 0});
  cases.push_back({"no fmt", no_fmt});
  Bytes no_data = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
  chunk(no_data, "fmt ", fmt_body({}));
  cases.push_back({"no data", no_data});
  Bytes huge_fmt = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
  chunk(huge_fmt, "fmt ", fmt_body({}), 0xFFFFFFF0u);
  cases.push_back({"fmt size past the end", huge_fmt});
  Bytes two_fmt = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
  chunk(two_fmt, "fmt ", fmt_body({}));
  chunk(two_fmt, "fmt ", fmt_body({}));
  chunk(two_fmt, "data", {1, 0});
  cases.push_back({"two fmt chunks", two_fmt});
  for (const auto& [name, bytes] : cases) EXPECT_THROW(parse(bytes), AudioError) << name;
}
