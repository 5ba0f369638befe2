// MLX affine-quantized weights (2- to 8-bit codes) rearranged once at load
// for an AVX-512 VNNI kernel (AVX2 CPUs read the same layout as two halves of
// 8 rows, int8_matmul_avx2-inl.h; 64-bit Arm as four quarters of 4 rows,
// int8_matmul_neon-inl.h), and the matmul that uses them.
//
// Packed layout: rows in tiles of 16; per tile, per weight group, the codes of
// the 16 rows as 64-byte vectors in which byte 4*r + i is row r's code for
// column 4*k + i of a 4-column quad k (for 4-bit codes one vector carries two
// quads, quad 2j in the low nibbles and quad 2j+1 in the high ones), followed
// by the 16 rows' scales and then their biases, in the checkpoint's dtype.
// 6-bit codes (and 5-bit ones, whose codes fit) take a layout of two planes:
// first the codes' low nibbles exactly as the 4-bit layout, then their top
// two bits, one vector per 4 quads (quad 4m + k of byte 4*r + i in bits 2k,
// 2k+1): 6 bits a weight. On CPUs with AMX, whose tiles take whole bytes, they
// take the 8-bit layout instead, and 2- and 3-bit codes always take the 4-bit
// one: the same codes, scales and biases, so the same sums, at the wider
// layout's memory and speed.
// One vpdpbusd then multiplies a quad of every row by the same 4 int8
// activations (broadcast), leaving row r's partial sum in lane r: no
// horizontal sums, one sequential stream per tile.
//
// Activations are quantized to int8 per token and weight group
// (step = max|x| / 127, x' = step * xq); per group,
// sum w*x' = scale * step * sum q*xq + bias * step * sum xq.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/matrix.h"
#include "core/packed.h"
#include "core/thread_pool.h"

namespace hearth {

// Bytes of one tile's group in a layout of `bits`: the codes of 16 rows,
// then their scales and biases.
inline size_t int8_group_bytes(int bits, int group_size, DType scale_dtype) {
  return size_t(group_size) * kPackedRows * bits / 8 + 2 * kPackedRows * dtype_size(scale_dtype);
}

struct Int8Packed {
  int64_t rows = 0, cols = 0;
  int bits = 0;  // of the layout: 4, 6 or 8
  int group_size = 0;
  DType scale_dtype = DType::F32;
  int64_t tiles = 0;
  size_t tile_bytes = 0;
  AlignedBytes data{nullptr, nullptr};
  size_t bytes() const { return size_t(tiles) * tile_bytes; }
  // One tile's codes + scales + biases of one group.
  size_t group_bytes() const { return int8_group_bytes(bits, group_size, scale_dtype); }
};

// Whether this CPU and this matrix can use the packed kernel: AVX-512 VNNI,
// or AVX2 with FMA and F16C (with AVX-VNNI where the CPU has it); on 64-bit
// Arm, NEON (with the dot-product extension where the CPU has it).
bool int8_supported(const Matrix& w);
// The kernels this process uses ("avx512-vnni", "avx2+avxvnni", "avx2",
// "neon+dotprod", "neon"), or "none".
const char* int8_target();

std::shared_ptr<const Int8Packed> int8_pack(const Matrix& w, ThreadPool& pool);
// Several matrices' rows stacked into one packed matrix (see RowStack); null
// unless every part can use the kernel and all share one format.
std::shared_ptr<const Int8Packed> int8_pack(std::span<const Matrix* const> parts, ThreadPool& pool);

// y[t, r] = sum_c x[t, c] * W[r, c], as matmul() in ops.h.
void int8_matmul(ThreadPool& pool, const Int8Packed& w, const float* x, int64_t n_tokens, float* y);

}  // namespace hearth
