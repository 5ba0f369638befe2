// The memory plan serve makes at start and `hearth fit` prints: figures
// worked out by hand from the rule in engine/memory_plan.h, and a
// checkpoint's footprint read from its headers against the loaded model.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/memory_plan.h"
#include "model/llama.h"

namespace hearth {
namespace {

// 2 layers x 2 KV heads x 4 dims, F32, 32-token blocks: keys and values are
// 2 * 2 * 2 * 4 * 4 = 128 bytes a token, 4096 a block.
MemoryPlanInput small_model() {
  MemoryPlanInput in;
  in.shape = KvCacheShape{2, 2, 4, 32, DType::F32};
  in.model_context = 1000;
  in.weights_bytes = 20000;
  in.available_bytes = 100000;
  return in;
}

TEST(MemoryPlan, TheDefaultPoolIsWhatFitsBesideTheWeightsIn85PercentOfAvailable) {
  const AdmissionInfo a = plan_memory(small_model());
  EXPECT_EQ(a.usable_bytes, 85000u);
  EXPECT_EQ(a.kv_blocks, 15);  // (85000 - 20000) / 4096
  EXPECT_EQ(a.memory_budget_bytes, 15u * 4096);
  EXPECT_EQ(a.max_safe_context, 480);
  EXPECT_EQ(a.enforced_context_tokens, 480);  // cut from the model's 1000
}

// The SSD tier's write queue can fill: it and two blocks (one being
// written, one being copied in) come out of the usable memory.
TEST(MemoryPlan, TheSsdWriteQueueComesOutOfTheUsableMemory) {
  MemoryPlanInput in = small_model();
  in.ssd_queue_bytes = 10000;
  const AdmissionInfo a = plan_memory(in);
  EXPECT_EQ(a.ssd_queue_bytes, 10000u + 2 * 4096);
  EXPECT_EQ(a.usable_bytes, 85000u - 10000 - 2 * 4096);
  EXPECT_EQ(a.kv_blocks, 11);  // (66808 - 20000) / 4096
  in.ssd_queue_bytes = 1000000;  // more than there is: no pool beside the weights, the smallest one
  EXPECT_EQ(plan_memory(in).usable_bytes, 0u);
  EXPECT_EQ(plan_memory(in).kv_blocks, 8);
}

TEST(MemoryPlan, AGivenBudgetAndContextAreKeptWhereTheyFit) {
  MemoryPlanInput in = small_model();
  in.kv_budget = 40 * 4096 + 100;
  in.ctx_size = 700;
  const AdmissionInfo a = plan_memory(in);
  EXPECT_EQ(a.kv_blocks, 40);
  EXPECT_EQ(a.max_safe_context, 1280);
  EXPECT_EQ(a.enforced_context_tokens, 700);
  in.ctx_size = 5000;  // never past the model's
  EXPECT_EQ(plan_memory(in).enforced_context_tokens, 1000);
}

TEST(MemoryPlan, ABudgetTooSmallForAShortContextIsRaisedToOne) {
  MemoryPlanInput in = small_model();
  in.kv_budget = 4096;  // one block; 256 tokens need 8
  EXPECT_EQ(plan_memory(in).kv_blocks, 8);
  in.weights_bytes = 1000000;  // nothing beside the weights
  in.kv_budget = 0;
  const AdmissionInfo a = plan_memory(in);
  EXPECT_EQ(a.kv_blocks, 8);
  EXPECT_EQ(a.enforced_context_tokens, 256);
}

TEST(MemoryPlan, AFootprintFromTheHeadersIsWhatTheLoadedModelSays) {
  const auto dir = std::filesystem::path(HEARTH_SOURCE_DIR) / "models/stories260k";
  const CheckpointFootprint f = LlamaModel::footprint(dir);
  const auto model = LlamaModel::load(dir);
  EXPECT_EQ(f.weight_bytes, model->weight_bytes());
  EXPECT_EQ(f.native_kv_type, model->native_kv_type());
  EXPECT_EQ(f.config.num_layers, model->config().num_layers);
  EXPECT_EQ(f.weight_bytes, 1040128u);  // 260,032 F32 parameters
}

}  // namespace
}  // namespace hearth
