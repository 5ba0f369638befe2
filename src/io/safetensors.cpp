#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <unordered_set>

namespace hearth::io {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kMaxHeaderBytes = 100000000;  // as the reference implementation
[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw std::runtime_error(file + ": " + what);
}

// Drops the whole pages of a mapped range from this process (the pages it
// shares with its neighbours stay).
void release_pages(const uint8_t* data, size_t nbytes) {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t from = (uintptr_t(data) + page - 1) / page * page;
  const uintptr_t to = (uintptr_t(data) + nbytes) / page * page;
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::describe() const {
  std::string s = name + " (" + std::string(dtype_name(dtype)) + " [";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]) in " + file;
}

MappedFile::MappedFile(const fs::path& path) {
  // O_NONBLOCK: a FIFO named like a checkpoint must fail below, not hang the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    fail(path.string(), std::string("cannot open: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path.string(), "not a regular file");
  }
  size_ = size_t(st.st_size);
  mtime_ns_ = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;  // (before close may change it)
      ::close(fd);
      fail(path.string(), std::string("cannot map: ") + std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

Safetensors Safetensors::open_file(const fs::path& file, Use use) {
  Safetensors st;
  st.use_ = use;
  st.add_file(file);
  return st;
}

Safetensors Safetensors::open_dir(const fs::path& dir, Use use) {
  Safetensors st;
  st.use_ = use;
  if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": not a model directory");
  fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index)) {
    std::ifstream in(index);
    json j;
    try {
      j = json::parse(in);
    } catch (const std::exception& e) {
      fail(index.string(), std::string("invalid JSON: ") + e.what());
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      fail(index.string(), "no \"weight_map\" object");
    std::set<std::string> shards;
    for (auto& [name, shard] : j["weight_map"].items()) {
      if (!shard.is_string()) fail(index.string(), "shard of " + name + " is not a string");
      // A file beside the index: not a path that leads out of the model's folder.
      const std::string s = shard.get<std::string>();
      if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..")
        fail(index.string(), "shard of " + name + " is not a file name in the model's folder");
      shards.insert(s);
    }
    for (const auto& s : shards) st.add_file(dir / s);
    for (auto& [name, shard] : j["weight_map"].items())
      if (!st.find(name))
        fail(index.string(), "tensor " + name + " is listed for " + shard.get<std::string>() +
                                 " but that file does not hold it");
    return st;
  }
  if (fs::exists(dir / "model.safetensors")) {
    st.add_file(dir / "model.safetensors");
    return st;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path());
  if (files.empty()) throw std::runtime_error(dir.string() + ": no .safetensors file");
  std::sort(files.begin(), files.end());
  for (const auto& f : files) st.add_file(f);
  return st;
}

void Safetensors::add_file(const fs::path& path) {
  const std::string file = path.filename().string();
  auto mapped = std::make_unique<MappedFile>(path);
  const uint8_t* p = mapped->data();
  const size_t size = mapped->size();
  if (size < 8)
    fail(file, "too short to be a safetensors file (" + std::to_string(size) + " bytes)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, p, 8);  // little-endian on every platform we build for
  if (header_len > size - 8)
    fail(file, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(size) + " bytes): truncated?");
  // The format's own limit: a JSON tree of GBs would be built before any
  // check (hearth models reads every header it finds).
  if (header_len > kMaxHeaderBytes)
    fail(file, "header length " + std::to_string(header_len) + " is over safetensors' limit of " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
  if (header_len == 0 || p[8] != '{') fail(file, "header is not a JSON object");
  json header;
  try {
    header = json::parse(p + 8, p + 8 + header_len);
  } catch (const std::exception& e) {
    fail(file, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(file, "header is not a JSON object");
  const uint8_t* data = p + 8 + header_len;
  const size_t data_size = size - 8 - header_len;

  std::vector<std::pair<size_t, size_t>> ranges;
  for (auto& item : header.items()) {
    const std::string& name = item.key();
    auto& entry = item.value();
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& what) { fail(file, "tensor " + name + ": " + what); };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      bad("entry needs dtype, shape and data_offsets");
    if (!entry["dtype"].is_string()) bad("dtype is not a string");
    auto dtype = dtype_from_name(entry["dtype"].get<std::string>());
    if (!dtype) bad("unknown dtype " + entry["dtype"].get<std::string>());
    TensorInfo t;
    t.name = name;
    t.dtype = *dtype;
    t.file = file;
    if (!entry["shape"].is_array()) bad("shape is not an array");
    for (auto& d : entry["shape"]) {
      // Past 2^63 - 1 a dimension would turn negative as int64_t (and two
      // negative ones make a positive element count).
      if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
        bad("shape has a dimension that is not an integer from 0 to 2^63 - 1");
      t.shape.push_back(d.get<int64_t>());
    }
    auto& off = entry["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      bad("data_offsets must be two non-negative integers");
    size_t begin = off[0].get<size_t>(), end = off[1].get<size_t>();
    if (begin > end) bad("data_offsets are reversed");
    if (end > data_size)
      bad("data ends at byte " + std::to_string(end) + " but the data section has only " +
          std::to_string(data_size) + " bytes: truncated file?");
    // Overflow-safe size check: numel * dtype_size must equal the byte range
    // (the product stops growing past data_size, each factor is below 2^63).
    __int128 expect = dtype_size(t.dtype);
    for (int64_t d : t.shape) {
      expect *= d;
      if (expect > __int128(data_size)) break;
    }
    if (expect != __int128(end - begin))
      bad("shape and dtype need " + std::to_string((long long)expect) +
          " bytes but data_offsets span " + std::to_string(end - begin));
    t.data = data + begin;
    t.nbytes = end - begin;
    t.offset = size_t(t.data - p);
    // The format has no alignment rule (writers pad the header to 8 and put
    // the widest dtypes first, but need not): a tensor whose elements are
    // not aligned is read from an aligned copy, since kernels and
    // vectorized loops may assume they are.
    if (use_ == Use::Read && uintptr_t(t.data) % dtype_size(t.dtype) != 0) {
      auto& copy = copies_.emplace_back(new uint64_t[(t.nbytes + 7) / 8]);
      std::memcpy(copy.get(), t.data, t.nbytes);
      release_pages(t.data, t.nbytes);
      t.data = reinterpret_cast<const uint8_t*>(copy.get());
    }
    ranges.push_back({begin, end});
    if (tensors_.count(name)) bad("defined in two files");
    tensors_.emplace(name, std::move(t));
  }
  // Against the furthest end so far: an empty range between two that
  // overlap must not hide them from each other.
  std::sort(ranges.begin(), ranges.end());
  size_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin == end) continue;
    if (begin < covered) fail(file, "two tensors overlap at byte " + std::to_string(begin));
    covered = std::max(covered, end);
  }
  files_.push_back(std::move(mapped));
}

const TensorInfo* Safetensors::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorInfo& Safetensors::get(const std::string& name) const {
  if (auto* t = find(name)) return *t;
  throw std::runtime_error("missing tensor " + name + " in the checkpoint");
}

void Safetensors::release_except(std::span<const void* const> in_use) const {
  const std::unordered_set<const void*> keep(in_use.begin(), in_use.end());
  auto mapped = [&](const uint8_t* p) {
    return std::any_of(files_.begin(), files_.end(),
                       [&](const auto& f) { return p >= f->data() && p < f->data() + f->size(); });
  };
  for (const auto& [_, t] : tensors_) {
    if (!keep.count(t.data) && mapped(t.data)) release_pages(t.data, t.nbytes);  // (never an aligned copy)
  }
}

size_t Safetensors::total_bytes() const {
  size_t n = 0;
  for (const auto& [_, t] : tensors_) n += t.nbytes;
  return n;
}

}  // namespace hearth::io
