// Matrix multiply against MLX affine-quantized weights. A matrix with a
// packed copy (int8_matmul.h) takes the int8 VNNI kernel; any other
// dequantizes rows to floats and uses the dense kernel.
#pragma once

#include <cstdint>

#include "core/matrix.h"
#include "core/thread_pool.h"

namespace hearth {

void quant_matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y);

// Dequantizes `row` of w into out[cols].
void dequantize_row(const Matrix& w, int64_t row, float* out);

}  // namespace hearth
