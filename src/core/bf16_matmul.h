// 16-bit weights rearranged once at load, and the matmul that uses them:
// BF16 for the AVX-512 BF16 dot product (vdpbf16ps) or, on CPUs without one
// (AVX2, NEON), for a kernel that widens them to F32 in registers
// (bf16_matmul_hwy.cpp); F16 for that widening kernel on every CPU with a
// vector target for it (AVX2 with F16C, AVX-512, NEON).
//
// Packed layout: rows in tiles of 16; per tile, one 64-byte vector per pair
// of columns, holding rows 0..15's two BF16 weights (lane r = row r). One
// vdpbf16ps multiplies a column pair of all 16 rows by the same two BF16
// activations (broadcast) and accumulates into lane r: 32 multiply-adds per
// instruction, no horizontal sums, one sequential stream per tile. F16 pairs
// hold the 16 rows' column 2p and then their column 2p + 1 (32 bytes each),
// the runs a widening conversion (F16C, FCVTL) takes.
// vdpbf16ps rounds the activations to BF16 (nearest even) once per call;
// the widening kernel multiplies them as they are, in F32.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/matrix.h"
#include "core/packed.h"
#include "core/thread_pool.h"

namespace hearth {

struct Bf16Packed {
  int64_t rows = 0, cols = 0;
  int64_t tiles = 0, pairs = 0;         // pairs = ceil(cols / 2)
  DType dtype = DType::BF16;            // BF16 or F16
  AlignedBytes data{nullptr, nullptr};  // uint16_t BF16 or F16 values
  size_t bytes() const { return size_t(tiles) * size_t(pairs) * 64; }
};

bool bf16_supported(const Matrix& w);
// The kernel this process uses for BF16 weights: "avx512-bf16" (activations
// rounded to BF16), "widen-f32" (exact F32 activations), or "none" (no
// packing). F16 weights are packed for the widening kernel wherever BF16
// ones would be, and on AVX-512 BF16 CPUs too.
const char* bf16_target();
std::shared_ptr<const Bf16Packed> bf16_pack(const Matrix& w, ThreadPool& pool);
std::shared_ptr<const Bf16Packed> bf16_pack(std::span<const Matrix* const> parts, ThreadPool& pool);
// out[i] = f32_to_bf16(x[i]) (nearest even, NaNs kept quiet): how the
// activations are rounded, vectorized.
void to_bf16(const float* x, int64_t n, uint16_t* out);

void bf16_matmul(ThreadPool& pool, const Bf16Packed& w, const float* x, int64_t n_tokens, float* y);

namespace bf16_widen {
// The widening kernel (BF16 or F16, w.dtype) on the best Highway target: tiles [tile_begin,
// tile_end) of y = W x for every token.
void tiles(const Bf16Packed& w, int64_t tile_begin, int64_t tile_end, const float* x,
           int64_t n_tokens, float* y);
}  // namespace bf16_widen

}  // namespace hearth
