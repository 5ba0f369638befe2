#include "engine/memory_plan.h"

#include <algorithm>
#include <fstream>

namespace hearth {

AdmissionInfo plan_memory(const MemoryPlanInput& in) {
  AdmissionInfo a;
  a.weights_bytes = in.weights_bytes;
  if (in.ssd_queue_bytes > 0) a.ssd_queue_bytes = size_t(in.ssd_queue_bytes + 2 * KvCache::block_bytes(in.shape));
  const size_t share = in.available_bytes / 100 * 85;
  a.usable_bytes = share > a.ssd_queue_bytes ? share - a.ssd_queue_bytes : 0;
  const size_t beside_weights = a.usable_bytes > a.weights_bytes ? a.usable_bytes - a.weights_bytes : 0;
  const int64_t wanted_ctx = in.ctx_size > 0 ? std::min(in.ctx_size, in.model_context) : in.model_context;
  const int64_t min_blocks = KvCache::blocks_for_tokens(in.shape, std::min<int64_t>(wanted_ctx, 256));
  a.kv_blocks = std::max(KvCache::blocks_for_bytes(in.shape, in.kv_budget > 0 ? in.kv_budget : beside_weights),
                         min_blocks);
  a.memory_budget_bytes = size_t(a.kv_blocks) * KvCache::block_bytes(in.shape);
  a.max_safe_context = a.kv_blocks * in.shape.block_tokens;
  a.enforced_context_tokens = std::min(wanted_ctx, a.max_safe_context);
  return a;
}

size_t meminfo(const std::string& field) {
  std::ifstream f("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  while (f >> key >> kb) {
    if (key == field) return kb * 1024;
    f.ignore(256, '\n');
  }
  return 0;
}

}  // namespace hearth
