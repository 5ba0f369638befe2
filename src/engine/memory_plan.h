// How much memory the engine's KV pool gets and how long a context it can
// then hold: the plan `hearth serve` makes at start, and `hearth fit` prints
// for a checkpoint without loading it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/kv_cache.h"

namespace hearth {

struct MemoryPlanInput {
  size_t weights_bytes = 0;
  size_t available_bytes = 0;  // memory available now (memory_available()), or the figure planned for
  size_t kv_budget = 0;        // the KV pool; 0: what fits beside the weights in 85% of available_bytes
  KvCacheShape shape;
  int64_t model_context = 0;  // max_position_embeddings
  int64_t ctx_size = 0;       // the context asked for; 0: the model's
  // The SSD tier's write queue cap (0: no tier). It fills when blocks are
  // made faster than the disk takes them, so it and two blocks more (one
  // being written, one being copied in) come out of the usable memory.
  uint64_t ssd_queue_bytes = 0;
};

// What the engine admits: the context it enforces and the memory it budgets.
struct AdmissionInfo {
  int64_t max_safe_context = 0;         // the longest sequence the KV pool can hold
  int64_t enforced_context_tokens = 0;  // the context limit requests get (ctx_size)
  size_t memory_budget_bytes = 0;       // the KV pool
  size_t usable_bytes = 0;              // the memory the default budget was taken from
  size_t ssd_queue_bytes = 0;           // kept out of it for the SSD write queue
  size_t weights_bytes = 0;
  int64_t kv_blocks = 0;                // the KV pool in blocks of shape.block_tokens
};

// The context shrinks to what the pool holds, so a lone request always fits;
// a budget too small for even a short context is raised to one.
AdmissionInfo plan_memory(const MemoryPlanInput& in);

// A /proc/meminfo field ("MemAvailable:", "MemTotal:") in bytes (0 if unreadable).
size_t meminfo(const std::string& field);
inline size_t memory_available() { return meminfo("MemAvailable:"); }

}  // namespace hearth
