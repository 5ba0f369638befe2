#include "io/safetensors_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
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

namespace {
struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};

void write_all(std::FILE* f, const void* data, size_t n, const std::string& path) {
  if (n && std::fwrite(data, 1, n, f) != n)
    throw std::runtime_error("writing " + path + ": " + std::strerror(errno));
}
}  // namespace

void SafetensorsWriter::write(const std::string& path) const {
  std::string json = header();
  json.append((8 - (8 + json.size()) % 8) % 8, ' ');
  const std::string tmp = path + ".tmp";
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
  if (!f) throw std::runtime_error("cannot create " + tmp + ": " + std::strerror(errno));
  try {
    std::setvbuf(f.get(), nullptr, _IOFBF, 1 << 22);
    uint8_t len[8];
    uint64_t n = json.size();
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
    write_all(f.get(), len, 8, tmp);
    write_all(f.get(), json.data(), json.size(), tmp);

    // Produce tensor i into one buffer while tensor i-1 is written from the other.
    std::vector<uint8_t> buffers[2];
    std::future<void> pending;
    int i = 0;
    for (const auto& [name, e] : tensors_) {
      std::vector<uint8_t>& buf = buffers[i++ % 2];
      size_t size = byte_size(e.dtype, e.shape);
      buf.resize(size);
      if (size) e.fill(buf.data());
      if (pending.valid()) pending.get();
      pending = std::async(std::launch::async,
                           [&f, &buf, size, &tmp] { write_all(f.get(), buf.data(), size, tmp); });
    }
    if (pending.valid()) pending.get();
    if (std::fflush(f.get()) != 0)
      throw std::runtime_error("writing " + tmp + ": " + std::strerror(errno));
    if (std::fclose(f.release()) != 0)
      throw std::runtime_error("closing " + tmp + ": " + std::strerror(errno));
  } catch (...) {
    f.reset();
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + err);
  }
}

}  // namespace hearth::io
