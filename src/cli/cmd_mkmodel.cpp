// hearth mkmodel: writes a random-weight checkpoint in the exact published
// Hugging Face layout (or the mlx-community layout with --quant), so every
// architecture can be tested and benchmarked without downloading weights.
// The weights are a deterministic function of --seed and the tensor name:
// the same seed gives the same underlying values in every dtype and layout.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/dtype.h"
#include "core/quantize.h"
#include "io/gguf_writer.h"
#include "io/safetensors_writer.h"

namespace hearth::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: hearth mkmodel --arch llama|mistral|qwen2|qwen3 --out DIR [options]\n"
    "\n"
    "Writes a random-weight checkpoint (config.json, generation_config.json,\n"
    "model.safetensors, tokenizer files) in the published Hugging Face layout.\n"
    "\n"
    "  --preset P        tiny (default) | qwen3-0.6b | llama-3.2-1b\n"
    "  --dtype D         f32 (default) | bf16 | f16: weights, or scales and biases when quantized\n"
    "  --quant Q         mlx2|mlx3|mlx4|mlx5|mlx6|mlx8: MLX affine layout, every Linear and the\n"
    "                    embedding quantized; mixed_L_H: L bits, H bits for some v_proj/down_proj\n"
    "                    and lm_head (mlx-lm's mixed recipe, per-module entries in config.json)\n"
    "  --group-size G    quantization group size: 32, 64 (default) or 128; layers whose input\n"
    "                    size is not a multiple of G stay unquantized\n"
    "  --seed S          weight seed (default 0)\n"
    "  --tokenizer DIR   where tokenizer.json/tokenizer_config.json come from (default: the\n"
    "                    bundled stories260k model); its vocab is padded with <unused_N>\n"
    "                    entries up to the preset's vocab_size\n"
    "  --gguf T          also write model.gguf (llama.cpp's layout and names, the same weights):\n"
    "                    T = f16 | q8_0 | q4_0 | bf16 | f32 for the matrices (norms stay f32)\n";

// ---------------------------------------------------------------------------
// shapes

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

json llama3_rope_scaling() {
  return {{"factor", 32.0},
          {"high_freq_factor", 4.0},
          {"low_freq_factor", 1.0},
          {"original_max_position_embeddings", 8192},
          {"rope_type", "llama3"}};
}

Spec make_spec(const std::string& preset, std::string arch) {
  Spec s;
  if (preset == "tiny") {
    if (arch.empty()) throw std::runtime_error("--arch is required with --preset tiny");
    s.arch = arch;
    s.hidden = 64, s.intermediate = 128, s.heads = 4, s.kv_heads = 2, s.head_dim = 16;
    s.vocab = 512, s.max_positions = 512;
    // Unit-variance projections and a wide embedding: attention matters and
    // the logits spread over several units, so greedy tokens vary and
    // top-1/top-2 margins are well above kernel rounding.
    s.linear_std = 0, s.embed_std = 0.5f, s.bias_std = 0.1f, s.norm_noise = 0.1f;
    s.qk_gain = 1.5f, s.o_gain = 2, s.qk_norm_mean = 1.5f;
    if (arch == "llama") {
      s.layers = 2, s.tied = true, s.rms_eps = 1e-5, s.rope_theta = 500000.0;
      s.rope_scaling = llama3_rope_scaling();
    } else if (arch == "mistral") {
      s.layers = 3, s.tied = false, s.rms_eps = 1e-5, s.rope_theta = 1000000.0;
    } else if (arch == "qwen2") {
      s.layers = 2, s.tied = false, s.rms_eps = 1e-6, s.rope_theta = 1000000.0;
    } else if (arch == "qwen3") {
      // head_dim * heads (128) != hidden (64), as in the real Qwen3 models.
      s.layers = 3, s.tied = true, s.rms_eps = 1e-6, s.rope_theta = 1000000.0, s.head_dim = 32;
    }
  } else if (preset == "qwen3-0.6b") {
    s.arch = arch.empty() ? "qwen3" : arch;
    s.hidden = 1024, s.intermediate = 3072, s.layers = 28, s.heads = 16, s.kv_heads = 8;
    s.head_dim = 128, s.vocab = 151936, s.max_positions = 40960;
    s.rms_eps = 1e-6, s.rope_theta = 1000000.0, s.tied = true;
    s.linear_std = 0.02f, s.embed_std = 0.02f, s.bias_std = 0.02f, s.norm_noise = 0.02f;
  } else if (preset == "llama-3.2-1b") {
    s.arch = arch.empty() ? "llama" : arch;
    s.hidden = 2048, s.intermediate = 8192, s.layers = 16, s.heads = 32, s.kv_heads = 8;
    s.head_dim = 64, s.vocab = 128256, s.max_positions = 131072;
    s.rms_eps = 1e-5, s.rope_theta = 500000.0, s.tied = true;
    s.rope_scaling = llama3_rope_scaling();
    s.linear_std = 0.02f, s.embed_std = 0.02f, s.bias_std = 0.02f, s.norm_noise = 0.02f;
  } else {
    throw std::runtime_error("unknown preset '" + preset +
                             "' (expected tiny, qwen3-0.6b or llama-3.2-1b)");
  }
  if (s.arch != "llama" && s.arch != "mistral" && s.arch != "qwen2" && s.arch != "qwen3")
    throw std::runtime_error("unknown architecture '" + s.arch +
                             "' (expected llama, mistral, qwen2 or qwen3)");
  return s;
}

const char* class_name(const std::string& arch) {
  if (arch == "llama") return "LlamaForCausalLM";
  if (arch == "mistral") return "MistralForCausalLM";
  if (arch == "qwen2") return "Qwen2ForCausalLM";
  return "Qwen3ForCausalLM";
}

// ---------------------------------------------------------------------------
// random values

uint64_t splitmix64(uint64_t& state) {
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

uint64_t name_hash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

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

float round_to(DType t, float v) {
  if (t == DType::BF16) return bf16_to_f32(f32_to_bf16(v));
  if (t == DType::F16) return f16_to_f32(f32_to_f16(v));
  return v;
}

void store(DType t, uint8_t* dst, int64_t i, float v) {
  if (t == DType::F32) {
    std::memcpy(dst + 4 * i, &v, 4);
  } else {
    uint16_t h = t == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

// ---------------------------------------------------------------------------
// the checkpoint

struct QuantConfig {
  int low_bits = 0, high_bits = 0;  // high_bits > 0: mixed recipe
  int group_size = 64;
  bool enabled() const { return low_bits > 0; }
};

QuantConfig parse_quant(const std::string& q, int group_size) {
  QuantConfig c;
  c.group_size = group_size;
  auto valid = [](int b) { return b == 2 || b == 3 || b == 4 || b == 5 || b == 6 || b == 8; };
  if (q.empty() || q == "none") return c;
  int lo = 0, hi = 0;
  char tail = 0;
  if (std::sscanf(q.c_str(), "mlx%d%c", &lo, &tail) == 1 && valid(lo)) {
    c.low_bits = lo;
  } else if (std::sscanf(q.c_str(), "mixed_%d_%d%c", &lo, &hi, &tail) == 2 && valid(lo) &&
             valid(hi)) {
    c.low_bits = lo, c.high_bits = hi;
  } else {
    throw std::runtime_error("unknown --quant '" + q +
                             "' (expected mlx2|mlx3|mlx4|mlx5|mlx6|mlx8 or mixed_L_H)");
  }
  if (group_size != 32 && group_size != 64 && group_size != 128)
    throw std::runtime_error("--group-size must be 32, 64 or 128 (the sizes MLX supports)");
  return c;
}

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

class Builder {
 public:
  Builder(const Spec& spec, DType dtype, QuantConfig quant, uint64_t seed)
      : spec_(spec), dtype_(dtype), quant_(quant), seed_(seed) {}

  json quantization = json::object();  // per-module entries (mixed recipes)

  void build() {
    for_each_weight(
        spec_, [&](const std::string& name, int64_t n, float mean, float std) { vector(name, n, mean, std); },
        [&](const std::string& module, int64_t rows, int64_t cols, float std) {
          matrix(module, rows, cols, std);
        });
  }

  io::SafetensorsWriter writer;

 private:
  void vector(const std::string& name, int64_t n, float mean, float std) {
    DType t = dtype_;
    uint64_t seed = seed_;
    writer.add(name, t, {n}, [=](uint8_t* dst) {
      generate(seed, name, n, mean, std, [&](int64_t i, float v) { store(t, dst, i, v); });
    });
  }

  // mlx-lm's mixed recipe: more bits for v_proj and down_proj in the first and
  // last eighth of the layers and every third layer between, and for lm_head.
  int bits_for(const std::string& module) const {
    if (!quant_.high_bits) return quant_.low_bits;
    if (module == "lm_head") return quant_.high_bits;
    if (module.find("v_proj") == std::string::npos && module.find("down_proj") == std::string::npos)
      return quant_.low_bits;
    int64_t n = spec_.layers, index = std::stoll(module.substr(module.find("layers.") + 7));
    bool more = index < n / 8 || index >= 7 * n / 8 || (index - n / 8) % 3 == 2;
    return more ? quant_.high_bits : quant_.low_bits;
  }

  void matrix(const std::string& module, int64_t rows, int64_t cols, float std) {
    const std::string name = module + ".weight";
    DType t = dtype_;
    uint64_t seed = seed_;
    int bits = quant_.enabled() ? bits_for(module) : 0;
    if (!bits || !affine_quantizable(cols, bits, quant_.group_size)) {
      writer.add(name, t, {rows, cols}, [=](uint8_t* dst) {
        generate(seed, name, rows * cols, 0.0f, std, [&](int64_t i, float v) { store(t, dst, i, v); });
      });
      return;
    }
    int group = quant_.group_size;
    if (quant_.high_bits) quantization[module] = {{"group_size", group}, {"bits", bits}};
    // The three tensors of a quantized module come from one quantization, done
    // when the first of them is written and dropped after the last.
    struct Shared {
      std::vector<uint32_t> packed;
      std::vector<float> scales, biases;
      int pending = 3;
    };
    auto shared = std::make_shared<Shared>();
    auto compute = [=]() {
      if (!shared->packed.empty()) return;
      std::vector<float> w(size_t(rows * cols));
      generate(seed, name, rows * cols, 0.0f, std,
               [&](int64_t i, float v) { w[size_t(i)] = round_to(t, v); });
      int64_t wpr = cols * bits / 32, gpr = cols / group;
      shared->packed.resize(size_t(rows * wpr));
      shared->scales.resize(size_t(rows * gpr));
      shared->biases.resize(size_t(rows * gpr));
      constexpr int64_t kRows = 64;
      parallel_for((rows + kRows - 1) / kRows, [&](int64_t b) {
        int64_t r0 = b * kRows, nr = std::min(kRows, rows - r0);
        affine_quantize(w.data() + r0 * cols, nr, cols, bits, group, shared->packed.data() + r0 * wpr,
                        shared->scales.data() + r0 * gpr, shared->biases.data() + r0 * gpr);
      });
    };
    auto done = [=]() {
      if (--shared->pending == 0) *shared = Shared{};
    };
    writer.add(name, DType::U32, {rows, cols * bits / 32}, [=](uint8_t* dst) {
      compute();
      std::memcpy(dst, shared->packed.data(), shared->packed.size() * 4);
      done();
    });
    for (const char* part : {"scales", "biases"}) {
      bool is_scales = part[0] == 's';
      writer.add(module + "." + part, t, {rows, cols / group}, [=](uint8_t* dst) {
        compute();
        const auto& v = is_scales ? shared->scales : shared->biases;
        for (size_t i = 0; i < v.size(); ++i) store(t, dst, int64_t(i), v[i]);
        done();
      });
    }
  }

  const Spec& spec_;
  DType dtype_;
  QuantConfig quant_;
  uint64_t seed_;
};

json make_config(const Spec& s, const std::string& dtype_name, const QuantConfig& q,
                 const json& per_module) {
  json c;
  c["architectures"] = {class_name(s.arch)};
  c["model_type"] = s.arch;
  c["attention_dropout"] = 0.0;
  c["bos_token_id"] = 1;
  c["eos_token_id"] = 2;
  c["head_dim"] = s.head_dim;
  c["hidden_act"] = "silu";
  c["hidden_size"] = s.hidden;
  c["initializer_range"] = 0.02;
  c["intermediate_size"] = s.intermediate;
  c["max_position_embeddings"] = s.max_positions;
  c["num_attention_heads"] = s.heads;
  c["num_hidden_layers"] = s.layers;
  c["num_key_value_heads"] = s.kv_heads;
  c["rms_norm_eps"] = s.rms_eps;
  c["rope_scaling"] = s.rope_scaling;
  c["rope_theta"] = s.rope_theta;
  c["tie_word_embeddings"] = s.tied;
  c["torch_dtype"] = dtype_name;
  c["transformers_version"] = "4.51.0";
  c["use_cache"] = true;
  c["vocab_size"] = s.vocab;
  if (s.arch == "llama") {
    c["attention_bias"] = false;
    c["mlp_bias"] = false;
    c["pretraining_tp"] = 1;
  } else if (s.arch == "mistral") {
    c["sliding_window"] = nullptr;
  } else if (s.arch == "qwen2") {
    // Hugging Face's Qwen2 always has q/k/v biases; published configs do not
    // say so, the key is written here for readers that look for it.
    c["attention_bias"] = true;
    c["max_window_layers"] = s.layers;
    c["sliding_window"] = s.max_positions;
    c["use_sliding_window"] = false;
  } else if (s.arch == "qwen3") {
    c["attention_bias"] = false;
    c["max_window_layers"] = s.layers;
    c["sliding_window"] = nullptr;
    c["use_sliding_window"] = false;
  }
  if (q.enabled()) {
    json quant = {{"group_size", q.group_size}, {"bits", q.low_bits}};
    for (const auto& [k, v] : per_module.items()) quant[k] = v;
    c["quantization"] = quant;
    c["quantization_config"] = quant;
  }
  return c;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Copies the tokenizer, padding its vocabulary with "<unused_N>" entries up to
// vocab_size (a valid BPE vocab that the merges never reach).
void write_tokenizer(const fs::path& from, const fs::path& to, int64_t vocab_size) {
  nlohmann::ordered_json tok;
  {
    std::ifstream in(from / "tokenizer.json");
    if (!in) throw std::runtime_error("cannot read " + (from / "tokenizer.json").string());
    tok = nlohmann::ordered_json::parse(in);
  }
  auto& vocab = tok["model"]["vocab"];
  if (!vocab.is_object()) throw std::runtime_error("tokenizer.json has no model.vocab object");
  int64_t n = 0;
  for (const auto& [k, v] : vocab.items()) n = std::max<int64_t>(n, v.get<int64_t>() + 1);
  for (const auto& t : tok["added_tokens"]) n = std::max<int64_t>(n, t["id"].get<int64_t>() + 1);
  if (n > vocab_size)
    throw std::runtime_error("tokenizer in " + from.string() + " has " + std::to_string(n) +
                             " ids, more than vocab_size " + std::to_string(vocab_size));
  // ordered_json looks keys up linearly; append to the underlying vector
  // instead (the names are new), or 150k entries take quadratic time.
  auto& entries = static_cast<std::vector<std::pair<const std::string, nlohmann::ordered_json>>&>(
      vocab.get_ref<nlohmann::ordered_json::object_t&>());
  for (int64_t id = n; id < vocab_size; ++id)
    entries.emplace_back("<unused_" + std::to_string(id - n) + ">", id);
  write_text(to / "tokenizer.json", tok.dump(2, ' ', false) + "\n");
  for (const char* f : {"tokenizer_config.json", "special_tokens_map.json"})
    if (fs::exists(from / f))
      fs::copy_file(from / f, to / f, fs::copy_options::overwrite_existing);
}

// ---------------------------------------------------------------------------
// GGUF (llama.cpp): the same weights under llama.cpp's names and layout, as
// convert_hf_to_gguf.py writes them: 1-D tensors in F32, matrices in the
// chosen type (F16 where a row is not whole quantization blocks), q/k rows of
// the llama architecture permuted for its interleaved rotary pairs.

struct GgufOptions {
  io::GgmlType type = io::GgmlType::F16;
  io::GgufFileType file_type = io::GgufFileType::MOSTLY_F16;
};

GgufOptions parse_gguf(const std::string& v) {
  if (v == "f32") return {io::GgmlType::F32, io::GgufFileType::ALL_F32};
  if (v == "f16") return {io::GgmlType::F16, io::GgufFileType::MOSTLY_F16};
  if (v == "bf16") return {io::GgmlType::BF16, io::GgufFileType::MOSTLY_BF16};
  if (v == "q8_0") return {io::GgmlType::Q8_0, io::GgufFileType::MOSTLY_Q8_0};
  if (v == "q4_0") return {io::GgmlType::Q4_0, io::GgufFileType::MOSTLY_Q4_0};
  throw std::runtime_error("unknown --gguf '" + v + "' (expected f16, q8_0, q4_0, bf16 or f32)");
}

// llama.cpp's architecture name: Mistral converts as llama.
std::string gguf_arch(const std::string& arch) { return arch == "mistral" ? "llama" : arch; }

// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight".
std::string gguf_name(const std::string& hf) {
  static const std::pair<const char*, const char*> kParts[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.", "attn_q."},
      {"self_attn.k_proj.", "attn_k."},
      {"self_attn.v_proj.", "attn_v."},
      {"self_attn.o_proj.", "attn_output."},
      {"self_attn.q_norm.", "attn_q_norm."},
      {"self_attn.k_norm.", "attn_k_norm."},
      {"mlp.gate_proj.", "ffn_gate."},
      {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."},
  };
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string layers = "model.layers.";
  if (hf.rfind(layers, 0) == 0) {
    size_t dot = hf.find('.', layers.size());
    std::string rest = hf.substr(dot + 1);
    for (const auto& [from, to] : kParts)
      if (rest.rfind(from, 0) == 0)
        return "blk." + hf.substr(layers.size(), dot - layers.size()) + "." + to +
               rest.substr(std::strlen(from));
  }
  throw std::logic_error("no GGUF name for " + hf);
}

// Encodes rows x cols floats as `type` (cols a multiple of its block size).
void encode_rows(io::GgmlType type, const float* src, int64_t rows, int64_t cols, uint8_t* dst) {
  const int64_t row_bytes = cols / io::ggml_block_elems(type) * io::ggml_block_bytes(type);
  constexpr int64_t kRows = 64;
  parallel_for((rows + kRows - 1) / kRows, [&](int64_t b) {
    for (int64_t r = b * kRows; r < std::min(rows, (b + 1) * kRows); ++r) {
      const float* x = src + r * cols;
      uint8_t* out = dst + r * row_bytes;
      switch (type) {
        case io::GgmlType::F32: std::memcpy(out, x, size_t(cols) * 4); break;
        case io::GgmlType::F16: for (int64_t i = 0; i < cols; ++i) store(DType::F16, out, i, x[i]); break;
        case io::GgmlType::BF16: for (int64_t i = 0; i < cols; ++i) store(DType::BF16, out, i, x[i]); break;
        case io::GgmlType::Q8_0: io::quantize_q8_0(x, cols, out); break;
        case io::GgmlType::Q4_0: io::quantize_q4_0(x, cols, out); break;
      }
    }
  });
}

// llama3 rope scaling as a per-frequency divisor (convert_hf_to_gguf.py's
// rope_freqs tensor; llama.cpp divides each rotary frequency by it).
std::vector<float> llama3_rope_factors(const Spec& s) {
  const json& r = s.rope_scaling;
  double factor = r.value("factor", 8.0), low = r.value("low_freq_factor", 1.0),
         high = r.value("high_freq_factor", 4.0);
  double old_ctx = r.value("original_max_position_embeddings", 8192.0);
  double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (int64_t i = 0; i < s.head_dim; i += 2) {
    float freq = 1.0f / std::pow(float(s.rope_theta), float(i) / float(s.head_dim));
    double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(float(factor));
    } else {
      double smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(float(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

// Token list, scores and types (llama.cpp's llama_token_type) from a
// tokenizer.json whose vocab already has vocab_size entries.
void add_gguf_tokenizer(io::GgufWriter& w, const fs::path& tokenizer_json, int64_t vocab_size) {
  json tok;
  {
    std::ifstream in(tokenizer_json);
    if (!in) throw std::runtime_error("cannot read " + tokenizer_json.string());
    tok = json::parse(in);
  }
  const json& model = tok["model"];
  enum : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUnused = 5, kByte = 6 };
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int32_t> types(size_t(vocab_size), 0);
  auto set = [&](int64_t id, const std::string& piece) {
    if (id < 0 || id >= vocab_size)
      throw std::runtime_error(tokenizer_json.string() + ": token id " + std::to_string(id) +
                               " outside the vocabulary of " + std::to_string(vocab_size));
    tokens[size_t(id)] = piece;
    types[size_t(id)] = kNormal;
  };
  const bool spm = model.value("type", "") == "BPE" && model.value("byte_fallback", false);
  if (!model["vocab"].is_object())
    throw std::runtime_error("--gguf: " + tokenizer_json.string() +
                             " has no BPE vocab (model.vocab object)");
  for (const auto& [piece, id] : model["vocab"].items()) set(id.get<int64_t>(), piece);
  std::string unk = model.value("unk_token", json()).is_string() ? model["unk_token"].get<std::string>() : "";
  for (const auto& t : tok["added_tokens"]) {
    int64_t id = t["id"].get<int64_t>();
    std::string content = t["content"].get<std::string>();
    set(id, content);
    if (t.value("special", false)) types[size_t(id)] = content == unk ? kUnknown : kControl;
  }
  std::vector<float> scores(size_t(vocab_size), 0.0f);
  for (int64_t id = 0; id < vocab_size; ++id) {
    std::string& piece = tokens[size_t(id)];
    int32_t& type = types[size_t(id)];
    if (type == 0) {  // an id the tokenizer does not use
      piece = "[PAD" + std::to_string(id) + "]", type = kUnused;
    } else if (type == kNormal && piece.rfind("<unused_", 0) == 0) {
      type = kUnused;  // write_tokenizer's padding
    } else if (type == kNormal && spm && piece.size() == 6 && piece.rfind("<0x", 0) == 0 &&
               piece[5] == '>' && std::isxdigit(uint8_t(piece[3])) && std::isxdigit(uint8_t(piece[4]))) {
      type = kByte;
    }
    // SentencePiece merges the pair of highest score first; a BPE vocab lists
    // merge results in merge order, so -id keeps that order.
    if (type == kNormal) scores[size_t(id)] = -float(id);
  }
  if (spm) {
    w.add_string("tokenizer.ggml.model", "llama");
  } else {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "default");
  }
  w.add_array("tokenizer.ggml.tokens", tokens);
  if (spm) w.add_array("tokenizer.ggml.scores", scores);
  w.add_array("tokenizer.ggml.token_type", types);
  if (!spm) {
    std::vector<std::string> merges;
    for (const auto& m : model["merges"])
      merges.push_back(m.is_string() ? m.get<std::string>()
                                     : m[0].get<std::string>() + " " + m[1].get<std::string>());
    w.add_array("tokenizer.ggml.merges", merges);
  }
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  auto unk_it = model["vocab"].find(unk);
  if (!unk.empty() && unk_it != model["vocab"].end())
    w.add_u32("tokenizer.ggml.unknown_token_id", unk_it->get<uint32_t>());
  w.add_bool("tokenizer.ggml.add_bos_token", spm);
  w.add_bool("tokenizer.ggml.add_eos_token", false);
}

void write_gguf(const Spec& s, GgufOptions opt, uint64_t seed, const std::string& label,
                const fs::path& tokenizer_json, const fs::path& path) {
  io::GgufWriter w;
  const std::string a = gguf_arch(s.arch);
  w.add_string("general.architecture", a);
  w.add_string("general.name", label);
  w.add_u32("general.file_type", uint32_t(opt.file_type));
  w.add_u32("general.quantization_version", 2);
  w.add_u32(a + ".vocab_size", uint32_t(s.vocab));
  w.add_u32(a + ".context_length", uint32_t(s.max_positions));
  w.add_u32(a + ".embedding_length", uint32_t(s.hidden));
  w.add_u32(a + ".block_count", uint32_t(s.layers));
  w.add_u32(a + ".feed_forward_length", uint32_t(s.intermediate));
  w.add_u32(a + ".attention.head_count", uint32_t(s.heads));
  w.add_u32(a + ".attention.head_count_kv", uint32_t(s.kv_heads));
  w.add_u32(a + ".attention.key_length", uint32_t(s.head_dim));
  w.add_u32(a + ".attention.value_length", uint32_t(s.head_dim));
  w.add_u32(a + ".rope.dimension_count", uint32_t(s.head_dim));
  w.add_f32(a + ".rope.freq_base", float(s.rope_theta));
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", float(s.rms_eps));
  add_gguf_tokenizer(w, tokenizer_json, s.vocab);

  if (s.rope_scaling.is_object() && s.rope_scaling.value("rope_type", "") == "llama3") {
    auto factors = llama3_rope_factors(s);
    w.add_tensor("rope_freqs.weight", io::GgmlType::F32, {int64_t(factors.size())},
                 [factors](uint8_t* dst) { std::memcpy(dst, factors.data(), factors.size() * 4); });
  } else if (!s.rope_scaling.is_null()) {
    throw std::runtime_error("--gguf: rope_scaling other than llama3 is not written");
  }

  const bool permute = a == "llama";
  for_each_weight(
      s,
      [&](const std::string& name, int64_t n, float mean, float std) {
        w.add_tensor(gguf_name(name), io::GgmlType::F32, {n}, [=](uint8_t* dst) {
          generate(seed, name, n, mean, std, [&](int64_t i, float v) { store(DType::F32, dst, i, v); });
        });
      },
      [&](const std::string& module, int64_t rows, int64_t cols, float std) {
        const std::string name = module + ".weight";
        io::GgmlType type = cols % io::ggml_block_elems(opt.type) ? io::GgmlType::F16 : opt.type;
        // convert_hf_to_gguf.py's LlamaModel.permute: within each head, rows
        // (half, j) -> (j, half), so rotary pairs become adjacent rows.
        int64_t heads = 0;
        if (permute && module.ends_with("q_proj")) heads = s.heads;
        if (permute && module.ends_with("k_proj")) heads = s.kv_heads;
        w.add_tensor(gguf_name(name), type, {rows, cols}, [=](uint8_t* dst) {
          std::vector<float> m(size_t(rows * cols));
          if (heads) {
            const int64_t D = rows / heads, half = D / 2;
            generate(seed, name, rows * cols, 0.0f, std, [&](int64_t i, float v) {
              int64_t r = i / cols, h = r / D, k = r % D;
              int64_t to = h * D + (k % half) * 2 + k / half;
              m[size_t(to * cols + i % cols)] = v;
            });
          } else {
            generate(seed, name, rows * cols, 0.0f, std, [&](int64_t i, float v) { m[size_t(i)] = v; });
          }
          encode_rows(type, m.data(), rows, cols, dst);
        });
      });
  w.write(path.string());
}

}  // namespace

int cmd_mkmodel(int argc, char** argv) {
  Args args(argc, argv, {"help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.allow_only(
      {"arch", "dtype", "quant", "group-size", "preset", "seed", "out", "tokenizer", "gguf"});
  if (!args.positional().empty())
    throw std::runtime_error("unexpected argument '" + args.positional()[0] + "'");
  if (!args.has("out")) throw std::runtime_error("--out DIR is required");

  Spec spec = make_spec(args.str("preset", "tiny"), args.str("arch"));
  std::string dtype_arg = args.str("dtype", "f32");
  DType dtype;
  std::string torch_dtype;
  if (dtype_arg == "f32") {
    dtype = DType::F32, torch_dtype = "float32";
  } else if (dtype_arg == "bf16") {
    dtype = DType::BF16, torch_dtype = "bfloat16";
  } else if (dtype_arg == "f16") {
    dtype = DType::F16, torch_dtype = "float16";
  } else {
    throw std::runtime_error("unknown --dtype '" + dtype_arg + "' (expected f32, bf16 or f16)");
  }
  long long group = args.integer("group-size", 64);
  QuantConfig quant = parse_quant(args.str("quant"), int(group));
  uint64_t seed = uint64_t(args.integer("seed", 0));
  std::optional<GgufOptions> gguf;
  if (args.has("gguf")) gguf = parse_gguf(args.str("gguf"));

#ifdef HEARTH_DEFAULT_MODEL
  fs::path tokenizer_dir = args.str("tokenizer", HEARTH_DEFAULT_MODEL);
#else
  if (!args.has("tokenizer")) throw std::runtime_error("--tokenizer DIR is required");
  fs::path tokenizer_dir = args.str("tokenizer");
#endif

  fs::path out = args.str("out");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw std::runtime_error("cannot create " + out.string() + ": " + ec.message());

  Builder builder(spec, dtype, quant, seed);
  builder.build();
  builder.writer.set_metadata("format", quant.enabled() ? "mlx" : "pt");

  write_tokenizer(tokenizer_dir, out, spec.vocab);
  write_text(out / "config.json",
             make_config(spec, torch_dtype, quant, builder.quantization).dump(2) + "\n");
  write_text(out / "generation_config.json",
             json{{"bos_token_id", 1}, {"eos_token_id", 2}}.dump(2) + "\n");
  builder.writer.write((out / "model.safetensors").string());
  if (gguf)
    write_gguf(spec, *gguf, seed,
               "hearth mkmodel " + args.str("preset", "tiny") + " " + spec.arch + " seed " +
                   std::to_string(seed),
               out / "tokenizer.json", out / "model.gguf");
  return 0;
}

}  // namespace hearth::cli
