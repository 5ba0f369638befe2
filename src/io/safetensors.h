// Reading safetensors checkpoints, memory-mapped: a single file or the
// shards listed by model.safetensors.index.json. Headers are validated in
// full (dtype, shape, offsets in bounds, sizes matching shapes, no overlap)
// before any tensor is handed out; errors name the file and the tensor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace hearth::io {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping (or an aligned copy), aligned to the dtype
                                  // (not in a Safetensors::Use::Metadata open)
  size_t nbytes = 0;
  size_t offset = 0;  // where its bytes begin in its file
  std::string file;   // which file it came from, for messages

  int64_t numel() const;
  std::string describe() const;  // e.g. "model.norm.weight (F32 [64]) in model.safetensors"
};

// A read-only memory mapping of a whole file.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // When the file last changed (ns since the epoch): tells a checkpoint
  // rewritten in place from the one a prompt cache was built with.
  int64_t mtime_ns() const { return mtime_ns_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int64_t mtime_ns_ = 0;
};

class Safetensors {
 public:
  // What an open is for: reading tensors, or only their names, dtypes,
  // shapes and sizes (`hearth models`, `fit`, a load's memory plan), which
  // copies nothing: a tensor not aligned in its file keeps a misaligned
  // `data` that must not be read.
  enum class Use { Read, Metadata };
  // model_dir/model.safetensors.index.json if present, else model_dir/model.safetensors,
  // else every *.safetensors file in model_dir.
  static Safetensors open_dir(const std::filesystem::path& model_dir, Use use = Use::Read);
  static Safetensors open_file(const std::filesystem::path& file, Use use = Use::Read);

  const TensorInfo* find(const std::string& name) const;
  const TensorInfo& get(const std::string& name) const;  // throws if missing
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  size_t total_bytes() const;
  // Drops this process's pages of every tensor whose data is not in `in_use`
  // (madvise MADV_DONTNEED, whole pages inside the tensor only): a model
  // that copied what its kernels read (packed weights, norms) would keep the
  // mapped originals resident beside the copies. A page read again later
  // comes from the file again.
  void release_except(std::span<const void* const> in_use) const;
  // The mapped files, whole (headers included), in the order they were opened.
  const std::vector<std::unique_ptr<MappedFile>>& files() const { return files_; }

 private:
  void add_file(const std::filesystem::path& file);
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::map<std::string, TensorInfo> tensors_;
  std::vector<std::unique_ptr<uint64_t[]>> copies_;  // of tensors not aligned in their file
  Use use_ = Use::Read;
};

}  // namespace hearth::io
