// What the engine tests share.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/engine.h"

namespace hearth {

// Every sequence is gone and each block is free or held only by the cache
// (the engine releases a request's blocks as it closes its handle, which a
// client may see a moment before).
inline void expect_kv_returned(const Engine& engine) {
  // Cancelled requests still queued are finished by the engine's next
  // steps, which a sanitizer build takes its time over: wait up to 10 s.
  EngineStats s = engine.stats();
  for (int i = 0; i < 1000 && (s.sequences != 0 || s.running != 0 || s.queued != 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = engine.stats();
  }
  EXPECT_EQ(s.sequences, 0);
  EXPECT_EQ(s.kv_blocks_free + s.kv_blocks_cached, s.kv_blocks_total);
  EXPECT_EQ(s.running, 0);
}

// The tokens a request generates, until it finishes.
inline std::vector<int32_t> collect(RequestHandle& h) {
  std::vector<int32_t> out;
  while (auto ev = h.next()) out.push_back(ev->token);
  return out;
}

inline GenerationRequest greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  return r;
}

}  // namespace hearth
