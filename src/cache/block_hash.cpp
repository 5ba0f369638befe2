#include "cache/block_hash.h"

// XXH3_state_t is an incomplete type unless this is defined (xxhash 0.8), and
// chain_hash keeps one on the stack.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <cstdio>
#include <vector>

namespace hearth::cache {

std::string BlockHash::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)hi, (unsigned long long)lo);
  return buf;
}

BlockHash root_hash(std::string_view key) {
  XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  return {h.low64, h.high64};
}

BlockHash chain_hash(const BlockHash& parent, std::span<const int32_t> tokens) {
  // Parent first, then the ids as little-endian int32 (x86-64 and aarch64
  // Linux are little-endian, so the bytes are the ids as stored).
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const uint64_t p[2] = {parent.lo, parent.hi};
  XXH3_128bits_update(&state, p, sizeof p);
  XXH3_128bits_update(&state, tokens.data(), tokens.size_bytes());
  XXH128_hash_t h = XXH3_128bits_digest(&state);
  return {h.low64, h.high64};
}

}  // namespace hearth::cache
