#include "core/ops_reference.h"

#include <cmath>
#include <vector>

namespace hearth::reference {

namespace {
float weight_at(const Matrix& w, int64_t r, int64_t c) {
  if (!w.quantized()) return load_as_f32(w.dtype, w.data, r * w.cols + c);
  int64_t g = r * w.groups_per_row() + c / w.group_size;
  float scale = load_as_f32(w.scale_dtype, w.scales, g);
  float bias = load_as_f32(w.scale_dtype, w.biases, g);
  return scale * float(quant_code(w, r, c)) + bias;
}

const float* int8_scales(const KvView& kv, const void* block) {
  return reinterpret_cast<const float*>(static_cast<const uint8_t*>(block) +
                                        simd::kv_scales_offset(kv.kv_heads, kv.block_tokens, kv.head_dim));
}

float key_at(const KvView& kv, int64_t pos, int head, int d) {
  const void* block = kv.k_blocks[pos / kv.block_tokens];
  const int64_t slot = pos % kv.block_tokens;
  if (kv.dtype == DType::I8) {
    const auto* codes = static_cast<const int8_t*>(block);
    const auto* scales = int8_scales(kv, block);
    const int group = simd::kv_scale_group(kv.head_dim), groups = kv.head_dim / group;
    return float(codes[(int64_t(head) * kv.head_dim + d) * kv.block_tokens + slot]) *
           scales[(int64_t(head) * groups + d / group) * kv.block_tokens + slot];
  }
  int64_t i = (int64_t(head) * kv.head_dim + d) * kv.block_tokens + slot;
  return load_as_f32(kv.dtype, block, i);
}

float value_at(const KvView& kv, int64_t pos, int head, int d) {
  const void* block = kv.v_blocks[pos / kv.block_tokens];
  const int64_t row = int64_t(head) * kv.block_tokens + pos % kv.block_tokens;
  if (kv.dtype == DType::I8) {
    const auto* codes = static_cast<const int8_t*>(block);
    const auto* scales = int8_scales(kv, block);
    const int group = simd::kv_scale_group(kv.head_dim);
    return float(codes[row * kv.head_dim + d]) * scales[row * (kv.head_dim / group) + d / group];
  }
  return load_as_f32(kv.dtype, block, row * kv.head_dim + d);
}
}  // namespace

void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y) {
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < w.rows; ++r) {
      double acc = 0;
      for (int64_t c = 0; c < w.cols; ++c) acc += double(weight_at(w, r, c)) * x[t * w.cols + c];
      y[t * w.rows + r] = float(acc);
    }
}

void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  float inv = float(1.0 / std::sqrt(ss / double(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void rope(float* x, int n_heads, int head_dim, int64_t pos, const float* inv_freq,
          float attention_scaling) {
  int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + int64_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      double angle = double(pos) * inv_freq[i];
      float c = float(std::cos(angle)) * attention_scaling;
      float s = float(std::sin(angle)) * attention_scaling;
      float a = v[i], b = v[i + half];
      v[i] = a * c - b * s;
      v[i + half] = b * c + a * s;
    }
  }
}

void softmax(float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[i]) - mx);
  for (int64_t i = 0; i < n; ++i) x[i] = float(std::exp(double(x[i]) - mx) / sum);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = float(gate[i] / (1.0 + std::exp(-double(gate[i])))) * up[i];
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    double g = gate[i];
    double inner = std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g);
    out[i] = float(0.5 * g * (1.0 + std::tanh(inner))) * up[i];
  }
}

void attend(const float* q, const KvView& kv, int kv_head, int64_t first, int64_t n_ctx,
            float scale, float* out) {
  std::vector<float> p(static_cast<size_t>(n_ctx - first));
  for (int64_t j = first; j < n_ctx; ++j) {
    double s = 0;
    for (int d = 0; d < kv.head_dim; ++d) s += double(q[d]) * key_at(kv, j, kv_head, d);
    p[j - first] = float(s * scale);
  }
  softmax(p.data(), n_ctx - first);
  for (int d = 0; d < kv.head_dim; ++d) {
    double acc = 0;
    for (int64_t j = first; j < n_ctx; ++j)
      acc += double(p[j - first]) * value_at(kv, j, kv_head, d);
    out[d] = float(acc);
  }
}

}  // namespace hearth::reference
