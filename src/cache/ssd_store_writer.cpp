// The SSD store's writer thread: records written to a temporary file,
// fsynced and renamed, a batch's renames made durable by one directory
// fsync before contains() reports them; failed writes, and the cap brought
// down while the disk is full.
#include "cache/ssd_store.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace hearth::cache {

namespace {

// A batch of renamed records shares one directory fsync; small enough that
// contains() does not lag far behind the disk.
constexpr size_t kBatchRecords = 16;
constexpr uint64_t kBatchBytes = 64ull << 20;

}  // namespace

int SsdStore::write_record(const Job& job, std::string& error) const {
  const std::string name = job.hash.hex() + kv_record::kSuffix, tmp = job.hash.hex() + kv_record::kTempSuffix;

  // A fresh file of our own: not through a link someone left in its place.
  ::unlinkat(dir_fd_, tmp.c_str(), 0);
  int fd =
      ::openat(dir_fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    error = "cannot create " + (ns_dir_ / tmp).string() + ": " + std::strerror(err);
    return err;
  }
  // Data reaches the disk before the rename makes the record visible.
  bool ok = kv_record::write(fd, shape(), {job.hash, job.parent}, job.tokens, job.payload) && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && ::renameat(dir_fd_, tmp.c_str(), dir_fd_, name.c_str()) != 0) ok = false, err = errno;
  if (ok) return 0;
  ::unlinkat(dir_fd_, tmp.c_str(), 0);
  error = "writing " + (ns_dir_ / tmp).string() + ": " + std::strerror(err);
  return err ? err : EIO;
}

// The disk holds less than the cap allows: it filled with other files, or
// the cap was set above its size. The cap comes down to an eighth below what
// the records take now, and eviction makes that room, so later writes go on
// within what the disk holds, the least recently used giving way, instead
// of every write failing. (With nothing of ours on a full disk there is
// nothing to give way, and writes fail until it frees.)
void SsdStore::lower_cap_to_fit(uint64_t unindexed) {
  const uint64_t held = stats_.bytes + stats_.other_bytes + unindexed;
  const uint64_t cap = std::max(record_bytes_, held - held / 8);
  if (cap >= cap_) return;
  cap_ = cap;
  ++stats_.cap_lowerings;
}

// The cap goes back up, towards the one asked for, to what the records take
// plus half of the free space (the default cap's share), once that is an
// eighth more than now: not in steps so small that the disk fills again at
// once.
void SsdStore::raise_cap_as_space_frees() {
  struct statvfs fs {};
  if (::fstatvfs(dir_fd_, &fs) != 0) return;
  const uint64_t free_bytes = uint64_t(fs.f_bavail) * fs.f_frsize;
  std::lock_guard lk(mu_);
  const uint64_t room = std::min(opt_.max_bytes, stats_.bytes + stats_.other_bytes + free_bytes / 2);
  if (room >= cap_ + cap_ / 8) cap_ = room;
}

uint64_t SsdStore::oldest_unfinished_seq() const {
  if (writing_from_seq_) return writing_from_seq_;
  return queue_.empty() ? std::numeric_limits<uint64_t>::max() : queue_.front().seq;
}

void SsdStore::writer_loop() {
  struct Written {
    BlockHash hash, parent;
  };
  std::vector<Written> batch;
  batch.reserve(kBatchRecords);  // so that a push_back never allocates
  std::optional<BlockHash> writing;  // the record being written
  std::unique_lock lk(mu_);
  for (;;) {
    auto may_write = [&] { return !queue_.empty() && (!paused_ || stopping_ || flush_target_); };
    work_cv_.wait(lk, [&] { return may_write() || (stopping_ && queue_.empty()); });
    if (!may_write()) return;  // stopping, and everything queued is written
    Evicted evicted;
    size_t handled = 0;  // records of `batch` indexed, or taken back
    try {
      // Write records one by one, then make their renames durable with one
      // directory fsync before contains() may report them.
      uint64_t batch_bytes = 0, last_seq = 0;
      writing_from_seq_ = queue_.front().seq;
      while (may_write() && batch.size() < kBatchRecords && batch_bytes < kBatchBytes) {
        Job job = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= job.bytes();
        if (dropped_.contains(job.parent)) {  // queued before its parent's write failed: an orphan
          pending_.erase(job.hash);
          remember_dropped(job.hash, put_again_.contains(job.parent));
          ++stats_.dropped_spills;
          last_seq = job.seq;
          continue;
        }
        writing = job.hash;
        writing_bytes_ += job.bytes();
        ++writing_count_;
        lk.unlock();
        std::string error;
        const int err = write_record(job, error);
        const bool ok = err == 0;
        lk.lock();
        writing.reset();
        last_seq = job.seq;
        writing_bytes_ -= job.bytes();  // its copy is released with `job`
        --writing_count_;
        if (ok) {
          batch.push_back({job.hash, job.parent});
          batch_bytes += record_bytes_;
        } else {
          ++stats_.failed_spills;
          pending_.erase(job.hash);
          stats_.last_error = std::move(error);
          remember_dropped(job.hash, false);  // its children would be orphans on disk
          if (err == ENOSPC || err == EDQUOT) {
            lower_cap_to_fit(batch.size() * record_bytes_);
            break;  // the eviction below makes room before the next write
          }
        }
        if (flush_target_ && last_seq >= flush_target_) break;  // a flush() is waiting for this one
      }

      lk.unlock();
      const bool synced = batch.empty() || ::fsync(dir_fd_) == 0;
      const int err = errno;
      lk.lock();
      if (!synced && (err == ENOSPC || err == EDQUOT)) lower_cap_to_fit(0);  // the batch is taken back
      if (!synced) stats_.last_error = "fsync " + ns_dir_.string() + ": " + std::strerror(err);
      // (Each record is done with when `handled` passes it: a throw leaves
      // the rest to the catch below, never one twice.)
      for (; handled < batch.size(); ++handled) {
        const Written& w = batch[handled];
        if (synced) {
          add_entry(w.hash, w.parent, record_bytes_);
          ++stats_.spills;
        } else {  // not durable: take it back rather than report it
          remember_dropped(w.hash, false);
          ::unlinkat(dir_fd_, (w.hash.hex() + kv_record::kSuffix).c_str(), 0);
          ++stats_.failed_spills;
        }
        pending_.erase(w.hash);
      }
      evict_over_cap(evicted);
      if (flush_target_ && last_seq >= flush_target_) flush_target_ = 0;
      const bool below_cap = cap_ < opt_.max_bytes;
      // Deleted by this thread before its next write, so a block put again
      // meanwhile is written after its old file is gone, never before.
      lk.unlock();
      delete_files(evicted);
      if (below_cap) raise_cap_as_space_frees();
      lk.lock();
      count_again(evicted.others);
    } catch (...) {
      // An allocation failed (nothing else throws here), and the thread
      // must not end the server: what is left of the batch is given up and
      // counted as failed. Its records not yet indexed are removed from the
      // disk, where nothing would count them against the cap, and the files an
      // eviction took out of the index are deleted (best effort: each
      // name is one more allocation).
      if (!lk.owns_lock()) lk.lock();
      for (size_t i = handled; i < batch.size(); ++i) {
        try {
          ::unlinkat(dir_fd_, (batch[i].hash.hex() + kv_record::kSuffix).c_str(), 0);
        } catch (...) {
        }
        ++stats_.failed_spills;
        pending_.erase(batch[i].hash);
      }
      if (writing) {  // write_record threw (naming its files): nothing of it is on disk
        pending_.erase(*writing);
        ++stats_.failed_spills;
        writing.reset();
      }
      try {
        delete_files(evicted);
        count_again(evicted.others);
      } catch (...) {
      }
      writing_bytes_ = 0, writing_count_ = 0;
    }
    batch.clear();
    writing_from_seq_ = 0;
    done_cv_.notify_all();
  }
}

}  // namespace hearth::cache
