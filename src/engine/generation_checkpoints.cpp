#include "engine/generation_checkpoints.h"

#include <xxhash.h>

#include <cstring>
#include <string>

#include "engine/engine.h"

namespace hearth {

namespace {

// Appends the bytes of trivially copyable values.
struct KeyBytes {
  std::string bytes;
  template <typename T>
  void add(const T& v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void add_all(const std::vector<T>& v) {
    add(v.size());
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
};

}  // namespace

std::optional<uint64_t> GenerationCheckpoints::key(const GenerationRequest& r) {
  const SamplingParams& s = r.sampling;
  if (s.temperature > 0 && !s.seed) return std::nullopt;
  // A grammar is not part of the key (it has no cheap identity): a
  // constrained request is never resumed from a checkpoint.
  if (r.constraint) return std::nullopt;
  KeyBytes k;
  k.add_all(r.prompt);
  k.add(s.temperature), k.add(s.top_p), k.add(s.top_k), k.add(s.min_p);
  k.add(s.seed.value_or(0)), k.add(s.seed.has_value());
  k.add(s.xtc_probability), k.add(s.xtc_threshold), k.add_all(s.xtc_special_tokens);
  k.add_all(s.logit_bias);
  k.add(s.repetition_penalty), k.add(s.repetition_context_size);
  k.add(s.presence_penalty), k.add(s.presence_context_size);
  k.add(s.frequency_penalty), k.add(s.frequency_context_size);
  k.add(r.max_tokens), k.add_all(r.stop_ids), k.add(r.top_logprobs);
  return XXH3_64bits(k.bytes.data(), k.bytes.size());
}

void GenerationCheckpoints::save(uint64_t key, GenerationCheckpoint checkpoint) {
  checkpoint.decoding.release_scratch();
  size_t bytes = sizeof(Item) + checkpoint.decoding.history().size() * sizeof(int32_t);
  for (const TokenEvent& ev : checkpoint.events) bytes += sizeof ev + ev.top.size() * sizeof ev.top[0];
  std::lock_guard lock(mutex_);
  auto drop = [&](std::list<Item>::iterator it) {
    bytes_ -= it->bytes;
    return items_.erase(it);
  };
  for (auto it = items_.begin(); it != items_.end();) it = it->key == key ? drop(it) : std::next(it);
  if (bytes > max_bytes_ / 4) return;
  items_.push_front({key, std::move(checkpoint), bytes});
  bytes_ += bytes;
  while (items_.size() > max_entries_ || bytes_ > max_bytes_) drop(std::prev(items_.end()));
  ++saved_;
}

std::optional<GenerationCheckpoint> GenerationCheckpoints::take(uint64_t key, std::span<const int32_t> prompt) {
  std::lock_guard lock(mutex_);
  for (auto it = items_.begin(); it != items_.end(); ++it)
    if (it->key == key && std::ranges::equal(it->checkpoint.decoding.prompt(), prompt)) {
      GenerationCheckpoint c = std::move(it->checkpoint);
      bytes_ -= it->bytes;
      items_.erase(it);
      ++resumed_;
      return c;
    }
  return std::nullopt;
}

int64_t GenerationCheckpoints::entries() const {
  std::lock_guard lock(mutex_);
  return int64_t(items_.size());
}

int64_t GenerationCheckpoints::saved() const {
  std::lock_guard lock(mutex_);
  return saved_;
}

size_t GenerationCheckpoints::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

int64_t GenerationCheckpoints::resumed() const {
  std::lock_guard lock(mutex_);
  return resumed_;
}

}  // namespace hearth
