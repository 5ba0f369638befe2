#include "io/safetensors_writer.h"

#include "io/atomic_file.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace hearth::io {

uint64_t SafetensorsWriter::byte_size(DType dtype, const std::vector<int64_t>& shape) {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

void SafetensorsWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                            Fill fill) {
  if (name.empty() || name == "__metadata__")
    throw std::invalid_argument("safetensors: invalid tensor name '" + name + "'");
  for (int64_t d : shape)
    if (d < 0) throw std::invalid_argument("safetensors: negative dimension in " + name);
  if (!tensors_.emplace(name, Entry{dtype, std::move(shape), std::move(fill)}).second)
    throw std::invalid_argument("safetensors: duplicate tensor " + name);
}

std::string SafetensorsWriter::header() const {
  nlohmann::json h = nlohmann::json::object();
  if (!metadata_.empty()) h["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const auto& [name, e] : tensors_) {
    uint64_t size = byte_size(e.dtype, e.shape);
    h[name] = {{"dtype", std::string(dtype_name(e.dtype))},
               {"shape", e.shape},
               {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  return h.dump();
}

void SafetensorsWriter::write(const std::string& path) const {
  std::string json = header();
  json.append((8 - (8 + json.size()) % 8) % 8, ' ');
  AtomicFile file(path);
  uint8_t len[8];
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
  file.write(len, 8);
  file.write(json.data(), json.size());
  std::vector<const Entry*> entries;
  for (const auto& [name, e] : tensors_) entries.push_back(&e);
  file.write_pieces(entries.size(), [&](size_t i, std::vector<uint8_t>& buf) {
    buf.resize(byte_size(entries[i]->dtype, entries[i]->shape));
    if (!buf.empty()) entries[i]->fill(buf.data());
  });
  file.commit();
}

}  // namespace hearth::io
