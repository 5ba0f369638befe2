// Opening the SSD store: the cache directory's and the namespace folder's
// owner and permissions, the lock, the scan of the records at start (the
// directory is the index) and of other namespaces' records, which the cap
// counts too; and closing it.
#include "cache/ssd_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/errno_error.h"

namespace hearth::cache {

SsdStore::SsdStore(SsdStoreOptions o) : opt_(std::move(o)) {
  if (opt_.block_bytes == 0 || opt_.block_tokens <= 0)
    throw std::invalid_argument("SsdStore: block_bytes and block_tokens must be positive");
  ns_dir_ = opt_.dir / opt_.ns.hex();
  record_bytes_ = shape().file_bytes();
  std::error_code ec;
  std::filesystem::create_directories(opt_.dir, ec);
  if (ec) throw std::runtime_error("cannot create cache directory " + opt_.dir.string() + ": " + ec.message());
  // DIR holds the lock and every namespace's folder, and this store deletes
  // other namespaces' records in it: it must be this user's, and no one
  // else's to write in (a folder put in place of a namespace's could be
  // anything). DIR itself may be a link, the user's to make; what is opened
  // or deleted in it goes through its fd, without following links.
  root_fd_ = ::open(opt_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd_ < 0) throw_errno([&] { return "cannot open " + opt_.dir.string(); });
  try {
    claim_folder(root_fd_, opt_.dir, 022);
    const std::string lock_path = (opt_.dir / "LOCK").string();
    lock_fd_ = ::openat(root_fd_, "LOCK", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock_fd_ < 0) throw_errno([&] { return "cannot open " + lock_path; });
    // Non-blocking: a second server on the same directory must fail at once, not hang.
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK)
        throw std::runtime_error("cache directory " + opt_.dir.string() + " is locked (" + lock_path +
                                 "): another hearth server is using it");
      throw_errno(err, [&] { return "cannot lock " + lock_path; });
    }
    const std::string ns = opt_.ns.hex();
    if (::mkdirat(root_fd_, ns.c_str(), 0700) != 0 && errno != EEXIST)
      throw_errno([&] { return "cannot create cache directory " + ns_dir_.string(); });
    dir_fd_ = ::openat(root_fd_, ns.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dir_fd_ < 0)
      throw_errno([&] { return "cannot open " + ns_dir_.string(); });
    // The records hold prompts (their token ids) and KV the server trusts:
    // the folder must be this user's, and is made the owner's alone (one
    // someone else made first could be read or have records planted in it;
    // its name, from the model's files, is no secret).
    claim_folder(dir_fd_, ns_dir_, 077);
    // The folders' entries made durable (they may be new: the namespace's,
    // and DIR itself), before any record in them is reported durable: a
    // crash must not take a folder, records and all. (Best effort: a disk
    // that fails here fails the records' own fsyncs, which are reported.)
    ::fsync(root_fd_);
    if (const int fd = ::open(opt_.dir.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    scan_records();
    writer_ = std::thread(&SsdStore::writer_loop, this);
  } catch (...) {
    close_fds();
    throw;
  }
}

SsdStore::~SsdStore() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  writer_.join();
  close_fds();
}

void SsdStore::claim_folder(int dir_fd, const std::filesystem::path& dir, mode_t others) {
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0) throw_errno([&] { return "cannot stat " + dir.string(); });
  if (st.st_uid != ::geteuid())
    throw std::runtime_error("cache directory " + dir.string() +
                             " belongs to another user; choose a cache directory of your own");
  if ((st.st_mode & others) != 0 && ::fchmod(dir_fd, st.st_mode & 07777 & ~others) != 0)
    throw_errno([&] { return "cannot take permissions away from other users on " + dir.string(); });
}

void SsdStore::close_fds() {
  for (int fd : {dir_fd_, root_fd_, lock_fd_})  // (the lock's close releases the flock)
    if (fd >= 0) ::close(fd);
  dir_fd_ = root_fd_ = lock_fd_ = -1;
}

void SsdStore::scan_records() {
  struct Found {
    BlockHash hash, parent;
    uint64_t bytes;
    timespec mtime;
  };
  std::vector<Found> found;
  std::error_code ec;
  std::filesystem::directory_iterator it(ns_dir_, ec), end;
  if (ec) throw std::runtime_error("cannot list " + ns_dir_.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(kv_record::kTempSuffix)) {  // a write cut short by a crash
      if (::unlinkat(dir_fd_, name.c_str(), 0) == 0) ++stats_.skipped;
      continue;
    }
    if (!name.ends_with(kv_record::kSuffix)) continue;  // not ours: leave it alone
    // O_NONBLOCK: a FIFO named like a record must not hang the start.
    int fd = ::openat(dir_fd_, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    // Gone since it was listed, or a socket or device named like a record
    // (not ours either).
    if (fd < 0 && (errno == ENOENT || errno == ENXIO || errno == ENODEV)) continue;
    // Not proof the record is bad, and one left out of the index would sit
    // on disk, never read, evicted or counted by the cap: the start fails.
    // Any other failure (a link, no read permission, EIO) is a bad record,
    // removed below.
    if (fd < 0 && out_of_resources(errno))
      throw_errno([&] { return "cannot open " + (ns_dir_ / name).string(); });
    // Only the header is read here: a restart must stay fast with GBs on disk.
    // A record another user owns was planted while the folder was open
    // (before it was made private): not trusted, whatever its checksums say.
    std::optional<kv_record::Link> link;
    struct stat st {};
    if (fd >= 0) {
      const bool stated = ::fstat(fd, &st) == 0;  // (if not: as unreadable, removed below)
      const int err = errno;
      const bool regular = stated && S_ISREG(st.st_mode);
      if (regular && uint64_t(st.st_size) == record_bytes_ && st.st_uid == ::geteuid())
        link = kv_record::read_header(fd, shape());
      ::close(fd);
      if (!stated && out_of_resources(err)) throw_errno(err, [&] { return "cannot stat " + (ns_dir_ / name).string(); });
      if (stated && !regular) continue;  // a directory or FIFO named like a record: not ours either
    }
    if (link && link->parent != link->hash && name == link->hash.hex() + kv_record::kSuffix) {
      found.push_back({link->hash, link->parent, uint64_t(st.st_size), st.st_mtim});
    } else if (::unlinkat(dir_fd_, name.c_str(), 0) == 0) {
      ++stats_.skipped;
    }
  }
  if (ec) throw std::runtime_error("cannot list " + ns_dir_.string() + ": " + ec.message());
  // Oldest mtime first, so the least recently used records go first.
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  // (A record older than its parent, the parent written again later, is
  // counted as its child once the parent is indexed: add_entry.)
  for (const Found& f : found) add_entry(f.hash, f.parent, f.bytes);
  others_ = other_namespaces_records();
  std::ranges::sort(others_, {}, &OtherRecord::mtime);
  for (const OtherRecord& r : others_) stats_.other_bytes += r.bytes;
  if (opt_.max_bytes == 0) {
    std::error_code space_ec;
    const std::filesystem::space_info space = std::filesystem::space(opt_.dir, space_ec);
    opt_.max_bytes = std::max<uint64_t>(
        1, ((space_ec ? 0 : space.available) + stats_.bytes + stats_.other_bytes) / 2);
  }
  cap_ = opt_.max_bytes;
  Evicted evicted;
  evict_over_cap(evicted);  // max_bytes may have been lowered since the last run
  delete_files(evicted);
  count_again(evicted.others);
}

std::deque<SsdStore::OtherRecord> SsdStore::other_namespaces_records() const {
  std::deque<OtherRecord> records;
  std::error_code ec;
  for (auto dir = std::filesystem::directory_iterator(opt_.dir, ec);
       !ec && dir != std::filesystem::directory_iterator(); dir.increment(ec)) {
    const std::string name = dir->path().filename().string();
    // A namespace's folder: 32 hex digits, not a symbolic link, this
    // user's (another's came while DIR was open to them: not ours to count
    // or delete).
    struct stat dir_st {};
    if (dir->path() == ns_dir_ || name.size() != 32 ||
        name.find_first_not_of("0123456789abcdef") != std::string::npos ||
        ::lstat(dir->path().c_str(), &dir_st) != 0 || !S_ISDIR(dir_st.st_mode) || dir_st.st_uid != ::geteuid())
      continue;
    std::error_code file_ec;
    for (auto f = std::filesystem::directory_iterator(dir->path(), file_ec);
         !file_ec && f != std::filesystem::directory_iterator(); f.increment(file_ec)) {
      const std::string file = f->path().filename().string();
      if (!file.ends_with(kv_record::kSuffix) && !file.ends_with(kv_record::kTempSuffix)) continue;
      struct stat st {};
      if (::lstat(f->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      records.push_back({name, file, uint64_t(st.st_size),
                         int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
    }
    if (out_of_resources(file_ec.value()))  // (as the scan: records left uncounted by the cap)
      throw std::runtime_error("cannot list " + dir->path().string() + ": " + file_ec.message());
  }
  if (out_of_resources(ec.value())) throw std::runtime_error("cannot list " + opt_.dir.string() + ": " + ec.message());
  return records;
}

}  // namespace hearth::cache
