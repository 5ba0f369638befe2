// The GGUF writer (parsed back by an independent little reader below) and the
// ggml Q8_0 / Q4_0 block quantizers (checked against hand-computed blocks).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/gguf_writer.h"
#include "temp_dir.h"

namespace {

using hearth::io::GgmlType;
using hearth::io::GgufWriter;
using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// --- an independent GGUF v3 reader, written from the format description ----

struct Reader {
  const std::string& s;
  size_t pos = 0;

  template <class T>
  T get() {
    if (pos + sizeof(T) > s.size()) throw std::runtime_error("truncated");
    T v;
    std::memcpy(&v, s.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string str() {
    uint64_t n = get<uint64_t>();
    if (pos + n > s.size()) throw std::runtime_error("truncated string");
    std::string v = s.substr(pos, n);
    pos += n;
    return v;
  }
  // Value of GGUF type `type` as JSON; floats become {"f32": v} / {"f64": v}
  // so a test can tell the stored width.
  json value(uint32_t type) {
    switch (type) {
      case 0: return get<uint8_t>();
      case 1: return get<int8_t>();
      case 2: return get<uint16_t>();
      case 3: return get<int16_t>();
      case 4: return get<uint32_t>();
      case 5: return get<int32_t>();
      case 6: return json{{"f32", get<float>()}};
      case 7: {
        uint8_t b = get<uint8_t>();
        if (b > 1) throw std::runtime_error("bad bool");
        return b == 1;
      }
      case 8: return str();
      case 9: {
        uint32_t elem = get<uint32_t>();
        uint64_t n = get<uint64_t>();
        json a = json::array();
        for (uint64_t i = 0; i < n; ++i) a.push_back(value(elem));
        return json{{"array_of", elem}, {"items", a}};
      }
      case 10: return get<uint64_t>();
      case 11: return get<int64_t>();
      case 12: return json{{"f64", get<double>()}};
    }
    throw std::runtime_error("unknown value type " + std::to_string(type));
  }
};

struct TensorInfo {
  std::vector<uint64_t> ne;  // innermost first
  uint32_t type;
  uint64_t offset;
};

struct Parsed {
  uint32_t version;
  std::map<std::string, std::pair<uint32_t, json>> kv;  // key -> (type, value)
  std::vector<std::string> kv_order;
  std::map<std::string, TensorInfo> tensors;
  std::vector<std::string> tensor_order;
  size_t data_start;
};

Parsed parse(const std::string& bytes) {
  Reader r{bytes};
  Parsed p;
  if (bytes.compare(0, 4, "GGUF") != 0) throw std::runtime_error("bad magic");
  r.pos = 4;
  p.version = r.get<uint32_t>();
  uint64_t n_tensors = r.get<uint64_t>();
  uint64_t n_kv = r.get<uint64_t>();
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.str();
    uint32_t type = r.get<uint32_t>();
    p.kv[key] = {type, r.value(type)};
    p.kv_order.push_back(key);
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    std::string name = r.str();
    TensorInfo t;
    uint32_t n_dims = r.get<uint32_t>();
    for (uint32_t d = 0; d < n_dims; ++d) t.ne.push_back(r.get<uint64_t>());
    t.type = r.get<uint32_t>();
    t.offset = r.get<uint64_t>();
    p.tensors[name] = t;
    p.tensor_order.push_back(name);
  }
  uint64_t align = 32;
  if (p.kv.count("general.alignment")) align = p.kv["general.alignment"].second.get<uint64_t>();
  for (size_t i = r.pos; i < (r.pos + align - 1) / align * align; ++i)
    if (bytes[i] != 0) throw std::runtime_error("non-zero header padding");
  p.data_start = (r.pos + align - 1) / align * align;
  return p;
}

float f16(const std::string& bytes, size_t at) {
  uint16_t h;
  std::memcpy(&h, bytes.data() + at, 2);
  return hearth::f16_to_f32(h);
}

// Independent dequantizers, from the block layouts.
std::vector<float> dequant_q8_0(const uint8_t* p, size_t blocks) {
  std::vector<float> out;
  for (size_t b = 0; b < blocks; ++b, p += 34) {
    uint16_t h = uint16_t(p[0] | (p[1] << 8));
    float d = hearth::f16_to_f32(h);
    for (int j = 0; j < 32; ++j) out.push_back(d * float(int8_t(p[2 + j])));
  }
  return out;
}

std::vector<float> dequant_q4_0(const uint8_t* p, size_t blocks) {
  std::vector<float> out(blocks * 32);
  for (size_t b = 0; b < blocks; ++b, p += 18) {
    uint16_t h = uint16_t(p[0] | (p[1] << 8));
    float d = hearth::f16_to_f32(h);
    for (int j = 0; j < 16; ++j) {
      out[b * 32 + size_t(j)] = d * float((p[2 + j] & 15) - 8);
      out[b * 32 + size_t(j) + 16] = d * float((p[2 + j] >> 4) - 8);
    }
  }
  return out;
}

// --- tests -----------------------------------------------------------------

TEST(GgufWriter, RoundTripsMetadataOfEveryTypeAndTensors) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u8("t.u8", 200);
  w.add_i8("t.i8", -100);
  w.add_u16("t.u16", 60000);
  w.add_i16("t.i16", -30000);
  w.add_u32("t.u32", 4000000000u);
  w.add_i32("t.i32", -2000000000);
  w.add_u64("t.u64", 1ull << 40);
  w.add_i64("t.i64", -(1ll << 40));
  w.add_f32("t.f32", 1e-5f);
  w.add_f64("t.f64", 0.1);
  w.add_bool("t.bool", true);
  w.add_string("t.empty", "");
  w.add_array("t.strings", std::vector<std::string>{"<s>", "", "\xe2\x96\x81the"});
  w.add_array("t.floats", std::vector<float>{0.0f, -1.5f});
  w.add_array("t.ints", std::vector<int32_t>{1, 3, 6});
  w.add_array("t.uints", std::vector<uint32_t>{7});
  w.add_array("t.none", std::vector<int32_t>{});

  // Odd sizes so every tensor needs padding before the next.
  w.add_tensor("norm", GgmlType::F32, {3}, [](uint8_t* p) {
    float v[3] = {1.0f, -2.0f, 0.25f};
    std::memcpy(p, v, sizeof v);
  });
  w.add_tensor("embd", GgmlType::F16, {3, 5}, [](uint8_t* p) {
    for (int i = 0; i < 15; ++i) {
      uint16_t h = hearth::f32_to_f16(float(i) - 7.0f);
      std::memcpy(p + 2 * i, &h, 2);
    }
  });
  std::vector<float> wq(2 * 64);
  for (size_t i = 0; i < wq.size(); ++i) wq[i] = std::sin(float(i)) * 3.0f;
  w.add_tensor("q8", GgmlType::Q8_0, {2, 64},
               [&](uint8_t* p) { hearth::io::quantize_q8_0(wq.data(), 128, p); });
  w.add_tensor("q4", GgmlType::Q4_0, {2, 64},
               [&](uint8_t* p) { hearth::io::quantize_q4_0(wq.data(), 128, p); });
  w.add_tensor("bf3d", GgmlType::BF16, {2, 1, 3}, [](uint8_t* p) {
    for (int i = 0; i < 6; ++i) {
      uint16_t h = hearth::f32_to_bf16(float(i) * -0.5f);
      std::memcpy(p + 2 * i, &h, 2);
    }
  });

  const hearth::TempDir dir;
  const std::string path = dir / "gguf_writer_test.gguf";
  w.write(path);
  std::string bytes = read_file(path);
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());

  Parsed p = parse(bytes);
  EXPECT_EQ(p.version, 3u);
  EXPECT_EQ(bytes.substr(0, w.header().size()), w.header());
  EXPECT_EQ(p.data_start, w.header().size());

  // Metadata: order, types, values.
  std::vector<std::string> keys = {"general.architecture", "t.u8", "t.i8", "t.u16", "t.i16",
                                   "t.u32", "t.i32", "t.u64", "t.i64", "t.f32", "t.f64",
                                   "t.bool", "t.empty", "t.strings", "t.floats", "t.ints",
                                   "t.uints", "t.none"};
  EXPECT_EQ(p.kv_order, keys);
  auto kv = [&](const char* k) { return p.kv.at(k); };
  EXPECT_EQ(kv("general.architecture"), std::make_pair(8u, json("llama")));
  EXPECT_EQ(kv("t.u8"), std::make_pair(0u, json(200)));
  EXPECT_EQ(kv("t.i8"), std::make_pair(1u, json(-100)));
  EXPECT_EQ(kv("t.u16"), std::make_pair(2u, json(60000)));
  EXPECT_EQ(kv("t.i16"), std::make_pair(3u, json(-30000)));
  EXPECT_EQ(kv("t.u32"), std::make_pair(4u, json(4000000000u)));
  EXPECT_EQ(kv("t.i32"), std::make_pair(5u, json(-2000000000)));
  EXPECT_EQ(kv("t.u64"), std::make_pair(10u, json(1ull << 40)));
  EXPECT_EQ(kv("t.i64"), std::make_pair(11u, json(-(1ll << 40))));
  EXPECT_EQ(kv("t.f32").first, 6u);
  EXPECT_EQ(kv("t.f32").second["f32"].get<float>(), 1e-5f);
  EXPECT_EQ(kv("t.f64").first, 12u);
  EXPECT_EQ(kv("t.f64").second["f64"].get<double>(), 0.1);
  EXPECT_EQ(kv("t.bool"), std::make_pair(7u, json(true)));
  EXPECT_EQ(kv("t.empty"), std::make_pair(8u, json("")));
  EXPECT_EQ(kv("t.strings").first, 9u);
  EXPECT_EQ(kv("t.strings").second,
            (json{{"array_of", 8}, {"items", {"<s>", "", "\xe2\x96\x81the"}}}));
  EXPECT_EQ(kv("t.floats").second["array_of"], 6);
  EXPECT_EQ(kv("t.floats").second["items"][1]["f32"].get<float>(), -1.5f);
  EXPECT_EQ(kv("t.ints").second, (json{{"array_of", 5}, {"items", {1, 3, 6}}}));
  EXPECT_EQ(kv("t.uints").second, (json{{"array_of", 4}, {"items", {7}}}));
  EXPECT_EQ(kv("t.none").second, (json{{"array_of", 5}, {"items", json::array()}}));

  // Tensor infos: declaration order, reversed shapes, types, aligned offsets.
  EXPECT_EQ(p.tensor_order, (std::vector<std::string>{"norm", "embd", "q8", "q4", "bf3d"}));
  const auto& t = p.tensors;
  EXPECT_EQ(t.at("norm").ne, (std::vector<uint64_t>{3}));
  EXPECT_EQ(t.at("embd").ne, (std::vector<uint64_t>{5, 3}));
  EXPECT_EQ(t.at("q8").ne, (std::vector<uint64_t>{64, 2}));
  EXPECT_EQ(t.at("bf3d").ne, (std::vector<uint64_t>{3, 1, 2}));
  EXPECT_EQ(t.at("norm").type, 0u);
  EXPECT_EQ(t.at("embd").type, 1u);
  EXPECT_EQ(t.at("q4").type, 2u);
  EXPECT_EQ(t.at("q8").type, 8u);
  EXPECT_EQ(t.at("bf3d").type, 30u);
  EXPECT_EQ(t.at("norm").offset, 0u);
  EXPECT_EQ(t.at("embd").offset, 32u);   // 12 bytes, padded to 32
  EXPECT_EQ(t.at("q8").offset, 64u);     // 30 bytes
  EXPECT_EQ(t.at("q4").offset, 64u + 160u);  // 4 blocks * 34 = 136 -> 160
  EXPECT_EQ(t.at("bf3d").offset, 224u + 96u);  // 4 * 18 = 72 -> 96
  EXPECT_EQ(p.data_start % 32, 0u);
  EXPECT_EQ(bytes.size(), p.data_start + 320 + 32);  // 12 bytes; the last tensor is padded too

  // Data.
  const char* data = bytes.data() + p.data_start;
  float norm[3];
  std::memcpy(norm, data, sizeof norm);
  EXPECT_EQ(norm[0], 1.0f);
  EXPECT_EQ(norm[2], 0.25f);
  for (int i = 12; i < 32; ++i) EXPECT_EQ(data[i], 0) << "padding byte " << i;
  EXPECT_EQ(f16(bytes, p.data_start + 32 + 2 * 14), 7.0f);
  auto q8 = dequant_q8_0(reinterpret_cast<const uint8_t*>(data + 64), 4);
  auto q4 = dequant_q4_0(reinterpret_cast<const uint8_t*>(data + 224), 4);
  for (size_t i = 0; i < wq.size(); ++i) {
    EXPECT_NEAR(q8[i], wq[i], 3.0 / 127 * 0.6) << i;
    EXPECT_NEAR(q4[i], wq[i], 3.0 / 8 * 1.01) << i;
  }
  uint16_t bf[6];
  std::memcpy(bf, data + 320, sizeof bf);
  EXPECT_EQ(hearth::bf16_to_f32(bf[5]), -2.5f);
}

TEST(GgufWriter, AlignmentFromMetadata) {
  GgufWriter w;
  w.set_alignment(64);
  w.add_tensor("a", GgmlType::F32, {1}, [](uint8_t* p) { std::memset(p, 0x11, 4); });
  w.add_tensor("b", GgmlType::F32, {1}, [](uint8_t* p) { std::memset(p, 0x22, 4); });
  const hearth::TempDir dir;
  const std::string path = dir / "gguf_align_test.gguf";
  w.write(path);
  std::string bytes = read_file(path);
  Parsed p = parse(bytes);
  EXPECT_EQ(p.kv.at("general.alignment"), std::make_pair(4u, json(64)));
  EXPECT_EQ(p.data_start % 64, 0u);
  EXPECT_EQ(p.tensors.at("b").offset, 64u);
  EXPECT_EQ(uint8_t(bytes[p.data_start + 64]), 0x22);
  EXPECT_EQ(bytes.size(), p.data_start + 128);
}

TEST(GgufWriter, RejectsBadInput) {
  GgufWriter w;
  w.add_u32("k", 1);
  EXPECT_THROW(w.add_string("k", "again"), std::invalid_argument);
  EXPECT_THROW(w.add_u32("", 1), std::invalid_argument);
  EXPECT_THROW(w.set_alignment(48), std::invalid_argument);
  EXPECT_THROW(w.set_alignment(4), std::invalid_argument);
  w.add_tensor("x", GgmlType::F32, {2}, [](uint8_t*) {});
  EXPECT_THROW(w.add_tensor("x", GgmlType::F32, {2}, [](uint8_t*) {}), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("", GgmlType::F32, {2}, [](uint8_t*) {}), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("q", GgmlType::Q4_0, {32, 48}, [](uint8_t*) {}),
               std::invalid_argument);  // rows of 48 are not whole blocks
  EXPECT_THROW(w.add_tensor("n", GgmlType::F32, {-1}, [](uint8_t*) {}), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("s", GgmlType::F32, {}, [](uint8_t*) {}), std::invalid_argument);
  EXPECT_THROW(w.write("/nonexistent-dir/x.gguf"), std::runtime_error);
  std::vector<float> x(33);
  uint8_t out[64];
  EXPECT_THROW(hearth::io::quantize_q8_0(x.data(), 33, out), std::invalid_argument);
  EXPECT_THROW(hearth::io::quantize_q4_0(x.data(), 33, out), std::invalid_argument);
}

TEST(GgmlQuant, Q8_0HandComputedBlock) {
  // amax = 127 -> d = 1 exactly; q = round(x), halves away from zero.
  float x[32] = {};
  x[0] = -127.0f;
  x[1] = 2.5f;    // 3
  x[2] = -2.5f;   // -3
  x[3] = 0.49f;   // 0
  x[4] = 126.6f;  // 127
  x[5] = -0.5f;   // -1
  x[31] = 10.2f;  // 10
  uint8_t b[34];
  hearth::io::quantize_q8_0(x, 32, b);
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3c00);  // f16 1.0
  int8_t q[32];
  std::memcpy(q, b + 2, 32);
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[1], 3);
  EXPECT_EQ(q[2], -3);
  EXPECT_EQ(q[3], 0);
  EXPECT_EQ(q[4], 127);
  EXPECT_EQ(q[5], -1);
  EXPECT_EQ(q[6], 0);
  EXPECT_EQ(q[31], 10);
  auto v = dequant_q8_0(b, 1);
  EXPECT_EQ(v[1], 3.0f);
  EXPECT_EQ(v[31], 10.0f);

  // amax = 0.5: d = 0.5 / 127 rounded to f16, and every q from x / d in f32.
  float y[32];
  for (int j = 0; j < 32; ++j) y[j] = 0.5f * float(j - 16) / 16.0f;  // -0.5 .. 0.46875
  hearth::io::quantize_q8_0(y, 32, b);
  float d = 0.5f / 127;
  EXPECT_EQ(f16(std::string(reinterpret_cast<char*>(b), 2), 0),
            hearth::f16_to_f32(hearth::f32_to_f16(d)));
  std::memcpy(q, b + 2, 32);
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[16], 0);
  EXPECT_EQ(q[20], 32);   // 0.125 * 254 = 31.75
  EXPECT_EQ(q[4], -95);   // -0.375 * 254 = -95.25
  EXPECT_EQ(q[31], 119);  // 0.46875 * 254 = 119.06

  // All zeros: d = 0, q = 0.
  float z[32] = {};
  hearth::io::quantize_q8_0(z, 32, b);
  for (int i = 0; i < 34; ++i) EXPECT_EQ(b[i], 0);
}

TEST(GgmlQuant, Q4_0HandComputedBlock) {
  // Largest magnitude -8 (negative): d = -8 / -8 = 1; q = min(15, int(x + 8.5)).
  float x[32] = {};
  x[0] = -8.0f;   // 0
  x[1] = 7.0f;    // 15
  x[2] = 7.4f;    // 15 (15.9 truncates to 15)
  x[3] = 0.49f;   // 8
  x[4] = 0.5f;    // 9
  x[5] = -0.51f;  // 7
  x[6] = -3.0f;   // 5
  x[16] = 8.0f;   // same magnitude as x[0], which came first: 16 -> clamped to 15
  x[17] = -1.0f;  // 7
  x[31] = 2.0f;   // 10
  uint8_t b[18];
  hearth::io::quantize_q4_0(x, 32, b);
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3c00);  // f16 1.0
  // Byte j: q[j] low nibble, q[j + 16] high nibble. q of a zero is 8.
  EXPECT_EQ(b[2 + 0], 0x0 | (15 << 4));
  EXPECT_EQ(b[2 + 1], 15 | (7 << 4));
  EXPECT_EQ(b[2 + 2], 15 | (8 << 4));
  EXPECT_EQ(b[2 + 3], 8 | (8 << 4));
  EXPECT_EQ(b[2 + 4], 9 | (8 << 4));
  EXPECT_EQ(b[2 + 5], 7 | (8 << 4));
  EXPECT_EQ(b[2 + 6], 5 | (8 << 4));
  EXPECT_EQ(b[2 + 15], 8 | (10 << 4));
  auto v = dequant_q4_0(b, 1);
  EXPECT_EQ(v[0], -8.0f);
  EXPECT_EQ(v[1], 7.0f);
  EXPECT_EQ(v[4], 1.0f);
  EXPECT_EQ(v[5], -1.0f);
  EXPECT_EQ(v[16], 7.0f);  // the clamped opposite extreme
  EXPECT_EQ(v[31], 2.0f);

  // Largest magnitude +16 (positive): d = -2, so codes run the other way.
  float y[32] = {};
  y[0] = 16.0f;    // 16 * -0.5 + 8.5 = 0.5 -> 0 -> (0 - 8) * -2 = 16
  y[1] = -14.0f;   // 7 + 8.5 = 15.5 -> 15 -> -14
  y[2] = 3.0f;     // -1.5 + 8.5 = 7 -> 7 -> 2
  y[20] = -15.9f;  // 7.95 + 8.5 = 16.45 -> 16 -> 15 -> -14
  hearth::io::quantize_q4_0(y, 32, b);
  EXPECT_EQ(b[0] | (b[1] << 8), 0xc000);  // f16 -2.0
  v = dequant_q4_0(b, 1);
  EXPECT_EQ(v[0], 16.0f);
  EXPECT_EQ(v[1], -14.0f);
  EXPECT_EQ(v[2], 2.0f);
  EXPECT_EQ(v[20], -14.0f);
  EXPECT_EQ(b[2 + 4], 8 | (15 << 4));

  // All zeros: d = 0.0f / -8 = -0.0 (f16 0x8000, as ggml writes it), every code 8.
  float z[32] = {};
  hearth::io::quantize_q4_0(z, 32, b);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[1], 0x80);
  for (int i = 2; i < 18; ++i) EXPECT_EQ(b[i], 0x88);
}

TEST(GgmlQuant, ErrorBoundsOnRandomRows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 0.02f);
  std::vector<float> x(32 * 64);
  for (auto& v : x) v = n(rng);
  std::vector<uint8_t> b8(64 * 34), b4(64 * 18);
  hearth::io::quantize_q8_0(x.data(), int64_t(x.size()), b8.data());
  hearth::io::quantize_q4_0(x.data(), int64_t(x.size()), b4.data());
  auto v8 = dequant_q8_0(b8.data(), 64);
  auto v4 = dequant_q4_0(b4.data(), 64);
  for (int blk = 0; blk < 64; ++blk) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[size_t(blk * 32 + j)]));
    for (int j = 0; j < 32; ++j) {
      size_t i = size_t(blk * 32 + j);
      // Half a step, plus the f16 rounding of the scale times the code.
      EXPECT_LE(std::fabs(v8[i] - x[i]), amax / 127 * (0.5f + 127.0f / 2048)) << i;
      // The opposite extreme can be a whole step off (code 15 is +7, not +8).
      EXPECT_LE(std::fabs(v4[i] - x[i]), amax / 8 * (1.0f + 8.0f / 2048)) << i;
    }
  }
}

}  // namespace
