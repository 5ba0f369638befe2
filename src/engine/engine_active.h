// A request the engine holds, from submit() to finish(): its decoding
// state, where its history stands in the KV cache, and what the prompt
// cache gave it. Private to the engine's sources (engine.cpp,
// engine_step.cpp, engine_prompt_cache.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/engine.h"

namespace hearth {

struct Engine::Active {
  GenerationRequest request;
  std::shared_ptr<RequestHandle> handle;
  Decoding decoding;
  int seq = -1;
  int64_t computed = 0;  // history tokens whose keys/values are in the KV cache
  bool started = false;  // admitted at least once
  bool done = false;     // finished in the last step (info.reason says how)
  cache::ChainCursor published;
  std::optional<uint64_t> checkpoint_key;  // set when it can be resumed after a cancel
  std::vector<TokenEvent> sent;             // the events sent, kept only with a checkpoint key
  std::chrono::steady_clock::time_point submitted, admitted, first_token;
  std::vector<float> pooled;  // an embedding request's pooled hidden state so far
  FinishInfo info;

  Active(GenerationRequest r, std::shared_ptr<RequestHandle> h, int64_t ctx_size)
      : request(std::move(r)),
        handle(std::move(h)),
        // The prompt moves into the decoding state; request.prompt is empty after.
        decoding(std::move(request.prompt), request.sampling,
                 {request.stop_ids, request.max_tokens, ctx_size}, request.constraint),
        submitted(std::chrono::steady_clock::now()) {}
  std::span<const int32_t> history() const { return decoding.history(); }
  int64_t behind() const { return int64_t(history().size()) - computed; }  // tokens not fed yet
  int64_t planned = 0;  // tokens it feeds in this step (plan_step)
  // Blocks past `computed` the SSD tier holds, read back a step's worth at
  // a time before the rest is computed.
  int64_t on_disk = 0;
  // The hashes of the full blocks of its history at admission: those past
  // `computed` are read back, or shared once another request computed them.
  std::vector<cache::BlockHash> chain;
  // Its first admission's lookup found no block in RAM, and it has neither
  // reused one since (read back, shared, attached when it resumed: a hit,
  // decided in count_cached) nor computed its prompt without, ended, or
  // been preempted after publishing blocks of its own (a miss): count_reuse.
  bool reuse_pending = false;
  // Positions [0, accounted) were counted as cached or computed by this
  // request: a block it takes from the cache counts only past it, so its
  // own blocks attached again after a preemption do not, and others' do,
  // whenever they come (count_cached).
  int64_t accounted = 0;
  int64_t restoring = 0;  // blocks it reads back in this step (plan_step)
  std::optional<uint64_t> no_room_at;  // the room_epoch() when it last found no room at admission
};

}  // namespace hearth
