// Matrix multiply against MLX affine-quantized weights, used in place.
//
// Fast path (x86 with AVX-512 VNNI, 4- or 8-bit codes, group size a multiple
// of 64): activations are quantized to int8 once per call, one scale per
// weight group, and each group's dot product is an integer u8 x s8 dot
// (vpdpbusd), scaled back with the group's weight scale; the group bias is
// applied through the exact float sum of the activations in that group:
//   sum_c w_c x_c = scale * sum_c q_c x_c + bias * sum_c x_c.
// Everything else dequantizes rows to floats and uses the dense kernels.
#pragma once

#include <cstdint>

#include "core/matrix.h"
#include "core/thread_pool.h"

namespace hearth {

void quant_matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y);

// Whether quant_matmul takes the int8 path for this matrix on this CPU.
bool quant_matmul_uses_int8(const Matrix& w);

// Dequantizes `row` of w into out[cols].
void dequantize_row(const Matrix& w, int64_t row, float* out);

}  // namespace hearth
