#include "io/gguf_writer.h"

#include "io/atomic_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "core/dtype.h"

namespace hearth::io {

// ---------------------------------------------------------------------------
// types and quantizers

int64_t ggml_block_elems(GgmlType t) {
  return t == GgmlType::Q4_0 || t == GgmlType::Q8_0 ? kGgmlQK : 1;
}

int64_t ggml_block_bytes(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 4;
    case GgmlType::F16:
    case GgmlType::BF16: return 2;
    case GgmlType::Q4_0: return kQ4_0BlockBytes;
    case GgmlType::Q8_0: return kQ8_0BlockBytes;
  }
  throw std::invalid_argument("gguf: unknown ggml type");
}

const char* ggml_type_name(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return "F32";
    case GgmlType::F16: return "F16";
    case GgmlType::BF16: return "BF16";
    case GgmlType::Q4_0: return "Q4_0";
    case GgmlType::Q8_0: return "Q8_0";
  }
  return "?";
}

namespace {
void put_f16(uint8_t* dst, float v) {
  uint16_t h = f32_to_f16(v);
  dst[0] = uint8_t(h), dst[1] = uint8_t(h >> 8);
}
}  // namespace

void quantize_q8_0(const float* x, int64_t n, uint8_t* out) {
  if (n % kGgmlQK) throw std::invalid_argument("quantize_q8_0: size not a multiple of 32");
  for (int64_t b = 0; b < n / kGgmlQK; ++b, x += kGgmlQK, out += kQ8_0BlockBytes) {
    float amax = 0;
    for (int j = 0; j < kGgmlQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    put_f16(out, d);
    for (int j = 0; j < kGgmlQK; ++j) out[2 + j] = uint8_t(int8_t(std::roundf(x[j] * id)));
  }
}

void quantize_q4_0(const float* x, int64_t n, uint8_t* out) {
  if (n % kGgmlQK) throw std::invalid_argument("quantize_q4_0: size not a multiple of 32");
  for (int64_t b = 0; b < n / kGgmlQK; ++b, x += kGgmlQK, out += kQ4_0BlockBytes) {
    float amax = 0, max = 0;  // the value of largest magnitude, with its sign (first wins)
    for (int j = 0; j < kGgmlQK; ++j)
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
    const float d = max / -8;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    put_f16(out, d);
    for (int j = 0; j < kGgmlQK / 2; ++j) {
      // x * id lies in [-8, 8]: + 8.5 and truncation round to nearest in [0, 16].
      auto q = [&](float v) { return uint8_t(std::min(15, int(int8_t(v * id + 8.5f)))); };
      out[2 + j] = uint8_t(q(x[j]) | (q(x[j + kGgmlQK / 2]) << 4));
    }
  }
}

// ---------------------------------------------------------------------------
// serialization

namespace {

template <class T>
void put(std::string& s, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, AArch64)
  s.append(b, sizeof(T));
}

void put_string(std::string& s, const std::string& v) {
  put<uint64_t>(s, v.size());
  s += v;
}

}  // namespace

std::string& GgufWriter::begin_kv(const std::string& key, GgufType type) {
  if (key.empty()) throw std::invalid_argument("gguf: empty metadata key");
  if (!keys_.insert(key).second) throw std::invalid_argument("gguf: duplicate metadata key " + key);
  put_string(kv_, key);
  put<uint32_t>(kv_, uint32_t(type));
  ++kv_count_;
  return kv_;
}

void GgufWriter::add_u8(const std::string& k, uint8_t v) { put(begin_kv(k, GgufType::U8), v); }
void GgufWriter::add_i8(const std::string& k, int8_t v) { put(begin_kv(k, GgufType::I8), v); }
void GgufWriter::add_u16(const std::string& k, uint16_t v) { put(begin_kv(k, GgufType::U16), v); }
void GgufWriter::add_i16(const std::string& k, int16_t v) { put(begin_kv(k, GgufType::I16), v); }
void GgufWriter::add_u32(const std::string& k, uint32_t v) { put(begin_kv(k, GgufType::U32), v); }
void GgufWriter::add_i32(const std::string& k, int32_t v) { put(begin_kv(k, GgufType::I32), v); }
void GgufWriter::add_u64(const std::string& k, uint64_t v) { put(begin_kv(k, GgufType::U64), v); }
void GgufWriter::add_i64(const std::string& k, int64_t v) { put(begin_kv(k, GgufType::I64), v); }
void GgufWriter::add_f32(const std::string& k, float v) { put(begin_kv(k, GgufType::F32), v); }
void GgufWriter::add_f64(const std::string& k, double v) { put(begin_kv(k, GgufType::F64), v); }
void GgufWriter::add_bool(const std::string& k, bool v) {
  put<uint8_t>(begin_kv(k, GgufType::BOOL), v ? 1 : 0);
}
void GgufWriter::add_string(const std::string& k, const std::string& v) {
  put_string(begin_kv(k, GgufType::STRING), v);
}

void GgufWriter::add_array(const std::string& k, const std::vector<std::string>& v) {
  std::string& s = begin_kv(k, GgufType::ARRAY);
  put<uint32_t>(s, uint32_t(GgufType::STRING));
  put<uint64_t>(s, v.size());
  for (const auto& e : v) put_string(s, e);
}

namespace {
template <class T>
void put_array(std::string& s, GgufType elem, const std::vector<T>& v) {
  put<uint32_t>(s, uint32_t(elem));
  put<uint64_t>(s, v.size());
  s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
}  // namespace

void GgufWriter::add_array(const std::string& k, const std::vector<float>& v) {
  put_array(begin_kv(k, GgufType::ARRAY), GgufType::F32, v);
}
void GgufWriter::add_array(const std::string& k, const std::vector<int32_t>& v) {
  put_array(begin_kv(k, GgufType::ARRAY), GgufType::I32, v);
}
void GgufWriter::add_array(const std::string& k, const std::vector<uint32_t>& v) {
  put_array(begin_kv(k, GgufType::ARRAY), GgufType::U32, v);
}

void GgufWriter::set_alignment(uint32_t alignment) {
  if (alignment < 8 || (alignment & (alignment - 1)))
    throw std::invalid_argument("gguf: alignment must be a power of two >= 8");
  add_u32("general.alignment", alignment);
  alignment_ = alignment;
}

uint64_t GgufWriter::byte_size(GgmlType type, const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n / uint64_t(ggml_block_elems(type)) * uint64_t(ggml_block_bytes(type));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> shape,
                            Fill fill) {
  if (name.empty()) throw std::invalid_argument("gguf: empty tensor name");
  if (shape.empty() || shape.size() > 4)
    throw std::invalid_argument("gguf: tensor " + name + " must have 1 to 4 dimensions");
  for (int64_t d : shape)
    if (d < 0) throw std::invalid_argument("gguf: negative dimension in " + name);
  if (shape.back() % ggml_block_elems(type))
    throw std::invalid_argument("gguf: " + name + ": innermost size " +
                                std::to_string(shape.back()) + " is not a multiple of the " +
                                ggml_type_name(type) + " block size");
  if (!names_.insert(name).second) throw std::invalid_argument("gguf: duplicate tensor " + name);
  tensors_.push_back(Tensor{name, type, std::move(shape), std::move(fill)});
}

std::vector<uint64_t> GgufWriter::offsets() const {
  std::vector<uint64_t> out;
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    out.push_back(offset);
    offset += byte_size(t.type, t.shape);
    offset += (alignment_ - offset % alignment_) % alignment_;
  }
  return out;
}

std::string GgufWriter::header() const {
  std::string h = "GGUF";
  put<uint32_t>(h, 3);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, kv_count_);
  h += kv_;
  auto offs = offsets();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    put_string(h, t.name);
    put<uint32_t>(h, uint32_t(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<uint64_t>(h, uint64_t(*d));
    put<uint32_t>(h, uint32_t(t.type));
    put<uint64_t>(h, offs[i]);
  }
  h.append((alignment_ - h.size() % alignment_) % alignment_, '\0');
  return h;
}

void GgufWriter::write(const std::string& path) const {
  const std::string head = header();
  AtomicFile file(path);
  file.write(head.data(), head.size());
  file.write_pieces(tensors_.size(), [&](size_t i, std::vector<uint8_t>& buf) {
    const Tensor& t = tensors_[i];
    const size_t size = byte_size(t.type, t.shape);
    buf.assign(size + (alignment_ - size % alignment_) % alignment_, 0);  // zero padding to the alignment
    if (size) t.fill(buf.data());
  });
  file.commit();
}

}  // namespace hearth::io
