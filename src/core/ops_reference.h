// Plain scalar versions of the operations in ops.h, written for clarity and
// used only to check the fast kernels.
#pragma once

#include "core/ops.h"

namespace hearth::reference {

void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y);
void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out);
void rope(float* x, int n_heads, int head_dim, int64_t pos, const float* inv_freq,
          float attention_scaling);
void softmax(float* x, int64_t n);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);
void attend(const float* q, const KvView& kv, int kv_head, int64_t first, int64_t n_ctx,
            float scale, float* out);

}  // namespace hearth::reference
