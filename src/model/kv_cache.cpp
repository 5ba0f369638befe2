#include "model/kv_cache.h"

#include <sys/mman.h>

#include <new>
#include <stdexcept>

namespace hearth {

size_t KvCache::block_bytes(const KvCacheShape& s) {
  return 2 * size_t(s.layers) * s.kv_heads * s.block_tokens * s.head_dim * dtype_size(s.dtype);
}

int64_t KvCache::blocks_for_bytes(const KvCacheShape& s, size_t bytes) {
  return int64_t(bytes / block_bytes(s));
}

KvCache::KvCache(const KvCacheShape& shape, int64_t n_blocks) : shape_(shape), n_blocks_(n_blocks) {
  if (shape.dtype != DType::F32 && shape.dtype != DType::BF16)
    throw std::invalid_argument("KV cache entries must be F32 or BF16");
  layer_block_bytes_ =
      size_t(shape.kv_heads) * shape.block_tokens * shape.head_dim * dtype_size(shape.dtype);
  storage_bytes_ = size_t(n_blocks) * block_bytes(shape);
  if (storage_bytes_ > 0) {
    void* p = ::mmap(nullptr, storage_bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    storage_ = static_cast<uint8_t*>(p);
  }
  free_.reserve(size_t(n_blocks));
  for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(int32_t(b));
}

KvCache::~KvCache() {
  if (storage_) ::munmap(storage_, storage_bytes_);
}

uint8_t* KvCache::block_data(int layer, int32_t block, bool value) const {
  size_t offset = (size_t(block) * shape_.layers + layer) * 2 + (value ? 1 : 0);
  return storage_ + offset * layer_block_bytes_;
}

int KvCache::create_sequence() {
  int id = next_seq_++;
  Sequence& s = seqs_[id];
  s.k_ptrs.resize(shape_.layers);
  s.v_ptrs.resize(shape_.layers);
  return id;
}

void KvCache::release(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  for (int32_t b : it->second.blocks) free_.push_back(b);
  seqs_.erase(it);
}

bool KvCache::reserve(int seq, int64_t n_tokens) {
  Sequence& s = seqs_.at(seq);
  int64_t need =
      (n_tokens + shape_.block_tokens - 1) / shape_.block_tokens - int64_t(s.blocks.size());
  if (need <= 0) return true;
  if (need > int64_t(free_.size())) return false;
  for (int64_t i = 0; i < need; ++i) {
    int32_t b = free_.back();
    free_.pop_back();
    s.blocks.push_back(b);
    for (int l = 0; l < shape_.layers; ++l) {
      s.k_ptrs[l].push_back(block_data(l, b, false));
      s.v_ptrs[l].push_back(block_data(l, b, true));
    }
  }
  return true;
}

void KvCache::store(int layer, int seq, int64_t pos, const float* k, const float* v) {
  const Sequence& s = seqs_.at(seq);
  const int bt = shape_.block_tokens, hd = shape_.head_dim;
  const int32_t block = s.blocks.at(size_t(pos / bt));
  const size_t slot = size_t(pos % bt);
  uint8_t* kb = block_data(layer, block, false);
  uint8_t* vb = block_data(layer, block, true);
  // Keys go in transposed ([head][dim][slot]); values row by row.
  auto put = [&](auto* keys, auto* values, auto convert) {
    for (int h = 0; h < shape_.kv_heads; ++h) {
      const float *kh = k + h * hd, *vh = v + h * hd;
      auto* key_col = keys + size_t(h) * hd * bt + slot;
      auto* value_row = values + (size_t(h) * bt + slot) * hd;
      for (int d = 0; d < hd; ++d) key_col[size_t(d) * bt] = convert(kh[d]);
      for (int d = 0; d < hd; ++d) value_row[d] = convert(vh[d]);
    }
  };
  if (shape_.dtype == DType::F32)
    put(reinterpret_cast<float*>(kb), reinterpret_cast<float*>(vb), [](float x) { return x; });
  else
    put(reinterpret_cast<uint16_t*>(kb), reinterpret_cast<uint16_t*>(vb), f32_to_bf16);
}

KvView KvCache::view(int layer, int seq) const {
  const Sequence& s = seqs_.at(seq);
  return KvView{s.k_ptrs[layer].data(), s.v_ptrs[layer].data(), shape_.block_tokens,
                shape_.kv_heads,        shape_.head_dim,        shape_.dtype};
}

}  // namespace hearth
