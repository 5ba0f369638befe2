// What the repacked-weight kernels (int8_matmul, bf16_matmul) share: the
// tile height, 64-byte aligned storage, and the x86 intrinsics header.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip its own uninitialized-value warnings
// (_mm512_undefined_* inside the intrinsics); they are false positives.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace hearth {

// Rows per packed tile: one per 32-bit lane of a 512-bit register.
constexpr int kPackedRows = 16;

using AlignedBytes = std::unique_ptr<uint8_t, void (*)(void*)>;

// Zeroed storage aligned for 512-bit loads.
inline AlignedBytes aligned_bytes(size_t n) {
  const size_t size = (std::max<size_t>(n, 1) + 63) / 64 * 64;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, size));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, size);
  return AlignedBytes(p, std::free);
}

#if defined(__x86_64__)
// Four bytes (4 int8 activations, or 2 BF16 ones) broadcast to every lane.
// Read through a may_alias type so the compiler can fold the load into the
// consuming instruction as an embedded broadcast ({1to16}).
typedef int32_t __attribute__((may_alias, aligned(1))) AliasedInt32;
__attribute__((target("avx512f"))) inline __m512i broadcast4(const void* p) {
  return _mm512_set1_epi32(*static_cast<const AliasedInt32*>(p));
}
#endif

}  // namespace hearth
