// The cache namespace must change whenever the KV a model computes can:
// weights rewritten in place with the same size (a merged adapter touching a
// few rows that the sampled fingerprint misses), or other kernels.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "cache/model_namespace.h"
#include "core/bf16_matmul.h"
#include "core/int8_matmul.h"

namespace fs = std::filesystem;

namespace hearth::cache {
namespace {

const fs::path kModel = fs::path(HEARTH_SOURCE_DIR) / "models/stories260k";

fs::path copy_of_model() {
  const fs::path dir = fs::path(testing::TempDir()) / "cache_model_namespace_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(kModel / f, dir / f);
  return dir;
}

std::string namespace_of(const fs::path& dir) {
  const auto model = LlamaModel::load(dir);
  return model_namespace(*model, model->kv_shape());
}

TEST(ModelNamespace, SameFilesSameNamespace) {
  const fs::path dir = copy_of_model();
  EXPECT_EQ(namespace_of(dir), namespace_of(dir));
}

TEST(ModelNamespace, WeightsRewrittenInPlaceChangeIt) {
  const fs::path dir = copy_of_model();
  const std::string before = namespace_of(dir);
  const fs::path weights = dir / "model.safetensors";
  fs::last_write_time(weights, fs::last_write_time(weights) + std::chrono::seconds(1));
  EXPECT_NE(namespace_of(dir), before);
}

TEST(ModelNamespace, ItNamesTheKernels) {
  const std::string ns = namespace_of(copy_of_model());
  EXPECT_NE(ns.find(std::string(" kernels=") + int8_target() + "," + bf16_target()),
            std::string::npos)
      << ns;
}

}  // namespace
}  // namespace hearth::cache
