// Writing a file so that nobody ever sees half of it: everything goes to
// PATH.tmp, which replaces PATH only once complete and on disk (fsync of the
// file, then of the directory after the rename, so a power cut leaves the old
// file or the whole new one); on any error (or if commit() is never reached)
// the temporary file is removed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace hearth::io {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // creates PATH.tmp; throws naming it
  ~AtomicFile();                          // removes PATH.tmp unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  // Writes n pieces, produce(i, buffer) filling piece i (sizing the buffer
  // itself); piece i is produced while piece i-1 is still being written.
  void write_pieces(size_t n, const std::function<void(size_t, std::vector<uint8_t>&)>& produce);
  // Flushes, syncs, closes and renames PATH.tmp to PATH, then syncs the
  // directory.
  void commit();

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
};

}  // namespace hearth::io
