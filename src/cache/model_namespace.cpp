#include "cache/model_namespace.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/amx.h"
#include "core/bf16_matmul.h"
#include "core/int8_matmul.h"
#include "core/simd.h"

namespace hearth::cache {

namespace {

// Bumped whenever what a namespace describes changes meaning. The layout of
// a block's entries needs no bump: kv_layout_fingerprint tracks it.
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

uint64_t kv_layout_fingerprint(const KvCacheShape& shape) {
  KvCache kv(shape, 1);
  const int seq = kv.create_sequence();
  kv.reserve(seq, shape.block_tokens);
  const size_t n = size_t(shape.kv_heads) * size_t(shape.head_dim);
  std::vector<float> k(n), v(n);
  for (int l = 0; l < shape.layers; ++l)
    for (int p = 0; p < shape.block_tokens; ++p) {
      // Exact values of both signs and of sizes from 1/64 to ~100, varying
      // across heads, dimensions, positions and layers, so that rounding
      // and per-group scales show in the bytes.
      for (size_t i = 0; i < n; ++i) {
        const uint32_t h = uint32_t(i) * 2654435761u + uint32_t(p) * 40503u + uint32_t(l) * 977u;
        k[i] = float(int(h % 2001) - 1000) / 64.0f * float(1 + i % 7);
        v[i] = float(int((h >> 11) % 2001) - 1000) / 64.0f * float(1 + (i + 3) % 5);
      }
      kv.store(l, seq, p, k.data(), v.data());
    }
  const std::span<const uint8_t> bytes = kv.block_data(kv.blocks(seq)[0]);
  return XXH3_64bits(bytes.data(), bytes.size());
}

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
  // The kernels: int8 activations or the float path, BF16 on the tile unit
  // or not, and Highway's target (norms, attention and dense matmuls sum in
  // its lanes) each give slightly different KV for the same tokens, and
  // equal block hashes promise equal KV.
  const bool bf16_on_amx = bf16_target() == std::string_view("avx512-bf16") && amx_bf16_available();
  return std::string(kFormat) + " " + std::string(dtype_name(kv.dtype)) +
         " block=" + std::to_string(kv.block_tokens) + " layout=" + hex64(kv_layout_fingerprint(kv)) +
         " config=" + hex64(XXH3_64bits(c.data(), c.size())) +
         " weights=" + hex64(XXH3_64bits_digest(&st)) + " kernels=" + int8_target() + "," +
         bf16_target() + (bf16_on_amx ? "+amx" : "") + "," + simd::target_name();
}

}  // namespace hearth::cache
