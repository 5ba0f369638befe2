// Writes a GGUF v3 file (llama.cpp's format), and the ggml block quantizers
// Q8_0 and Q4_0 it needs for quantized tensors.
//
// Layout (all little-endian):
//   "GGUF", u32 version = 3, u64 tensor count, u64 metadata count,
//   metadata: { string key, u32 value type, value }...,
//   tensor infos: { string name, u32 n_dims, u64 ne[n_dims] (innermost
//                   first), u32 ggml type, u64 offset into the data }...,
//   zero padding to the alignment, then the tensor data, each tensor starting
//   at a multiple of the alignment (32 unless general.alignment says else).
// A string is a u64 byte count and the bytes (no terminator); an array is
// u32 element type, u64 count, the elements.
//
// Like SafetensorsWriter, tensors are declared with a callback that produces
// their bytes; data is produced and written one tensor at a time (the next
// while the previous is written) and the file appears atomically
// ("<path>.tmp", renamed when complete).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace hearth::io {

// GGUF metadata value types (the u32 tag written before each value).
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12
};

// The ggml tensor types this writer produces (their ggml_type numbers).
enum class GgmlType : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8, BF16 = 30 };

// llama.cpp's general.file_type values (enum llama_ftype) for whole-file types.
enum class GgufFileType : uint32_t { ALL_F32 = 0, MOSTLY_F16 = 1, MOSTLY_Q4_0 = 2, MOSTLY_Q8_0 = 7,
                                     MOSTLY_BF16 = 32 };

// Elements per block (1 for the float types) and bytes per block.
int64_t ggml_block_elems(GgmlType t);
int64_t ggml_block_bytes(GgmlType t);
const char* ggml_type_name(GgmlType t);  // "F32", "Q4_0", ...

// ggml's reference quantizers (quantize_row_q8_0_ref / quantize_row_q4_0_ref),
// bit for bit. n must be a multiple of 32; out receives n / 32 blocks.
//
// Q8_0 block (34 bytes): f16 d = amax / 127, then 32 int8 q = round(x / d)
// (half away from zero); x ≈ d * q.
// Q4_0 block (18 bytes): f16 d = m / -8 where m is the signed value of the
// largest magnitude, then 16 bytes: byte j holds q[j] in its low nibble and
// q[j + 16] in its high nibble, q = min(15, int8(x / d + 8.5)); x ≈ d * (q - 8).
constexpr int64_t kGgmlQK = 32;
constexpr int64_t kQ8_0BlockBytes = 34;
constexpr int64_t kQ4_0BlockBytes = 18;
void quantize_q8_0(const float* x, int64_t n, uint8_t* out);
void quantize_q4_0(const float* x, int64_t n, uint8_t* out);

class GgufWriter {
 public:
  // Fills exactly byte_size(type, shape) bytes at dst.
  using Fill = std::function<void(uint8_t* dst)>;

  // Metadata, written in the order added. Each throws std::invalid_argument
  // for an empty or duplicate key.
  void add_u8(const std::string& key, uint8_t v);
  void add_i8(const std::string& key, int8_t v);
  void add_u16(const std::string& key, uint16_t v);
  void add_i16(const std::string& key, int16_t v);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_i64(const std::string& key, int64_t v);
  void add_f32(const std::string& key, float v);
  void add_f64(const std::string& key, double v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_array(const std::string& key, const std::vector<std::string>& v);
  void add_array(const std::string& key, const std::vector<float>& v);
  void add_array(const std::string& key, const std::vector<int32_t>& v);
  void add_array(const std::string& key, const std::vector<uint32_t>& v);
  // Writes general.alignment (u32; a power of two, at least 8) and aligns the
  // data to it.
  void set_alignment(uint32_t alignment);
  uint32_t alignment() const { return alignment_; }

  // A tensor, written in the order added. shape is outermost first, as in
  // safetensors and NumPy ({rows, cols} for a matrix); the file stores it
  // reversed (ne[0] = cols). The innermost dimension must be a multiple of the
  // type's block size. Throws std::invalid_argument for an empty or duplicate
  // name, a negative dimension, or a bad innermost size.
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> shape, Fill fill);

  static uint64_t byte_size(GgmlType type, const std::vector<int64_t>& shape);

  // Everything before the tensor data, padding included.
  std::string header() const;

  // Writes the file; throws std::runtime_error on I/O failure (the partial
  // temp file is removed).
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> shape;
    Fill fill;
  };
  // Each tensor's offset from the start of the data section.
  std::vector<uint64_t> offsets() const;
  std::string& begin_kv(const std::string& key, GgufType type);

  std::string kv_;  // serialized metadata entries
  uint64_t kv_count_ = 0;
  std::set<std::string> keys_;
  std::vector<Tensor> tensors_;
  std::set<std::string> names_;
  uint32_t alignment_ = 32;
};

}  // namespace hearth::io
