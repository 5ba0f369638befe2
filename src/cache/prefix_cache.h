// The prompt cache: an index from block hash (block_hash.h) to a full KV
// block in the pool, so that a request whose prompt starts with cached
// blocks attaches them instead of computing them again; with an SSD tier
// below it (ssd_store.h), every published block is also queued for disk
// (write-behind), a lookup continues on disk where RAM ends and the engine
// reads those blocks back into the pool, and idle blocks leave RAM once they
// are on disk.
//
// Ownership is the pool's reference count: the cache holds one reference on
// every block it indexes, and sequences hold theirs. A block only the cache
// holds is reclaimable; evict() drops such blocks, leaves first (a block
// whose chain continues in the cache is kept while the children indexed
// after it are), in
// the retention order: least recently used, or (cost-size) the shortest
// chains first, since a long prefix costs the most to compute again.
// Sessions point at the last block their conversation published; their
// chains are evicted only after every other candidate.
//
// Thread-safe: the engine thread looks up, publishes and evicts; HTTP
// threads read stats and close sessions.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/block_hash.h"
#include "cache/ssd_store.h"
#include "core/thread_pool.h"
#include "model/kv_cache.h"

namespace hearth::cache {

enum class Retention { Lru, CostSize };
std::optional<Retention> parse_retention(std::string_view name);  // "lru" | "cost-size"

struct PrefixCacheOptions {
  size_t max_bytes = 0;  // cap on the bytes of indexed blocks
  Retention retention = Retention::Lru;
  size_t max_sessions = 65536;  // past it, the sessions set longest ago are forgotten
};

struct PrefixCacheStats {
  int64_t entries = 0;
  size_t bytes = 0, max_bytes = 0;
  // Admitted requests that reused >= 1 block (found in RAM at their lookup,
  // or later shared or read back: count_reuse) / none.
  int64_t hits = 0, misses = 0, hit_tokens = 0;
  int64_t session_hits = 0, session_misses = 0, sessions = 0;
  int64_t prefix_scans = 0, evictions = 0;
  int64_t cap_passes = 0;  // evictions run because the index was over max_bytes
  int64_t restored_blocks = 0, demotions = 0;  // the SSD tier: blocks read back, idle blocks dropped from RAM
  double restore_ms_total = 0;                 // time in read_back, all its reads
};

// Where a sequence stands in publishing its blocks: the hash of the last
// block published (the chain root before any) and how many there are.
struct ChainCursor {
  BlockHash parent;
  int64_t blocks = 0;
};

struct PrefixMatch {
  std::vector<BlockHash> chain;  // the hashes of every full block of the looked-up tokens
  std::vector<int32_t> blocks;   // the cached ones, from the start
  int64_t tokens = 0;            // positions they cover
  size_t on_disk = 0;            // blocks past them the SSD tier holds (read_back)
  // With a session id the cache knows: whether the tokens continue the
  // session's checkpoint (a session hit) or not (an edited or branched
  // history).
  std::optional<bool> continues_session;
};

class PrefixCache {
 public:
  // `ssd` (may be null) is the tier below; it must outlive the cache, and
  // so must `pool`, which reads blocks back from it in parallel.
  PrefixCache(KvCache& kv, BlockHash root, PrefixCacheOptions options, SsdStore* ssd = nullptr,
              ThreadPool* pool = nullptr);
  ~PrefixCache();  // drops the cache's references
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  const BlockHash& root() const { return root_; }
  int block_tokens() const { return block_tokens_; }

  // The hashes of the full blocks of `tokens`.
  std::vector<BlockHash> chain(std::span<const int32_t> tokens) const;

  // The longest run of cached blocks that starts `tokens`, marked as used,
  // and how many blocks past it the SSD tier holds. Counted only by
  // count_admission and count_reuse: a request that waits for room looks
  // up again at every step it is tried.
  PrefixMatch lookup(std::span<const int32_t> tokens, const std::string& session = {});
  // Counts the lookup of a request that was admitted with its match: a hit
  // if it found blocks in RAM, its tokens, and its session's continuation.
  // One that found none is neither hit nor miss yet: its request may still
  // read blocks back from disk or share what another computes meanwhile.
  void count_admission(const PrefixMatch& m);
  // Counts such a request (no block in RAM at its lookup) as a hit if it
  // reused any block, else as a miss: once per request, so both counters
  // only ever grow.
  void count_reuse(bool reused);

  // Reads blocks [from, from + into.size()) of `chain` (the hashes of the
  // full blocks of `tokens`) back from the SSD tier into `into`, pool blocks
  // the caller holds alone (a sequence's own), on every core; returns how
  // many read back whole, from the first (a corrupt block ends the run, and
  // is removed). They are indexed when the caller publishes them. The
  // caller bounds the count: the engine reads a step's worth at a time, so
  // a long restore never stalls the streams that share its steps.
  size_t read_back(std::span<const int32_t> tokens, std::span<const BlockHash> chain, size_t from,
                   std::span<const int32_t> into);
  // The indexed blocks of `chain` from `from` on (at most `max`), marked as
  // used: what another request read back or computed since a lookup.
  std::vector<int32_t> indexed_run(std::span<const int32_t> tokens, std::span<const BlockHash> chain, size_t from,
                                   size_t max);

  // Indexes the blocks of a sequence that filled since `cursor`:
  // tokens[0, filled) are held in `blocks` (its block table). A block whose
  // hash is indexed already (computed twice) is left out. With a session id,
  // the session's checkpoint moves to the last published block. Each block
  // is also queued for the SSD tier.
  void publish(ChainCursor& cursor, std::span<const int32_t> tokens, int64_t filled,
               std::span<const int32_t> blocks, const std::string& session = {});

  // Frees up to n blocks that only the cache holds; returns how many it freed.
  int64_t evict(int64_t n);
  // What evict() could free at most: blocks only the cache holds, none of
  // whose indexed descendants a sequence holds (a scan of the index).
  int64_t reclaimable() const;
  // Blocks indexed since the cache was made (a lookup may now find more).
  uint64_t blocks_indexed() const;
  // Drops from RAM the blocks unused for `idle_seconds` whose SSD copy is
  // durable; returns how many.
  int64_t demote_idle(double idle_seconds);

  bool close_session(const std::string& id);  // false if there was none
  PrefixCacheStats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    int32_t block;
    BlockHash parent;
    int64_t depth;      // blocks from the root, this one included
    uint64_t used;      // clock tick of the last lookup or publish
    Clock::time_point used_at;
    int32_t children;   // indexed blocks whose parent this is, counted when they were indexed
    // Whether the parent was indexed when this block was, and so counts it:
    // a parent evicted while no request held it may come back later with
    // none of the children indexed meanwhile counted.
    bool counted;
    // The block's tokens: a lookup checks them and the parent, not the
    // hash alone, so no crafted collision can attach another prompt's KV.
    std::vector<int32_t> tokens;
  };
  struct Session {
    BlockHash tip;
    int64_t blocks = 0;
    uint64_t set = 0;  // clock tick of the last publish under this id
  };
  // Mutex held; `ids` are the block's tokens. False if the hash is indexed
  // already (a child kept while its parent left RAM now counts for the
  // parent that came back).
  bool index(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> ids, int32_t block);
  // Mutex held: the indexed run of `chain` from `from` (at most `max`), its
  // tokens and parents checked, marked as used now.
  std::vector<int32_t> walk(std::span<const int32_t> tokens, std::span<const BlockHash> chain, size_t from, size_t max);
  // Frees up to n leaves that only the cache holds and that `may_go` accepts.
  int64_t evict_locked(int64_t n, const std::function<bool(const BlockHash&, const Entry&)>& may_go = {});
  void enforce_cap();
  void forget_oldest_sessions();
  // Mutex held: puts `hash` and its indexed ancestors that the SSD tier
  // lacks (dropped for a full queue, evicted, removed as corrupt:
  // SsdStore::awaits_put_again) to it again, oldest first, so that the
  // children put after them are neither dropped nor written unreadable.
  // False when a child of `hash` (a block the cache holds) is not to be
  // put: it would not be read (a chain longer than the tier holds, `hash`
  // or an ancestor missing from the tier gone from RAM too, or no room in
  // the queue).
  bool put_missing_again(const BlockHash& hash);

  KvCache& kv_;
  const BlockHash root_;
  const int block_tokens_;
  PrefixCacheOptions opt_;
  SsdStore* ssd_;
  ThreadPool* pool_;
  mutable std::mutex mutex_;
  std::unordered_map<BlockHash, Entry, BlockHashHasher> entries_;
  std::unordered_map<std::string, Session> sessions_;
  uint64_t clock_ = 0;
  int64_t next_cap_pass_ = 0;  // enforce_cap() waits for the index to reach this size
  uint64_t blocks_indexed_ = 0;
  PrefixCacheStats stats_;
};

}  // namespace hearth::cache
