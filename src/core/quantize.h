// MLX affine quantization, written the way MLX's CPU kernel does it
// (mlx/backend/cpu/quantized.cpp), for producing MLX checkpoints (hearth
// mkmodel) and for tests. See docs in shared/formats/mlx-quantization.md.
//
// Layout: a [rows, cols] matrix becomes `packed` uint32 [rows, cols*bits/32]
// (each row one little-endian bit stream, column j at stream bits
// [j*bits, (j+1)*bits), lowest bit first; 3/5/6-bit codes may straddle words)
// plus `scales` and `biases` [rows, cols/group_size]; value = scale*q + bias.
#pragma once

#include <cstdint>

namespace hearth {

// True when (bits, group_size, cols) can be quantized: bits in {2,3,4,5,6,8},
// group_size*bits a multiple of 32, cols a multiple of group_size.
bool affine_quantizable(int64_t cols, int bits, int group_size);

// Per group of group_size values (CPU-kernel variant): the true min and max;
// the end of larger magnitude becomes the bias, the scale (negative when
// |max| >= |min|) is adjusted to edge / rint(edge / scale) so 0.0 is exactly
// representable; codes are rint((w - bias) / scale) clamped to [0, 2^bits-1].
// rint rounds halves to even. All arithmetic is float, as in MLX; the caller
// rounds scales/biases to the checkpoint's dtype afterwards (as MLX does), so
// `w` should already hold values of that dtype. Throws std::invalid_argument
// when !affine_quantizable(cols, bits, group_size).
void affine_quantize(const float* w, int64_t rows, int64_t cols, int bits, int group_size,
                     uint32_t* packed, float* scales, float* biases);

// The inverse: out[r, c] = scales[g] * q[r, c] + biases[g].
void affine_dequantize(const uint32_t* packed, const float* scales, const float* biases,
                       int64_t rows, int64_t cols, int bits, int group_size, float* out);

}  // namespace hearth
