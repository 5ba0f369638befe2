#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <stdexcept>

#include "core/errno_error.h"

namespace hearth::io {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) throw_errno([&] { return "cannot create " + tmp_; });
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 22);
}

AtomicFile::~AtomicFile() {
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t n) {
  if (n && std::fwrite(data, 1, n, file_) != n) throw_errno([&] { return "writing " + tmp_; });
}

void AtomicFile::write_pieces(size_t n, const std::function<void(size_t, std::vector<uint8_t>&)>& produce) {
  std::vector<uint8_t> buffers[2];
  std::future<void> pending;
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint8_t>& buf = buffers[i % 2];
    produce(i, buf);
    if (pending.valid()) pending.get();  // the other buffer is free again
    pending = std::async(std::launch::async, [this, &buf] { write(buf.data(), buf.size()); });
  }
  if (pending.valid()) pending.get();
}

void AtomicFile::commit() {
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) throw_errno([&] { return "writing " + tmp_; });
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp_.c_str());
    throw std::runtime_error("closing " + tmp_ + ": " + err);
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp_.c_str());
    throw std::runtime_error("cannot rename " + tmp_ + " to " + path_ + ": " + err);
  }
  // The rename is on disk once its directory is.
  std::string dir = std::filesystem::path(path_).parent_path().string();
  if (dir.empty()) dir = ".";
  if (const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    const bool synced = ::fsync(fd) == 0;
    const std::string err = std::strerror(errno);
    ::close(fd);
    if (!synced) throw std::runtime_error("syncing " + dir + ": " + err);
  }
}

}  // namespace hearth::io
