// The safetensors writer (byte layout) and the MLX affine quantizer it is
// used with (packing, scale/bias rules, round trip).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/quantize.h"
#include "io/safetensors_writer.h"
#include "temp_dir.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(SafetensorsWriter, LayoutHeaderPaddingAndSortedData) {
  hearth::io::SafetensorsWriter w;
  w.set_metadata("format", "pt");
  // Added out of order: the file must hold them in sorted-name order.
  w.add("b", hearth::DType::F32, {2}, [](uint8_t* p) {
    float v[2] = {1.5f, -2.0f};
    std::memcpy(p, v, sizeof v);
  });
  w.add("a", hearth::DType::U32, {1, 1}, [](uint8_t* p) {
    uint32_t v = 0x76543210u;
    std::memcpy(p, &v, 4);
  });
  const hearth::TempDir dir;
  const std::string path = dir / "writer_test.safetensors";
  w.write(path);
  std::string bytes = read_file(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  EXPECT_EQ((8 + n) % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 4 + 8);
  auto h = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(h["__metadata__"]["format"], "pt");
  EXPECT_EQ(h["a"]["dtype"], "U32");
  EXPECT_EQ(h["a"]["shape"], nlohmann::json({1, 1}));
  EXPECT_EQ(h["a"]["data_offsets"], nlohmann::json({0, 4}));
  EXPECT_EQ(h["b"]["data_offsets"], nlohmann::json({4, 12}));
  const char* data = bytes.data() + 8 + n;
  EXPECT_EQ(uint8_t(data[0]), 0x10);
  EXPECT_EQ(uint8_t(data[3]), 0x76);
  float b1;
  std::memcpy(&b1, data + 8, 4);
  EXPECT_EQ(b1, -2.0f);
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
}

TEST(SafetensorsWriter, RejectsDuplicatesAndBadNames) {
  hearth::io::SafetensorsWriter w;
  w.add("x", hearth::DType::F32, {1}, [](uint8_t*) {});
  EXPECT_THROW(w.add("x", hearth::DType::F32, {1}, [](uint8_t*) {}), std::invalid_argument);
  EXPECT_THROW(w.add("", hearth::DType::F32, {1}, [](uint8_t*) {}), std::invalid_argument);
  EXPECT_THROW(w.add("__metadata__", hearth::DType::F32, {1}, [](uint8_t*) {}),
               std::invalid_argument);
  EXPECT_THROW(w.write("/nonexistent-dir/x.safetensors"), std::runtime_error);
}

TEST(AffineQuantize, PacksLowestBitsFirst) {
  // Codes 0..7 in a 4-bit row pack to 0x76543210 (formats doc).
  std::vector<float> w(32);
  for (int i = 0; i < 32; ++i) w[i] = float(i % 16);
  std::vector<uint32_t> packed(4);
  std::vector<float> scales(1), biases(1);
  hearth::affine_quantize(w.data(), 1, 32, 4, 32, packed.data(), scales.data(), biases.data());
  // |max| >= |min| -> negative scale, bias = max = 15: code = (w - 15) / -1 = 15 - w.
  EXPECT_EQ(biases[0], 15.0f);
  EXPECT_EQ(scales[0], -1.0f);
  EXPECT_EQ(packed[0], 0x89abcdefu);
  std::vector<float> back(32);
  hearth::affine_dequantize(packed.data(), scales.data(), biases.data(), 1, 32, 4, 32, back.data());
  EXPECT_EQ(back, w);
}

TEST(AffineQuantize, ThreeBitCodesStraddleWords) {
  // Column 10 of a 3-bit row uses bits 30-31 of word 0 and bit 0 of word 1.
  std::vector<float> w(32, 0.0f);
  w[0] = -7.0f;  // |min| > |max| -> bias -7, scale 1; 0.0 -> code 7
  w[10] = -2.0f;  // code 5 = 0b101
  std::vector<uint32_t> packed(3);
  float s, b;
  hearth::affine_quantize(w.data(), 1, 32, 3, 32, packed.data(), &s, &b);
  EXPECT_EQ(s, 1.0f);
  EXPECT_EQ(b, -7.0f);
  EXPECT_EQ((packed[0] >> 30) & 3u, 1u);  // low two bits of 5
  EXPECT_EQ(packed[1] & 1u, 1u);          // high bit of 5
  std::vector<float> back(32);
  hearth::affine_dequantize(packed.data(), &s, &b, 1, 32, 3, 32, back.data());
  EXPECT_EQ(back, w);
}

TEST(AffineQuantize, RoundTripWithinOneScaleAndZeroExact) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (int group : {32, 64, 128}) {
      const int rows = 3, cols = 256;
      std::vector<float> w(rows * cols);
      for (auto& v : w) v = nd(rng);
      w[5] = 0.0f;
      std::vector<uint32_t> packed(rows * cols * bits / 32);
      std::vector<float> scales(rows * cols / group), biases(rows * cols / group);
      hearth::affine_quantize(w.data(), rows, cols, bits, group, packed.data(), scales.data(),
                              biases.data());
      std::vector<float> back(w.size());
      hearth::affine_dequantize(packed.data(), scales.data(), biases.data(), rows, cols, bits,
                                group, back.data());
      for (int i = 0; i < rows * cols; ++i) {
        float s = std::abs(scales[i / group]);
        ASSERT_LE(std::abs(back[i] - w[i]), s + 1e-6f) << "bits " << bits << " group " << group;
      }
      EXPECT_EQ(back[5], 0.0f) << "bits " << bits;
    }
  }
}

TEST(AffineQuantize, RoundsHalfToEven) {
  // A 4-bit group spanning [0, 15] has scale -1 and bias 15 exactly, so these
  // values land half-way between two codes.
  std::vector<float> w(32, 0.0f);
  w[0] = 15.0f;  // bias 15, scale -1
  w[1] = 12.5f;  // (12.5 - 15) / -1 = 2.5 -> rint -> 2 -> value 13
  w[2] = 11.5f;  // 3.5 -> 4 -> value 11
  std::vector<uint32_t> packed(4);
  float s, b;
  hearth::affine_quantize(w.data(), 1, 32, 4, 32, packed.data(), &s, &b);
  std::vector<float> back(32);
  hearth::affine_dequantize(packed.data(), &s, &b, 1, 32, 4, 32, back.data());
  EXPECT_EQ(back[1], 13.0f);
  EXPECT_EQ(back[2], 11.0f);
}

TEST(AffineQuantize, RejectsBadShapes) {
  std::vector<float> w(48);
  std::vector<uint32_t> p(8);
  std::vector<float> s(2), b(2);
  EXPECT_THROW(hearth::affine_quantize(w.data(), 1, 48, 4, 32, p.data(), s.data(), b.data()),
               std::invalid_argument);
  EXPECT_THROW(hearth::affine_quantize(w.data(), 1, 48, 7, 16, p.data(), s.data(), b.data()),
               std::invalid_argument);
  EXPECT_FALSE(hearth::affine_quantizable(48, 4, 32));
  EXPECT_TRUE(hearth::affine_quantizable(64, 4, 32));
}

}  // namespace
