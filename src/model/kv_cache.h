// KV memory: one pool of fixed-size blocks shared by every sequence, and a
// block table per sequence. Block b holds, for every layer, the keys and the
// values of block_tokens consecutive positions: keys [kv_heads][head_dim]
// [block_tokens], values [kv_heads][block_tokens][head_dim] (see KvView).
// The attention kernel reads a sequence through its table (core/ops.h KvView).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/dtype.h"
#include "core/ops.h"

namespace hearth {

struct KvCacheShape {
  int layers = 0, kv_heads = 0, head_dim = 0;
  int block_tokens = 32;
  DType dtype = DType::F32;  // F32 or BF16
};

class KvCache {
 public:
  // The pool's memory is reserved at once but only becomes resident as
  // blocks are first written, so a generous pool costs nothing until used.
  KvCache(const KvCacheShape& shape, int64_t n_blocks);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  int create_sequence();
  // Frees the sequence's blocks. Unknown ids are ignored.
  void release(int seq);
  // Makes room for n_tokens positions in total; false if the pool is out of blocks
  // (then nothing was allocated).
  bool reserve(int seq, int64_t n_tokens);
  int64_t length(int seq) const { return seqs_.at(seq).length; }
  void set_length(int seq, int64_t n) { seqs_.at(seq).length = n; }

  // Stores the key and value of one position (kv_heads * head_dim floats each).
  void store(int layer, int seq, int64_t pos, const float* k, const float* v);
  KvView view(int layer, int seq) const;

  int64_t blocks_total() const { return n_blocks_; }
  int64_t blocks_free() const { return int64_t(free_.size()); }
  int64_t sequences() const { return int64_t(seqs_.size()); }
  size_t bytes() const { return storage_bytes_; }
  const KvCacheShape& shape() const { return shape_; }

  // Blocks needed for a byte budget, for sizing the pool.
  static int64_t blocks_for_bytes(const KvCacheShape& shape, size_t bytes);
  static size_t block_bytes(const KvCacheShape& shape);

 private:
  struct Sequence {
    std::vector<int32_t> blocks;
    int64_t length = 0;
    std::vector<std::vector<const void*>> k_ptrs, v_ptrs;  // [layer][block]
  };
  uint8_t* block_data(int layer, int32_t block, bool value) const;

  KvCacheShape shape_;
  int64_t n_blocks_;
  size_t layer_block_bytes_;  // one layer's K (or V) of one block
  uint8_t* storage_ = nullptr;
  size_t storage_bytes_ = 0;
  std::vector<int32_t> free_;
  std::map<int, Sequence> seqs_;
  int next_seq_ = 0;
};

}  // namespace hearth
