// The cache namespace must change whenever the KV a model computes can:
// weights rewritten in place with the same size (a merged adapter touching a
// few rows that the sampled fingerprint misses), or other kernels.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cache/model_namespace.h"
#include "core/bf16_matmul.h"
#include "core/int8_matmul.h"
#include "core/simd.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace hearth::cache {
namespace {

const fs::path kModel = fs::path(HEARTH_SOURCE_DIR) / "models/stories260k";

// The bundled model's files, copied into `dir`.
const TempDir& copy_model(const TempDir& dir) {
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(kModel / f, dir / f);
  return dir;
}

std::string namespace_of(const fs::path& dir) {
  const auto model = LlamaModel::load(dir);
  return model_namespace(*model, model->kv_shape());
}

TEST(ModelNamespace, SameFilesSameNamespace) {
  const TempDir dir;
  copy_model(dir);
  EXPECT_EQ(namespace_of(dir), namespace_of(dir));
}

TEST(ModelNamespace, WeightsRewrittenInPlaceChangeIt) {
  const TempDir dir;
  copy_model(dir);
  const std::string before = namespace_of(dir);
  const fs::path weights = dir / "model.safetensors";
  fs::last_write_time(weights, fs::last_write_time(weights) + std::chrono::seconds(1));
  EXPECT_NE(namespace_of(dir), before);
}

TEST(ModelNamespace, ItNamesTheKernels) {
  const TempDir dir;
  const std::string ns = namespace_of(copy_model(dir));
  EXPECT_NE(ns.find(std::string(" kernels=") + int8_target() + "," + bf16_target()),
            std::string::npos)
      << ns;
  EXPECT_TRUE(ns.ends_with(std::string(",") + simd::target_name())) << ns;
}

// The layout fingerprint hashes only bytes the writer sets (the same in a
// fresh pool each time, or a restart would never find its records) and
// tells the entry types apart.
TEST(ModelNamespace, ItFingerprintsTheKvLayout) {
  KvCacheShape shape{.layers = 3, .kv_heads = 2, .head_dim = 64, .block_tokens = 32, .dtype = DType::I8};
  const uint64_t int8 = kv_layout_fingerprint(shape);
  EXPECT_EQ(kv_layout_fingerprint(shape), int8);
  shape.dtype = DType::BF16;
  const uint64_t bf16 = kv_layout_fingerprint(shape);
  shape.dtype = DType::F32;
  const uint64_t f32 = kv_layout_fingerprint(shape);
  EXPECT_NE(int8, bf16);
  EXPECT_NE(int8, f32);
  EXPECT_NE(bf16, f32);
  shape.dtype = DType::I8, shape.head_dim = 96;  // 3 scale groups a head, not 2
  EXPECT_NE(kv_layout_fingerprint(shape), int8);

  const TempDir dir;
  const auto model = LlamaModel::load(copy_model(dir));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)kv_layout_fingerprint(model->kv_shape()));
  EXPECT_NE(model_namespace(*model, model->kv_shape()).find(std::string(" layout=") + hex), std::string::npos);
}

}  // namespace
}  // namespace hearth::cache
