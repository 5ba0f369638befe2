// What the repacked-weight kernels (int8_matmul, bf16_matmul) share: the
// tile height, the weight-stream prefetch, and the intrinsics header (x86, or
// NEON on 64-bit Arm).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/aligned_bytes.h"
#include "core/matrix.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip its own uninitialized-value warnings
// (_mm512_undefined_* inside the intrinsics); they are false positives.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace hearth {

// Rows per packed tile: one per 32-bit lane of a 512-bit register.
constexpr int kPackedRows = 16;

// The rows of several matrices in the same format and with the same columns,
// one after another: packing them as one matrix (q/k/v, gate/up) makes one
// kernel call, and one pass over the activations, where there were several.
class RowStack {
 public:
  explicit RowStack(std::span<const Matrix* const> parts) : parts_(parts.begin(), parts.end()) {
    for (const Matrix* m : parts_) {
      starts_.push_back(rows_);
      rows_ += m->rows;
    }
  }
  int64_t rows() const { return rows_; }
  const Matrix& first() const { return *parts_.front(); }
  // Same columns, dtype and quantization as the first part.
  bool uniform() const {
    const Matrix& f = first();
    return std::all_of(parts_.begin(), parts_.end(), [&](const Matrix* m) {
      return m->cols == f.cols && m->dtype == f.dtype && m->bits == f.bits &&
             m->group_size == f.group_size && m->scale_dtype == f.scale_dtype;
    });
  }
  // The part holding stacked row `row`, and the row's index within it.
  std::pair<const Matrix*, int64_t> locate(int64_t row) const {
    size_t i = size_t(std::upper_bound(starts_.begin(), starts_.end(), row) - starts_.begin()) - 1;
    return {parts_[i], row - starts_[i]};
  }

 private:
  std::vector<const Matrix*> parts_;
  std::vector<int64_t> starts_;
  int64_t rows_ = 0;
};

// How far ahead of use the packed kernels prefetch their weight stream, in
// bytes: near lines into L1, far ones into L2. Decode is bound by memory and
// needs more lines in flight than the hardware prefetchers keep; the far
// prefetch is what brings 4-bit and BF16 decode close to the read bandwidth.
// (Measured on x86 only; the Arm kernels use the same distances untested.)
constexpr size_t kPrefetchNear = 2048, kPrefetchFar = 16384;

// Prefetches the lines of [p, p + bytes) near and far ahead (locality 3 and
// 2: x86's T0 and T1 hints, Arm's L1 and L2 keep).
inline void prefetch_ahead(const uint8_t* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) {
    __builtin_prefetch(p + kPrefetchNear + off, 0, 3);
    __builtin_prefetch(p + kPrefetchFar + off, 0, 2);
  }
}

// Only the far prefetch, for a stream read once: the near one as well cost
// 8-bit decode about 9% and 4-bit up to 8% on an AVX2-only Zen 3, and with
// AVX-512 on a Zen 5 4-bit decode about 8% and BF16 2-6% (the L1 prefetcher
// follows the stream by itself; docs/performance/engine.md, "Weight prefetch").
inline void prefetch_far(const uint8_t* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + kPrefetchFar + off, 0, 2);
}

#if defined(__x86_64__)
// Four bytes (4 int8 activations, or 2 BF16 ones) read as one int32 through a
// may_alias type, so the compiler can fold the load into the consuming
// instruction as an embedded broadcast.
typedef int32_t __attribute__((may_alias, aligned(1))) AliasedInt32;
#endif

}  // namespace hearth
