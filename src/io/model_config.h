// What a checkpoint's config.json and generation_config.json say, checked
// for consistency. Unknown architectures and impossible shapes are refused
// here with a message naming the field.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hearth::io {

enum class Arch { Llama, Mistral, Qwen2, Qwen3 };

struct RopeScaling {
  std::string type = "default";  // default | linear | llama3 | yarn
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double original_max_position_embeddings = 0;           // llama3, yarn
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn
  std::optional<double> attention_factor;                // yarn
  std::optional<double> mscale, mscale_all_dim;          // yarn (DeepSeek style)
  bool truncate = true;  // yarn: the ramp's ends rounded out to whole dimensions
};

struct QuantSpec {
  int bits = 0;  // 0: not quantized
  int group_size = 0;
};

// An MLX "quantization" object's bits and group size (missing keys take
// MLX's defaults, 4 and 64), and a per-module entry ({} or false: not
// quantized). Throws std::runtime_error naming file and key.
QuantSpec read_quant(const nlohmann::json& v, const std::string& file, const std::string& key);
QuantSpec quant_spec(const nlohmann::json& v, const std::string& file, const std::string& key);

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string architecture;  // as written, e.g. "Qwen3ForCausalLM"
  int hidden_size = 0, intermediate_size = 0, num_layers = 0;
  int num_heads = 0, num_kv_heads = 0, head_dim = 0, vocab_size = 0;
  int max_position_embeddings = 0;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (Qwen2 always)
  bool output_bias = false;     // o_proj's bias too (Llama's and Qwen3's attention_bias)
  bool mlp_bias = false;        // gate/up/down biases (Llama's mlp_bias)
  bool qk_norm = false;         // per-head RMSNorm on q and k (Qwen3)
  std::string hidden_act = "silu";
  // Sliding-window attention: layers >= sliding_window_from_layer attend to
  // the last sliding_window positions only (Mistral: every layer; Qwen2/3:
  // when use_sliding_window, from max_window_layers on).
  std::optional<int> sliding_window;
  int sliding_window_from_layer = 0;

  // MLX quantization: defaults and per-module overrides (module path -> spec;
  // bits 0 means "not quantized").
  std::optional<QuantSpec> quantization;
  std::map<std::string, QuantSpec> quant_overrides;
  QuantSpec quant_for(const std::string& module_path) const;

  static ModelConfig load(const std::filesystem::path& model_dir);
};

struct GenerationConfig {
  std::vector<int> eos_token_ids;
  std::optional<int> bos_token_id;
  std::optional<double> temperature, top_p, min_p;
  std::optional<int> top_k;
  std::optional<double> repetition_penalty;

  // generation_config.json if present; EOS ids fall back to config.json's.
  static GenerationConfig load(const std::filesystem::path& model_dir);
};

// A checkpoint's JSON file; std::runtime_error naming the file if it cannot
// be read or parsed.
nlohmann::json read_json_file(const std::filesystem::path& path);

// A value from a checkpoint's JSON, for an error message: scalars as JSON (a
// long string cut short), an array or object by its kind. dump() recurses,
// and a file can nest a value a million deep.
std::string json_for_message(const nlohmann::json& v);

}  // namespace hearth::io
