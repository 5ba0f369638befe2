#include "cache/model_namespace.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/bf16_matmul.h"
#include "core/int8_matmul.h"

namespace hearth::cache {

namespace {

// Bumped whenever the KV layout in a block changes.
constexpr const char* kFormat = "hearth-kv/1";

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

uint64_t file_fingerprint(const uint8_t* data, size_t size) {
  constexpr size_t kHead = size_t(1) << 20, kSample = 4096, kSamples = 64;
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, &size, sizeof size);
  XXH3_64bits_update(&st, data, std::min(size, kHead));  // the header and the first tensors
  if (size > kHead + kSample)
    for (size_t i = 0; i < kSamples; ++i) {
      size_t at = kHead + (size - kHead - kSample) / (kSamples - 1) * i;
      XXH3_64bits_update(&st, data + at, kSample);
    }
  return XXH3_64bits_digest(&st);
}

}  // namespace

std::string model_namespace(const LlamaModel& model, const KvCacheShape& kv) {
  std::ifstream config(model.dir() / "config.json", std::ios::binary);
  std::stringstream text;
  text << config.rdbuf();
  const std::string c = text.str();
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  // The samples miss an edit of a few rows in place (a merged adapter); the
  // modification time does not. A copy made without keeping it only misses.
  for (const auto& f : model.weights().files()) {
    const uint64_t h[2] = {file_fingerprint(f->data(), f->size()), uint64_t(f->mtime_ns())};
    XXH3_64bits_update(&st, h, sizeof h);
  }
  // The kernels: int8 activations and the float path give slightly different
  // KV for the same tokens, and equal block hashes promise equal KV.
  return std::string(kFormat) + " " + std::string(dtype_name(kv.dtype)) +
         " block=" + std::to_string(kv.block_tokens) +
         " config=" + hex64(XXH3_64bits(c.data(), c.size())) +
         " weights=" + hex64(XXH3_64bits_digest(&st)) + " kernels=" + int8_target() + "," +
         bf16_target();
}

}  // namespace hearth::cache
