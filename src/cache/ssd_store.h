// The SSD tier of the prompt cache: KV blocks kept on disk, keyed by their
// BlockHash, so they survive a restart. Writes are queued and done by one
// background thread; each record is committed by renaming a fsynced temporary
// file, so a crash (kill -9, power loss) leaves only whole records or temp files.
//
// Why a directory of self-describing records rather than SQLite or an
// append-only log: the rename is the commit, and each file carries everything
// needed to check it (namespace, hash, parent, tokens, checksums), so there is
// no second structure to keep consistent with the data and nothing to replay or
// compact after a crash. The cost is reading one small header per record at
// start (the payload is checked only when it is read back).
//
// Layout: DIR/LOCK (flock'ed while a store is open), and DIR/<namespace hex>/
// holding <hash hex>.kvb records (their format: kv_record.h) and
// <hash hex>.kvb.tmp files being written.
// The cap covers every namespace's records: past it, other namespaces'
// go first (oldest first), then this one's least recently used chain ends.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/block_hash.h"
#include "cache/kv_record.h"

namespace hearth::cache {

struct SsdStoreOptions {
  std::filesystem::path dir;          // root directory (created if missing)
  // Cap on the record bytes on disk under dir, every namespace's: past it,
  // other namespaces' records are removed, the oldest first, then this
  // namespace's least recently used chain ends. 0: half of the free space plus
  // what the records take at start, a cap that does not shrink as the cache
  // fills from one run to the next. A disk that fills up before the cap
  // brings the cap in effect below it for a while (SsdStore::lower_cap_to_fit).
  uint64_t max_bytes = 0;
  uint64_t queue_bytes = 2ull << 30;  // cap on bytes waiting in the write queue; past it the
                                      // block being put is dropped and counted, and so are
                                      // its children (a chain is read from its start)
  BlockHash ns;                       // namespace (model identity + KV format)
  size_t block_bytes = 0;             // payload size of every record
  int block_tokens = 0;               // tokens per block
};

struct SsdStoreStats {
  int64_t entries = 0;
  uint64_t bytes = 0, max_bytes = 0;  // max_bytes: the cap in effect
  uint64_t other_bytes = 0;    // other namespaces' records, kept under max_bytes
  int64_t spills = 0;          // records written (committed)
  int64_t restores = 0;        // successful read() calls
  int64_t dropped_spills = 0;  // writes dropped because the queue was over queue_bytes
  int64_t failed_spills = 0;   // writes that failed (I/O error, disk full): counted, file removed
  int64_t skipped = 0;         // corrupt / truncated / foreign / half-written files removed
  int64_t evicted = 0;         // records removed to stay under max_bytes
  int64_t cap_lowerings = 0;   // times a full disk brought the cap down (lower_cap_to_fit)
  uint64_t pending_spill_bytes = 0;  // waiting in the queue or being written (held in memory)
  int64_t pending_spills = 0;
  double restore_ms_last = 0;  // duration of the last successful read()
  bool paused = false;         // set_paused(true): the writer starts no new record
  int64_t pauses = 0;          // times it was paused
  std::string last_error;      // the most recent failed write, for /stats and logs
};

struct SsdFlushResult {
  int64_t written = 0, dropped = 0, failed = 0;  // since the previous flush()
  double ms = 0;                                 // how long this flush() waited
};

class SsdStore {
 public:
  // Locks DIR/LOCK (throws std::runtime_error if another store holds it), scans
  // and checks the namespace's records (removing bad ones), starts the writer.
  // Also throws when DIR or a namespace folder is another user's, and when
  // out of fds or memory while scanning (a record missed would lie outside
  // the index and the cap).
  explicit SsdStore(SsdStoreOptions o);
  ~SsdStore();  // writes everything still queued, then stops the writer
  SsdStore(const SsdStore&) = delete;
  SsdStore& operator=(const SsdStore&) = delete;

  // Queues a copy of the block for writing. A block already stored or queued
  // is skipped (a stored one counts as used). tokens must hold block_tokens ids
  // and payload block_bytes bytes (std::invalid_argument otherwise). False
  // when it was dropped (a full queue, or its parent dropped).
  bool put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
           std::span<const uint8_t> payload);
  // Marks stored records as used: the prompt cache calls it for the blocks a
  // lookup found in RAM, which would otherwise look unused to this tier's
  // LRU however often they are hit.
  void touch(std::span<const BlockHash> hashes);
  // True once the record is durable on disk, not merely queued.
  bool contains(const BlockHash& hash) const;
  // True when the block is neither durable nor queued and was not given
  // up: dropped for a full queue (itself, or a parent that was), evicted,
  // or removed as corrupt. A chain is read from its start, so the prompt
  // cache puts such a block again, while it is in RAM, before a child of
  // it (a dropped block's children are dropped until it is; an evicted
  // one's would be written and never read). A failed write, or one
  // drop_queue() gave up, is not offered again: retrying would repeat the
  // failure, or take back the memory just given up.
  bool awaits_put_again(const BlockHash& hash) const;
  // Whether a put now would find room in the queue.
  bool has_queue_room() const;
  // Whether `records` records fit under the cap in effect.
  bool holds(size_t records) const;
  // How many of `chain` (in chain order) are durable, counting from the start.
  size_t contains_prefix(std::span<const BlockHash> chain) const;
  // Reads a record's payload into dst (block_bytes). Anything that does not
  // match (header, namespace, hash, parent, tokens, payload checksum) removes
  // the file, counts it in `skipped` and returns false: a miss, never a wrong
  // answer. dst's contents are unspecified after false.
  bool read(const BlockHash& hash, const BlockHash& parent,
            std::span<const int32_t> expected_tokens, std::span<uint8_t> dst);
  // Waits until everything put before the call is durable, dropped or failed;
  // says what happened since the previous flush().
  SsdFlushResult flush();
  SsdStoreStats stats() const;
  // While paused the writer starts no new record, so the disk is left to
  // latency-critical work; puts still queue (and are dropped past
  // queue_bytes). flush() and the destructor write regardless.
  void set_paused(bool paused);
  // Drops every write still waiting (counted as dropped): under memory
  // pressure their copies are worth less than the memory. Returns the bytes.
  uint64_t drop_queue();
  // Tokens in the longest chain of durable records starting at a record whose
  // parent is root_parent.
  int64_t longest_durable_prefix_tokens(const BlockHash& root_parent) const;
  // Where the record for `hash` lives (whether or not it exists).
  std::filesystem::path record_path(const BlockHash& hash) const;

 private:
  struct Entry {
    BlockHash parent;
    uint64_t bytes = 0;  // file size
    uint64_t used = 0;   // clock tick of the last put, touch or read
    int32_t children = 0;  // indexed records that count this one as their parent
    bool counted = false;  // whether its parent is indexed and counts it (else it is in uncounted_)
  };
  struct Job {
    uint64_t seq = 0;  // put order, for flush()
    BlockHash hash, parent;
    std::vector<int32_t> tokens;
    std::vector<uint8_t> payload;
    uint64_t bytes() const { return tokens.size() * sizeof(int32_t) + payload.size(); }
  };

  kv_record::Shape shape() const { return {opt_.ns, opt_.block_tokens, opt_.block_bytes}; }
  void scan_records();
  // The records in DIR's other namespace folders (other models, an earlier
  // version of this one, other kernels), found by name and stat alone.
  struct OtherRecord {
    std::string folder, file;  // DIR/folder/file
    uint64_t bytes = 0;
    int64_t mtime = 0;  // ns
  };
  std::deque<OtherRecord> other_namespaces_records() const;
  // 0, or the errno of the failure (described in `error`).
  int write_record(const Job& job, std::string& error) const;
  void writer_loop();
  // With mu_ held:
  void add_entry(const BlockHash& hash, const BlockHash& parent, uint64_t bytes);
  void remove_entry(const BlockHash& hash);  // from the index only: the caller unlinks the file
  void mark_used(const BlockHash& hash, Entry& e);
  void remember_dropped(const BlockHash& hash, bool put_again);
  // A write found the disk full, with `unindexed` bytes of this batch's
  // records on it: the cap comes down below what the records take.
  void lower_cap_to_fit(uint64_t unindexed);
  // Without mu_: after a lowering, the cap goes back up as the disk frees.
  void raise_cap_as_space_frees();
  // Files an eviction took out of the index: deleted after mu_ is let go,
  // so that put() and read() never wait on the file system freeing MBs.
  struct Evicted {
    std::vector<std::string> records;            // this namespace's, by name in dir_fd_
    std::vector<OtherRecord> others;             // other namespaces' records
  };
  void evict_over_cap(Evicted& out);
  // Without mu_. Leaves in files.others the records it could not reach
  // for want of an fd or memory, which count_again (mu_ held) puts back
  // among the records the cap counts, the oldest, for the next eviction.
  void delete_files(Evicted& files) const;
  void count_again(std::vector<OtherRecord>& undeleted);
  uint64_t oldest_unfinished_seq() const;
  void close_fds();
  // Throws unless the open folder `dir_fd` (at `dir`) is this user's, and
  // clears the permission bits `others` from it.
  static void claim_folder(int dir_fd, const std::filesystem::path& dir, mode_t others);
  // Out of fds or memory: a failure that says nothing of the file, only of
  // this moment.
  static bool out_of_resources(int err) { return err == EMFILE || err == ENFILE || err == ENOMEM; }

  SsdStoreOptions opt_;  // max_bytes: the cap asked for (or the default)
  uint64_t cap_ = 0;     // the cap in effect: max_bytes, or less while the disk is full
  std::filesystem::path ns_dir_;
  uint64_t record_bytes_ = 0;  // header + tokens + payload
  int lock_fd_ = -1, root_fd_ = -1, dir_fd_ = -1;  // root: DIR; dir: the namespace's folder

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the writer waits for jobs
  std::condition_variable done_cv_;  // flush() waits for the writer
  std::unordered_map<BlockHash, Entry, BlockHashHasher> index_;
  // The records no other record counts as its parent, least recently used
  // first: eviction takes leaves only, since a chain is read from its start
  // and a record whose parent is gone is never read again.
  std::map<uint64_t, BlockHash> leaves_;
  // The records whose parent is not indexed, by parent: a chain's first
  // (its parent is the root), or one written before its parent. Counted as
  // the parent's children once it is indexed.
  std::unordered_map<BlockHash, std::unordered_set<BlockHash, BlockHashHasher>, BlockHashHasher> uncounted_;
  uint64_t clock_ = 0;
  std::deque<OtherRecord> others_;  // other namespaces' records, oldest first
  std::deque<Job> queue_;
  std::unordered_set<BlockHash, BlockHashHasher> pending_;  // queued or being written
  // Blocks dropped from the queue or whose write failed, whose children are
  // dropped too (until the block is put again), and those of them worth
  // putting again (awaits_put_again); forgotten all at once past
  // kMaxDroppedKept.
  std::unordered_set<BlockHash, BlockHashHasher> dropped_, put_again_;
  static constexpr size_t kMaxDroppedKept = 1 << 16;
  uint64_t queued_bytes_ = 0, writing_bytes_ = 0;           // writing: the one record being written
  int64_t writing_count_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t writing_from_seq_ = 0;  // lowest seq the writer holds unpublished (0: none)
  uint64_t flush_target_ = 0;      // the writer ends its batch once past this seq
  bool stopping_ = false;
  bool paused_ = false;
  SsdStoreStats stats_;
  SsdFlushResult reported_;  // counters as of the previous flush()
  std::thread writer_;
};

}  // namespace hearth::cache
