// Storage for large read-mostly arrays (packed weights, scratch): aligned for
// 512-bit loads, and on huge pages from 2 MB up.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace hearth {

using AlignedBytes = std::unique_ptr<uint8_t, void (*)(void*)>;

// A huge page on x86-64 and on Arm with 4 KB base pages.
constexpr size_t kHugePageBytes = size_t(2) << 20;

// Zeroed storage aligned for 512-bit loads. Storage of a huge page or more
// (the packed weights) starts on a huge-page boundary and asks the kernel for
// huge pages: decode reads every weight once a token, and with 4 KB pages
// nearly every page of that stream misses the TLB, which in a virtual machine
// costs a two-level page walk. Measured on a Zen 5 VM, 8-bit qwen3-0.6b decode
// on 1 thread: 3-15 tok/s with 4 KB pages, 30-35 with huge pages.
inline AlignedBytes aligned_bytes(size_t n) {
  const size_t size = (std::max<size_t>(n, 1) + 63) / 64 * 64;
  void* p = nullptr;
  if (posix_memalign(&p, size >= kHugePageBytes ? kHugePageBytes : 64, size) != 0) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  if (size >= kHugePageBytes) ::madvise(p, size, MADV_HUGEPAGE);  // before the first touch below
#endif
  std::memset(p, 0, size);
  return AlignedBytes(static_cast<uint8_t*>(p), std::free);
}

// The kernel's transparent-huge-page setting, the bracketed word of the
// file ("always [madvise] never"): "always", "madvise" or "never", and
// "none" where the file is missing (no such feature). Under "never"
// aligned_bytes gets 4 KB pages, and memory-bound decode may run far below
// the bandwidth.
std::string transparent_huge_pages(const char* path = "/sys/kernel/mm/transparent_hugepage/enabled");

}  // namespace hearth
