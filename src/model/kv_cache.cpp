#include "model/kv_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <stdexcept>

namespace hearth {

size_t KvCache::layer_block_bytes(const KvCacheShape& s) {
  const size_t entries = size_t(s.kv_heads) * s.block_tokens * s.head_dim;
  if (s.dtype == DType::I8)  // codes, then a scale per group
    return entries + entries / size_t(simd::kv_scale_group(s.head_dim)) * sizeof(float);
  return entries * dtype_size(s.dtype);
}

size_t KvCache::block_bytes(const KvCacheShape& s) {
  return 2 * size_t(s.layers) * layer_block_bytes(s);
}

int64_t KvCache::blocks_for_bytes(const KvCacheShape& s, size_t bytes) {
  return int64_t(bytes / block_bytes(s));
}

KvCache::KvCache(const KvCacheShape& shape, int64_t n_blocks) : shape_(shape), n_blocks_(n_blocks) {
  if (shape.dtype != DType::F32 && shape.dtype != DType::BF16 && shape.dtype != DType::I8)
    throw std::invalid_argument("KV cache entries must be F32, BF16 or I8");
  // I8 scales are floats right after the codes: whole floats of codes.
  if (shape.dtype == DType::I8 &&
      simd::kv_scales_offset(shape.kv_heads, shape.block_tokens, shape.head_dim) % sizeof(float))
    throw std::invalid_argument("I8 KV entries need kv_heads * block_tokens * head_dim to be a multiple of 4");
  layer_block_bytes_ = layer_block_bytes(shape);
  storage_bytes_ = size_t(n_blocks) * block_bytes(shape);
  if (storage_bytes_ > 0) {
    void* p = ::mmap(nullptr, storage_bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    storage_ = static_cast<uint8_t*>(p);
    // Huge pages where the kernel allows them on request: a block is written
    // (prefill, a restore from SSD) with one fault per 2 MB, not per 4 KB.
    ::madvise(storage_, storage_bytes_, MADV_HUGEPAGE);
  }
  free_.reserve(size_t(n_blocks));
  // Low ids on top: blocks are reused most-recently-freed first, so the
  // resident part of the pool stays as small as the peak use.
  for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(int32_t(b));
  refs_.assign(size_t(n_blocks), 0);
}

KvCache::~KvCache() {
  if (storage_) ::munmap(storage_, storage_bytes_);
}

uint8_t* KvCache::layer_data(int layer, int32_t block, bool value) const {
  size_t offset = (size_t(block) * shape_.layers + layer) * 2 + (value ? 1 : 0);
  return storage_ + offset * layer_block_bytes_;
}

std::span<uint8_t> KvCache::block_data(int32_t block) {
  return {layer_data(0, block, false), block_bytes()};
}

std::optional<int32_t> KvCache::allocate() {
  if (free_.empty()) return std::nullopt;
  int32_t b = free_.back();
  free_.pop_back();
  refs_[size_t(b)] = 1;
  return b;
}

void KvCache::unref(int32_t block) {
  int32_t& r = refs_.at(size_t(block));
  if (r <= 0) throw std::logic_error("KV block " + std::to_string(block) + " released twice");
  ++references_dropped_;
  if (--r == 0) free_.push_back(block);
}

void KvCache::discard_free(int64_t n) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (int64_t i = 0; i < n && i < int64_t(free_.size()); ++i) {
    // Whole pages inside the block only: a neighbour may share its edge pages.
    const uintptr_t begin = reinterpret_cast<uintptr_t>(block_data(free_[free_.size() - 1 - size_t(i)]).data());
    const uintptr_t first = (begin + page - 1) / page * page, end = (begin + block_bytes()) / page * page;
    if (end > first) ::madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
  }
}

std::optional<int32_t> KvCache::copy_block(int32_t block) {
  std::optional<int32_t> b = allocate();
  if (b) std::memcpy(block_data(*b).data(), block_data(block).data(), block_bytes());
  return b;
}

int KvCache::create_sequence() {
  // Ids wrap rather than overflow (a server up for months creates one per
  // admission attempt), skipping the few still in use.
  int id;
  do {
    id = next_seq_;
    next_seq_ = next_seq_ == std::numeric_limits<int>::max() ? 0 : next_seq_ + 1;
  } while (seqs_.contains(id));
  Sequence& s = seqs_[id];
  s.k_ptrs.resize(shape_.layers);
  s.v_ptrs.resize(shape_.layers);
  return id;
}

void KvCache::release(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  const std::vector<int32_t>& blocks = it->second.blocks;
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) unref(*b);
  seqs_.erase(it);
}

bool KvCache::reserve(int seq, int64_t n_tokens) {
  Sequence& s = seqs_.at(seq);
  const int64_t need = blocks_for_tokens(shape_, n_tokens) - int64_t(s.blocks.size());
  if (need <= 0) return true;
  if (need > int64_t(free_.size())) return false;
  s.make_room(size_t(need));
  for (int64_t i = 0; i < need; ++i) {
    int32_t b = *allocate();
    s.blocks.push_back(b);
    for (int l = 0; l < shape_.layers; ++l) {
      s.k_ptrs[l].push_back(layer_data(l, b, false));
      s.v_ptrs[l].push_back(layer_data(l, b, true));
    }
  }
  return true;
}

void KvCache::attach(int seq, std::span<const int32_t> blocks) {
  Sequence& s = seqs_.at(seq);
  if (s.length != capacity(seq))
    throw std::logic_error("KV blocks can only be attached after full blocks");
  s.make_room(blocks.size());
  for (int32_t b : blocks) {
    retain(b);
    s.blocks.push_back(b);
    for (int l = 0; l < shape_.layers; ++l) {
      s.k_ptrs[l].push_back(layer_data(l, b, false));
      s.v_ptrs[l].push_back(layer_data(l, b, true));
    }
  }
  s.length += int64_t(blocks.size()) * shape_.block_tokens;
}

void KvCache::share_block(int seq, size_t i, int32_t block) {
  Sequence& s = seqs_.at(seq);
  if (int64_t(i) * shape_.block_tokens < s.length) throw std::logic_error("only a block not written yet is shared");
  const int32_t own = s.blocks.at(i);
  retain(block);
  s.blocks[i] = block;
  for (int l = 0; l < shape_.layers; ++l) {
    s.k_ptrs[l][i] = layer_data(l, block, false);
    s.v_ptrs[l][i] = layer_data(l, block, true);
  }
  unref(own);
}

namespace {

// Codes of n entries x[i] and their scale, which maps the largest magnitude
// to 127 (codes round to nearest, ties to even); codes[i * stride]. A NaN
// or infinity makes the scale NaN, so the group reads back as NaN, as F32
// and BF16 entries would; codes are clamped, since a subnormal largest
// magnitude rounds the scale coarsely.
float quantize_group(const float* x, int n, int8_t* codes, size_t stride) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::isfinite(x[i]) ? std::max(amax, std::fabs(x[i])) : NAN;
  const float scale = amax / 127.0f;
  const bool usable = std::isfinite(scale) && scale > 0;
  for (int i = 0; i < n; ++i)
    codes[i * stride] = usable ? int8_t(std::clamp(std::nearbyint(x[i] / scale), -127.0f, 127.0f)) : int8_t(0);
  return scale;
}

}  // namespace

void KvCache::store(int layer, int seq, int64_t pos, const float* k, const float* v) {
  const Sequence& s = seqs_.at(seq);
  const int bt = shape_.block_tokens, hd = shape_.head_dim;
  const int32_t block = s.blocks.at(size_t(pos / bt));
  // A shared block holds other sequences' (or the cache's) positions too.
  if (refs_[size_t(block)] != 1) throw std::logic_error("write to a shared KV block");
  const size_t slot = size_t(pos % bt);
  uint8_t* kb = layer_data(layer, block, false);
  uint8_t* vb = layer_data(layer, block, true);
  // Keys go in transposed ([head][dim][slot]); values row by row.
  if (shape_.dtype == DType::I8) {
    const size_t scales_at = simd::kv_scales_offset(shape_.kv_heads, bt, hd);
    const int group = simd::kv_scale_group(hd), groups = hd / group;
    auto* key_scales = reinterpret_cast<float*>(kb + scales_at);
    auto* value_scales = reinterpret_cast<float*>(vb + scales_at);
    for (int h = 0; h < shape_.kv_heads; ++h)
      for (int g = 0; g < groups; ++g) {
        const int d0 = g * group;
        key_scales[(size_t(h) * groups + g) * bt + slot] =
            quantize_group(k + h * hd + d0, group,
                           reinterpret_cast<int8_t*>(kb) + (size_t(h) * hd + d0) * bt + slot, bt);
        value_scales[(size_t(h) * bt + slot) * groups + g] =
            quantize_group(v + h * hd + d0, group,
                           reinterpret_cast<int8_t*>(vb) + (size_t(h) * bt + slot) * hd + d0, 1);
      }
    return;
  }
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
