// KV memory: one pool of fixed-size blocks shared by every sequence, and a
// block table per sequence. Block b holds, for every layer, the keys and the
// values of block_tokens consecutive positions: keys [kv_heads][head_dim]
// [block_tokens], values [kv_heads][block_tokens][head_dim] (see KvView).
// The attention kernel reads a sequence through its table (core/ops.h KvView).
//
// Blocks are reference-counted so that equal prefixes share them: a sequence
// holds one reference per block in its table, and the prompt cache (cache/)
// holds one on each block it indexes. Only full blocks are shared, and a
// sequence only writes positions past its shared ones, so a shared block is
// never written (store() checks it); copy_block() gives a private copy where
// a sequence must rewrite the end of one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/ops.h"

namespace hearth {

struct KvCacheShape {
  int layers = 0, kv_heads = 0, head_dim = 0;
  int block_tokens = 32;
  DType dtype = DType::F32;  // F32, BF16 or I8 (codes and scales: core/ops.h KvView)
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
  // Drops the sequence's references (last block first); blocks nobody else
  // holds go back to the free list. Unknown ids are ignored.
  void release(int seq);
  // Makes room for n_tokens positions in total with blocks from the free
  // list; false if there are not enough (then nothing was allocated).
  bool reserve(int seq, int64_t n_tokens);
  // Appends full blocks to a sequence whose blocks are all full (a prefix
  // hit), taking a reference on each; the length grows by whole blocks.
  void attach(int seq, std::span<const int32_t> blocks);
  // The sequence's i-th block, not written yet, becomes `block` (a reference
  // taken; its own is given back): a block the prompt cache indexed since
  // the sequence reserved its own, shared instead of read again.
  void share_block(int seq, size_t i, int32_t block);
  int64_t length(int seq) const { return seqs_.at(seq).length; }
  void set_length(int seq, int64_t n) { seqs_.at(seq).length = n; }
  // Positions the sequence's blocks can hold.
  int64_t capacity(int seq) const { return int64_t(seqs_.at(seq).blocks.size()) * shape_.block_tokens; }
  std::span<const int32_t> blocks(int seq) const { return seqs_.at(seq).blocks; }

  // Reference counting of single blocks, for the prompt cache.
  std::optional<int32_t> allocate();  // a free block with one reference
  void retain(int32_t block) { ++refs_.at(size_t(block)); }
  void unref(int32_t block);  // frees the block when the last reference goes
  int refs(int32_t block) const { return refs_.at(size_t(block)); }
  // References dropped since the pool was made: each one frees a block or
  // leaves it to fewer holders (the prompt cache alone, so reclaimable).
  uint64_t references_dropped() const { return references_dropped_; }
  // A new block with one reference holding a copy of `block`'s contents.
  std::optional<int32_t> copy_block(int32_t block);
  // Gives the memory of the last n blocks freed back to the system (their
  // contents are gone; they stay free and are faulted in again when used).
  void discard_free(int64_t n);
  // All layers' keys and values of one block: block_bytes() contiguous bytes
  // (what the SSD tier writes and reads back).
  std::span<uint8_t> block_data(int32_t block);

  // Stores the key and value of one position (kv_heads * head_dim floats each).
  void store(int layer, int seq, int64_t pos, const float* k, const float* v);
  KvView view(int layer, int seq) const;

  int64_t blocks_total() const { return n_blocks_; }
  int64_t blocks_free() const { return int64_t(free_.size()); }
  int64_t sequences() const { return int64_t(seqs_.size()); }
  size_t bytes() const { return storage_bytes_; }
  size_t block_bytes() const { return block_bytes(shape_); }
  const KvCacheShape& shape() const { return shape_; }

  // Blocks a byte budget holds, for sizing the pool; blocks a sequence of
  // `tokens` needs.
  static int64_t blocks_for_bytes(const KvCacheShape& shape, size_t bytes);
  static int64_t blocks_for_tokens(const KvCacheShape& shape, int64_t tokens) {
    return (tokens + shape.block_tokens - 1) / shape.block_tokens;
  }
  static size_t block_bytes(const KvCacheShape& shape);
  static size_t layer_block_bytes(const KvCacheShape& shape);  // one layer's K (or V)

 private:
  struct Sequence {
    std::vector<int32_t> blocks;
    int64_t length = 0;
    std::vector<std::vector<const void*>> k_ptrs, v_ptrs;  // [layer][block]
    // Room for `more` blocks, so that adding them cannot throw once a block
    // is taken (an allocation failure then leaks nothing).
    void make_room(size_t more) {
      blocks.reserve(blocks.size() + more);
      for (auto* ptrs : {&k_ptrs, &v_ptrs})
        for (auto& p : *ptrs) p.reserve(p.size() + more);
    }
  };
  uint8_t* layer_data(int layer, int32_t block, bool value) const;

  KvCacheShape shape_;
  int64_t n_blocks_;
  size_t layer_block_bytes_;  // one layer's K (or V) of one block
  uint8_t* storage_ = nullptr;
  size_t storage_bytes_ = 0;
  std::vector<int32_t> free_;
  std::vector<int32_t> refs_;  // per block
  std::map<int, Sequence> seqs_;
  int next_seq_ = 0;
  uint64_t references_dropped_ = 0;
};

}  // namespace hearth
