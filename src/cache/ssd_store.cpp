#include "cache/ssd_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/elapsed.h"

namespace hearth::cache {

std::filesystem::path SsdStore::record_path(const BlockHash& hash) const {
  return ns_dir_ / (hash.hex() + kv_record::kSuffix);
}

void SsdStore::add_entry(const BlockHash& hash, const BlockHash& parent, uint64_t bytes) {
  if (index_.contains(hash)) return;
  const auto p = index_.find(parent);
  Entry* const counted_by = p != index_.end() ? &p->second : nullptr;  // (references outlive a rehash)
  // Its children indexed before it (written again after them, or read back
  // corrupt and removed) count now, so that it is not evicted before them.
  const auto found = uncounted_.find(hash);
  const auto* const waiting = found != uncounted_.end() ? &found->second : nullptr;  // (outlives a rehash)
  const auto children = int32_t(waiting ? waiting->size() : 0);
  const uint64_t tick = ++clock_;
  const auto it = index_.emplace(hash, Entry{parent, bytes, tick, children, counted_by != nullptr}).first;
  try {  // (an allocation) nothing is changed unless all of it is
    if (children == 0) leaves_.emplace(tick, hash);
    if (!counted_by) uncounted_[parent].insert(hash);
  } catch (...) {
    if (children == 0) leaves_.erase(tick);
    if (auto u = uncounted_.find(parent); u != uncounted_.end() && u->second.empty()) uncounted_.erase(u);
    index_.erase(it);
    throw;
  }
  if (waiting) {
    for (const BlockHash& child : *waiting) index_.find(child)->second.counted = true;
    uncounted_.erase(hash);
  }
  if (counted_by && counted_by->children++ == 0) leaves_.erase(counted_by->used);
  stats_.bytes += bytes;
}

void SsdStore::mark_used(const BlockHash& hash, Entry& e) {
  const uint64_t tick = ++clock_;
  if (e.children == 0) {
    leaves_.erase(e.used);
    leaves_.emplace(tick, hash);
  }
  e.used = tick;
}

void SsdStore::remove_entry(const BlockHash& hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) return;
  const Entry e = it->second;
  // What allocates comes first, so that a failure changes nothing. A parent
  // removed before its children (read back corrupt, or gone) leaves them
  // waiting for it, uncounted, until it is written again. Rare, so a walk
  // over the index rather than a list of children per record.
  std::vector<BlockHash> children;
  if (e.children > 0)
    for (const auto& [child, c] : index_)
      if (c.counted && c.parent == hash) children.push_back(child);
  Entry* const p = e.counted ? &index_.at(e.parent) : nullptr;
  try {
    if (!children.empty()) uncounted_[hash].insert(children.begin(), children.end());  // (none wait for an indexed record)
    if (p && p->children == 1) leaves_.emplace(p->used, e.parent);  // the parent becomes an end
  } catch (...) {
    uncounted_.erase(hash);
    throw;
  }
  for (const BlockHash& child : children) index_.find(child)->second.counted = false;
  if (p) --p->children;
  if (!e.counted)
    if (auto u = uncounted_.find(e.parent); u != uncounted_.end() && u->second.erase(hash) && u->second.empty())
      uncounted_.erase(u);
  stats_.bytes -= e.bytes;
  if (e.children == 0) leaves_.erase(e.used);
  index_.erase(it);
}

// Other namespaces' records go first, the oldest first: a model updated in
// place leaves its old namespace behind, never to be read again.
void SsdStore::evict_over_cap(Evicted& out) {
  while (stats_.bytes + stats_.other_bytes > cap_) {
    if (!others_.empty()) {  // (listed for deletion before it leaves the count)
      out.others.push_back(others_.front());
      stats_.other_bytes -= others_.front().bytes;
      others_.pop_front();
      ++stats_.evicted;
      continue;
    }
    if (leaves_.empty()) break;
    const BlockHash hash = leaves_.begin()->second;
    out.records.push_back(hash.hex() + kv_record::kSuffix);
    try {
      remove_entry(hash);
    } catch (...) {  // (an allocation) still indexed: its file stays
      out.records.pop_back();
      throw;
    }
    ++stats_.evicted;
  }
}

void SsdStore::delete_files(Evicted& files) const {
  for (const std::string& name : files.records) ::unlinkat(dir_fd_, name.c_str(), 0);
  // Through the folders' fds, each checked to be a folder of this user's
  // (not a link put in its place since the scan).
  std::erase_if(files.others, [&](const OtherRecord& r) {
    const int fd = ::openat(root_fd_, r.folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return !out_of_resources(errno);  // (else gone, or not a folder: nothing to delete)
    struct stat st {};
    const bool ours = ::fstat(fd, &st) == 0 && st.st_uid == ::geteuid();
    const bool kept = ours && ::unlinkat(fd, r.file.c_str(), 0) != 0 && out_of_resources(errno);
    ::close(fd);
    if (!kept) ::unlinkat(root_fd_, r.folder.c_str(), AT_REMOVEDIR);  // once it is empty
    return !kept;
  });
}

void SsdStore::count_again(std::vector<OtherRecord>& undeleted) {
  // From the back, so the oldest ends in front; each leaves `undeleted` as
  // it is put back (push_front changes nothing if it throws).
  while (!undeleted.empty()) {
    others_.push_front(std::move(undeleted.back()));
    undeleted.pop_back();
    stats_.other_bytes += others_.front().bytes;
    --stats_.evicted;
  }
}

bool SsdStore::put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
                   std::span<const uint8_t> payload) {
  if (tokens.size() != size_t(opt_.block_tokens) || payload.size() != opt_.block_bytes)
    throw std::invalid_argument(
        "SsdStore::put: a block must hold block_tokens tokens and block_bytes bytes");
  // Skip before copying the payload (up to MBs); checked again below, since
  // another thread may queue the same block meanwhile.
  auto already_have = [&] {
    auto it = index_.find(hash);
    if (it != index_.end()) {
      mark_used(hash, it->second);
      return true;
    }
    return pending_.count(hash) > 0;
  };
  // A full queue drops the block being put, and so does a dropped block's
  // child, even once the queue has room again: a chain is read from its
  // start, so what is written must be a chain's start (restorable), and
  // what is dropped its end (a future miss, never a wrong answer).
  const uint64_t bytes = tokens.size() * sizeof(int32_t) + payload.size();
  auto drops = [&] {
    const bool orphan = dropped_.contains(parent);
    if (!orphan && (queue_.empty() || queued_bytes_ + bytes <= opt_.queue_bytes)) return false;
    ++stats_.dropped_spills;
    remember_dropped(hash, !orphan || put_again_.contains(parent));
    return true;
  };
  {
    std::lock_guard lk(mu_);
    if (already_have()) return true;
    if (drops()) return false;
  }
  Job job{0, hash, parent, {tokens.begin(), tokens.end()}, {payload.begin(), payload.end()}};
  {
    std::lock_guard lk(mu_);
    if (already_have()) return true;
    if (drops()) return false;
    job.seq = ++next_seq_;
    queued_bytes_ += job.bytes();
    pending_.insert(hash);
    dropped_.erase(hash);  // put again (computed again): its children may follow
    put_again_.erase(hash);
    queue_.push_back(std::move(job));
  }
  work_cv_.notify_one();
  return true;
}

void SsdStore::remember_dropped(const BlockHash& hash, bool put_again) {
  if (dropped_.size() >= kMaxDroppedKept) dropped_.clear(), put_again_.clear();  // (then a few orphans may be written)
  dropped_.insert(hash);
  if (put_again)
    put_again_.insert(hash);
  else
    put_again_.erase(hash);
}

uint64_t SsdStore::drop_queue() {
  std::deque<Job> dropped;  // freed after the lock is let go
  uint64_t bytes;
  {
    std::lock_guard lk(mu_);
    for (const Job& job : queue_) {
      pending_.erase(job.hash);
      remember_dropped(job.hash, false);
    }
    stats_.dropped_spills += int64_t(queue_.size());
    bytes = std::exchange(queued_bytes_, 0);
    dropped.swap(queue_);
  }
  done_cv_.notify_all();  // a flush() may have been waiting for them
  return bytes;
}

void SsdStore::touch(std::span<const BlockHash> hashes) {
  std::lock_guard lk(mu_);
  for (const BlockHash& h : hashes)
    if (auto it = index_.find(h); it != index_.end()) mark_used(h, it->second);
}

bool SsdStore::contains(const BlockHash& hash) const {
  std::lock_guard lk(mu_);
  return index_.count(hash) > 0;
}

bool SsdStore::awaits_put_again(const BlockHash& hash) const {
  std::lock_guard lk(mu_);
  if (index_.contains(hash) || pending_.contains(hash)) return false;
  return !dropped_.contains(hash) || put_again_.contains(hash);
}

bool SsdStore::holds(size_t records) const {
  std::lock_guard lk(mu_);
  return records * record_bytes_ <= cap_;
}

bool SsdStore::has_queue_room() const {
  std::lock_guard lk(mu_);
  return queue_.empty() || queued_bytes_ < opt_.queue_bytes;
}

size_t SsdStore::contains_prefix(std::span<const BlockHash> chain) const {
  std::lock_guard lk(mu_);
  size_t n = 0;
  while (n < chain.size() && index_.count(chain[n])) ++n;
  return n;
}

bool SsdStore::read(const BlockHash& hash, const BlockHash& parent,
                    std::span<const int32_t> expected_tokens, std::span<uint8_t> dst) {
  if (expected_tokens.size() != size_t(opt_.block_tokens) || dst.size() != opt_.block_bytes)
    throw std::invalid_argument(
        "SsdStore::read: expected block_tokens tokens and a block_bytes buffer");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string name = hash.hex() + kv_record::kSuffix;
  int fd;
  {
    // Opened under the lock, so the file is the indexed one; once open, an
    // eviction may unlink it while we read, which is harmless.
    std::lock_guard lk(mu_);
    if (!index_.count(hash)) return false;
    // As the scan opens them: a FIFO or link put in a record's place must
    // not hang the engine (it waits on this) or lead elsewhere.
    fd = ::openat(dir_fd_, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0 && (errno == ENOENT || errno == ELOOP)) {  // gone or replaced: stop offering it
      if (errno == ELOOP) ::unlinkat(dir_fd_, name.c_str(), 0);  // (a link: quick)
      remove_entry(hash);
      ++stats_.skipped;
    }
  }
  if (fd < 0) return false;

  bool ok;
  struct stat st {};
  {
    struct Closer {  // also when the read throws (an allocation)
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && uint64_t(st.st_size) == record_bytes_ &&
         kv_record::read(fd, shape(), {hash, parent}, expected_tokens, dst);
    if (ok) ::futimens(fd, nullptr);  // the mtime orders records by use after a restart
  }

  std::lock_guard lk(mu_);
  auto it = index_.find(hash);
  if (!ok) {
    // Remove it only if it is still the file we read (not one rewritten since).
    struct stat now {};
    if (it != index_.end() && ::fstatat(dir_fd_, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        now.st_ino == st.st_ino && now.st_dev == st.st_dev) {
      ::unlinkat(dir_fd_, name.c_str(), 0);  // (rare: a corrupt record)
      remove_entry(hash);
      ++stats_.skipped;
    }
    return false;
  }
  if (it != index_.end()) mark_used(hash, it->second);
  ++stats_.restores;
  stats_.restore_ms_last = ms_since(t0);
  return true;
}

SsdFlushResult SsdStore::flush() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lk(mu_);
  const uint64_t target = next_seq_;
  flush_target_ = std::max(flush_target_, target);
  work_cv_.notify_one();  // a paused writer writes for a flush()
  done_cv_.wait(lk, [&] { return oldest_unfinished_seq() > target; });
  if (flush_target_ <= target) flush_target_ = 0;  // met (its last writes may have been dropped)
  SsdFlushResult r;
  r.written = stats_.spills - reported_.written;
  r.dropped = stats_.dropped_spills - reported_.dropped;
  r.failed = stats_.failed_spills - reported_.failed;
  reported_ = {stats_.spills, stats_.dropped_spills, stats_.failed_spills, 0};
  r.ms = ms_since(t0);
  return r;
}

void SsdStore::set_paused(bool paused) {
  {
    std::lock_guard lk(mu_);
    stats_.pauses += paused && !paused_;
    paused_ = paused;
  }
  work_cv_.notify_one();
}

SsdStoreStats SsdStore::stats() const {
  std::lock_guard lk(mu_);
  SsdStoreStats s = stats_;
  s.entries = int64_t(index_.size());
  s.max_bytes = cap_;
  s.pending_spill_bytes = queued_bytes_ + writing_bytes_;
  s.pending_spills = int64_t(queue_.size()) + writing_count_;
  s.paused = paused_;
  return s;
}

int64_t SsdStore::longest_durable_prefix_tokens(const BlockHash& root_parent) const {
  // A copy of the edges under the lock, the walk outside it: a large index
  // must not hold up the engine's put() calls for the walk's allocations.
  std::vector<std::pair<BlockHash, BlockHash>> edges;  // (parent, record)
  {
    std::lock_guard lk(mu_);
    edges.reserve(index_.size());
    for (const auto& [hash, e] : index_) edges.emplace_back(e.parent, hash);
  }
  std::unordered_map<BlockHash, std::vector<BlockHash>, BlockHashHasher> children;
  for (const auto& [parent, hash] : edges) children[parent].push_back(hash);
  // Breadth first, one level per block; `seen` guards against a cycle of
  // (impossible in practice) colliding hashes.
  std::unordered_set<BlockHash, BlockHashHasher> seen;
  std::vector<BlockHash> level{root_parent}, next;
  int64_t depth = -1;
  while (!level.empty()) {
    ++depth;
    next.clear();
    for (const BlockHash& h : level) {
      auto it = children.find(h);
      if (it == children.end()) continue;
      for (const BlockHash& c : it->second)
        if (seen.insert(c).second) next.push_back(c);
    }
    level.swap(next);
  }
  return depth * opt_.block_tokens;
}

}  // namespace hearth::cache
