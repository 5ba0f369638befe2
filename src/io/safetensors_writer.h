// Writes a .safetensors file: an 8-byte little-endian header length, a JSON
// header (dtype, shape, data_offsets per tensor, plus "__metadata__") padded
// with spaces to a multiple of 8 bytes, then the tensor data back to back in
// sorted-name order.
//
// Tensors are declared first with a callback that produces their bytes; the
// data is generated and written one tensor at a time (the next tensor is
// produced while the previous one is written), so a multi-gigabyte file never
// has to fit in memory. The file appears atomically: it is written to
// "<path>.tmp" and renamed when complete.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace hearth::io {

class SafetensorsWriter {
 public:
  // Fills exactly byte_size(dtype, shape) bytes at dst.
  using Fill = std::function<void(uint8_t* dst)>;

  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  // Throws std::invalid_argument for an empty or duplicate name, "__metadata__",
  // or a negative dimension.
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, Fill fill);

  // The header JSON (unpadded) for the tensors added so far.
  std::string header() const;

  // Writes the file; throws std::runtime_error on I/O failure (the partial
  // temp file is removed).
  void write(const std::string& path) const;

  static uint64_t byte_size(DType dtype, const std::vector<int64_t>& shape);

 private:
  struct Entry {
    DType dtype;
    std::vector<int64_t> shape;
    Fill fill;
  };
  std::map<std::string, Entry> tensors_;  // std::map: sorted by name, byte-wise
  std::map<std::string, std::string> metadata_;
};

}  // namespace hearth::io
