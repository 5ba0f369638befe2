// The random-weight checkpoints of `hearth mkmodel`: model shapes (presets),
// the deterministic value streams, and the list of weights under their
// Hugging Face names. The safetensors writer (cmd_mkmodel.cpp) and the GGUF
// writer (mkmodel_gguf.cpp) both walk that list, so one seed gives the same
// values in both files.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "io/gguf_writer.h"

namespace hearth::cli {
class Args;
}

namespace hearth::cli::mkmodel {

using nlohmann::json;

struct Spec {
  std::string arch;  // llama | mistral | qwen2 | qwen3
  int64_t hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t vocab = 0, max_positions = 0;
  double rms_eps = 1e-6, rope_theta = 10000.0;
  json rope_scaling = nullptr;
  bool tied = false;
  // Weight scales: std of Linear weights (<= 0: 1/sqrt(fan_in)), embedding and
  // bias std, and the noise around 1.0 of norm weights.
  float linear_std = 0, embed_std = 0, bias_std = 0, norm_noise = 0;
  // Extra gain on q/k_proj and o_proj weights and the mean of Qwen3's
  // q_norm/k_norm weights: sharper and stronger attention, so the next token
  // depends on the context. (Much sharper attention makes the logits very
  // sensitive to activation rounding, which blurs what the numerics tests see.)
  float qk_gain = 1, o_gain = 1, qk_norm_mean = 1;
};

// The shape of a preset (tiny, qwen3-0.6b, llama-3.2-1b) for an architecture.
Spec make_spec(const std::string& preset, std::string arch);
// The Hugging Face class name of an architecture, e.g. "LlamaForCausalLM".
const char* class_name(const std::string& arch);

// ---- random values

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Approximately N(0, 1): the sum of four 16-bit uniforms (Irwin-Hall), one
// 64-bit draw per value; bounded at about +-3.46.
inline float approx_normal(uint64_t& state) {
  uint64_t r = splitmix64(state);
  float sum = float(r & 0xffff) + float((r >> 16) & 0xffff) + float((r >> 32) & 0xffff) +
              float(r >> 48);
  return (sum - 4 * 32767.5f) * (1.7320508f / 65536.0f);
}

uint64_t name_hash(const std::string& s);

// Runs fn(i) for i in [0, n) on all cores.
template <class F>
void parallel_for(int64_t n, F&& fn) {
  int threads = int(std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), n));
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

// value(i) = mean + std * N(0,1), from a stream that depends only on
// (seed, name, i / kChunk): thread count never changes the values.
constexpr int64_t kChunk = 1 << 16;

template <class Out>
void generate(uint64_t seed, const std::string& name, int64_t n, float mean, float std, Out out) {
  uint64_t base = seed ^ name_hash(name);
  splitmix64(base);
  parallel_for((n + kChunk - 1) / kChunk, [&](int64_t chunk) {
    uint64_t state = base + uint64_t(chunk) * 0xd1b54a32d192ed03ull;
    splitmix64(state);
    int64_t end = std::min(n, (chunk + 1) * kChunk);
    for (int64_t i = chunk * kChunk; i < end; ++i) out(i, mean + std * approx_normal(state));
  });
}

// v rounded to dtype t and back.
float round_to(DType t, float v);
// Stores v as element i of a dtype-t array (F32, F16 or BF16).
void store(DType t, uint8_t* dst, int64_t i, float v);

// Every weight of the checkpoint under its Hugging Face name, in order:
// vector(name, n, mean, std) for 1-D tensors, matrix(module, rows, cols, std)
// for Linear and embedding weights (values named module + ".weight"; std
// includes the gains). The safetensors and GGUF writers both walk this list,
// so the same seed gives the same values in both.
template <class Vector, class Matrix>
void for_each_weight(const Spec& s, Vector&& vector, Matrix&& matrix) {
  int64_t H = s.hidden, D = s.head_dim, I = s.intermediate;
  auto linear = [&](const std::string& module, int64_t rows, int64_t cols, float std, float gain = 1) {
    if (std <= 0) std = 1.0f / std::sqrt(float(cols));
    matrix(module, rows, cols, std * gain);
  };
  linear("model.embed_tokens", s.vocab, H, s.embed_std);
  for (int64_t l = 0; l < s.layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    vector(p + "input_layernorm.weight", H, 1.0f, s.norm_noise);
    vector(p + "post_attention_layernorm.weight", H, 1.0f, s.norm_noise);
    linear(p + "self_attn.q_proj", s.heads * D, H, s.linear_std, s.qk_gain);
    linear(p + "self_attn.k_proj", s.kv_heads * D, H, s.linear_std, s.qk_gain);
    linear(p + "self_attn.v_proj", s.kv_heads * D, H, s.linear_std);
    linear(p + "self_attn.o_proj", H, s.heads * D, s.linear_std, s.o_gain);
    if (s.arch == "qwen2") {
      vector(p + "self_attn.q_proj.bias", s.heads * D, 0.0f, s.bias_std);
      vector(p + "self_attn.k_proj.bias", s.kv_heads * D, 0.0f, s.bias_std);
      vector(p + "self_attn.v_proj.bias", s.kv_heads * D, 0.0f, s.bias_std);
    }
    if (s.arch == "qwen3") {
      vector(p + "self_attn.q_norm.weight", D, s.qk_norm_mean, s.norm_noise);
      vector(p + "self_attn.k_norm.weight", D, s.qk_norm_mean, s.norm_noise);
    }
    linear(p + "mlp.gate_proj", I, H, s.linear_std);
    linear(p + "mlp.up_proj", I, H, s.linear_std);
    linear(p + "mlp.down_proj", H, I, s.linear_std);
  }
  vector("model.norm.weight", H, 1.0f, s.norm_noise);
  if (!s.tied) linear("lm_head", s.vocab, H, s.linear_std > 0 ? s.linear_std : s.embed_std);
}

// --gguf TYPE (f16, q8_0, q4_0, bf16, f32): the same weights as a GGUF file
// for llama.cpp, to compare the two engines (mkmodel_gguf.cpp).
struct GgufOptions {
  io::GgmlType type = io::GgmlType::F16;
  io::GgufFileType file_type = io::GgufFileType::MOSTLY_F16;
};
GgufOptions parse_gguf(const std::string& v);
// label is the model's general.name.
void write_gguf(const Spec& s, GgufOptions opt, uint64_t seed, const std::string& label,
                const std::filesystem::path& tokenizer_json, const std::filesystem::path& path);

// --arch whisper: a WhisperForConditionalGeneration checkpoint (mkmodel_whisper.cpp).
int write_whisper(const Args& args);

}  // namespace hearth::cli::mkmodel
