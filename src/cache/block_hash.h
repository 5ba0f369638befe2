// The identity of a KV block: a hash chain over token runs. A full block's
// hash is XXH3-128 of its parent's hash and its token ids, and the chain
// starts from a root that covers everything else that changes the block's
// numbers (model files, KV entry type, block size, RoPE: see namespace_root).
// Equal hashes therefore mean equal KV, in RAM and on SSD across restarts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace hearth::cache {

struct BlockHash {
  uint64_t lo = 0, hi = 0;
  bool operator==(const BlockHash&) const = default;
  std::string hex() const;  // 32 lowercase hex digits, hi then lo
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return size_t(h.lo ^ (h.hi * 0x9E3779B97F4A7C15ull)); }
};

// The root of every chain in one namespace; `key` is the namespace's
// description (see namespace_root in prefix_cache.h).
BlockHash root_hash(std::string_view key);

// The hash of a block of `tokens` that follows the block hashed `parent`.
BlockHash chain_hash(const BlockHash& parent, std::span<const int32_t> tokens);

}  // namespace hearth::cache
