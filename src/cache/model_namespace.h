// The cache namespace of a served model: a description of everything that
// changes the numbers in its KV blocks, hashed into the root of every block
// chain (block_hash.h). It is derived from the files, not chosen per process,
// so the SSD tier's blocks match again after a restart and never match
// another model, KV entry type or block size.
#pragma once

#include <cstdint>
#include <string>

#include "model/kv_cache.h"
#include "model/llama.h"

namespace hearth::cache {

// "hearth-kv/1 f32 block=32 layout=<hash> config=<hash> weights=<hash>
// kernels=avx2,widen-f32"; the weights hash covers each file's size,
// modification time, header and samples spread over its data, so it costs a
// few MB of reads however large the checkpoint is; the kernels are
// int8_target() and bf16_target().
std::string model_namespace(const LlamaModel& model, const KvCacheShape& kv);

// The hash of one block that KvCache::store filled with fixed entries: how
// this build lays out and rounds KV entries (an int8 scale's place, a
// rounding rule). A change to either changes every namespace by itself, so
// SSD records of an older layout are never read as this one's.
uint64_t kv_layout_fingerprint(const KvCacheShape& shape);

}  // namespace hearth::cache
