// Matrix multiply against MLX affine-quantized weights as stored: rows are
// dequantized to floats and go through the dense kernel. (Formats the int8
// kernel handles are packed at load and never reach this; see int8_matmul.h.)
#pragma once

#include <cstdint>

#include "core/matrix.h"
#include "core/thread_pool.h"

namespace hearth {

void quant_matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y);

// Dequantizes `row` of w into out[cols].
void dequantize_row(const Matrix& w, int64_t row, float* out);

}  // namespace hearth
