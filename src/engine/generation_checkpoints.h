// Generation checkpoints: when a deterministic request (greedy, or sampled
// with a seed) is cancelled mid-generation (the client left, the connection
// dropped), its decoding state (sampler, history, stop rules) and the token
// events it sent are kept. Its KV is already in the prompt cache, published
// block by block as it filled. The same request sent again replays those
// events at once and resumes from the pending token, so it produces exactly
// the text an uninterrupted run would have; a request that runs to its end
// leaves nothing behind. Kept in memory, a bounded number and bytes (the
// history and the events: a long one with top logprobs is megabytes),
// oldest out first.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "engine/decoding.h"

namespace hearth {

struct GenerationRequest;
struct TokenEvent;

struct GenerationCheckpoint {
  Decoding decoding;              // as it stood after the last token sent
  std::vector<TokenEvent> events;  // every token sent so far, to replay
};

class GenerationCheckpoints {
 public:
  explicit GenerationCheckpoints(size_t max_entries = 64, size_t max_bytes = size_t(256) << 20)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // What identifies a request for resumption: its prompt, sampling (seed
  // included), limits, stop ids and logprobs. nullopt when sampling without
  // a seed (nothing to resume: another run would differ anyway).
  static std::optional<uint64_t> key(const GenerationRequest& request);

  // One over a quarter of max_bytes is not kept.
  void save(uint64_t key, GenerationCheckpoint checkpoint);
  // Removes and returns the checkpoint of `key` (counted as resumed), if
  // there is one and it was made for `prompt` (not another request whose
  // key collides).
  std::optional<GenerationCheckpoint> take(uint64_t key, std::span<const int32_t> prompt);

  int64_t entries() const;
  int64_t saved() const;
  int64_t resumed() const;
  size_t bytes() const;

 private:
  struct Item {
    uint64_t key;
    GenerationCheckpoint checkpoint;
    size_t bytes;
  };
  size_t max_entries_, max_bytes_;
  mutable std::mutex mutex_;
  std::list<Item> items_;  // newest first
  size_t bytes_ = 0;
  int64_t saved_ = 0, resumed_ = 0;
};

}  // namespace hearth
