// A safetensors file from fuzzed bytes (8-byte header length, JSON header,
// data), opened as a checkpoint is. Bad files must be refused with
// std::runtime_error naming the file; a file that is accepted must hold what
// io/safetensors.h promises: every tensor inside the data section, its
// byte count equal to its shape times its dtype's size, shapes
// non-negative, no two tensors overlapping, its data aligned to its dtype
// (in place, or an exact copy).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "fuzz_support.h"
#include "io/safetensors.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path file = fuzz::scratch_dir() / "model.safetensors";
  fuzz::write_file(file, std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const io::Safetensors st = io::Safetensors::open_file(file);
    HEARTH_FUZZ_CHECK(st.files().size() == 1);
    const io::MappedFile& mapped = *st.files()[0];
    uint64_t header_len = 0;
    std::memcpy(&header_len, mapped.data(), 8);
    const uint8_t* begin = mapped.data() + 8 + header_len;
    const uint8_t* end = mapped.data() + mapped.size();
    std::vector<std::pair<const uint8_t*, const uint8_t*>> ranges;
    for (const auto& [name, t] : st.tensors()) {
      HEARTH_FUZZ_CHECK(name == t.name);
      // Its bytes in the file: read in place, or from an aligned copy.
      const uint8_t* in_file = mapped.data() + t.offset;
      HEARTH_FUZZ_CHECK(in_file >= begin && in_file <= end && t.nbytes <= size_t(end - in_file));
      HEARTH_FUZZ_CHECK(uintptr_t(t.data) % dtype_size(t.dtype) == 0);
      HEARTH_FUZZ_CHECK(t.data == in_file || std::memcmp(t.data, in_file, t.nbytes) == 0);
      __int128 bytes = dtype_size(t.dtype);
      for (int64_t d : t.shape) {
        HEARTH_FUZZ_CHECK(d >= 0);
        bytes *= d;
        HEARTH_FUZZ_CHECK(bytes <= __int128(mapped.size()));
      }
      HEARTH_FUZZ_CHECK(bytes == __int128(t.nbytes));
      HEARTH_FUZZ_CHECK(t.numel() * int64_t(dtype_size(t.dtype)) == int64_t(t.nbytes));
      (void)t.describe();
      if (t.nbytes) ranges.push_back({in_file, in_file + t.nbytes});
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) HEARTH_FUZZ_CHECK(ranges[i].first >= ranges[i - 1].second);
    HEARTH_FUZZ_CHECK(st.total_bytes() <= mapped.size());
  } catch (const std::runtime_error&) {
    // refused, with a message naming the file
  }
  return 0;
}
