#include "io/model_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace hearth::io {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error(path.string() + ": invalid JSON: " + e.what());
  }
}

namespace {

struct Reader {
  const json& j;
  std::string file;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::runtime_error(file + ": \"" + key + "\" " + what);
  }
  bool has(const std::string& key) const { return j.contains(key) && !j[key].is_null(); }
  int positive_int(const std::string& key) const {
    if (!has(key)) fail(key, "is missing");
    if (!j[key].is_number_integer() || j[key].get<long long>() <= 0)
      fail(key, "must be a positive integer");
    return j[key].get<int>();
  }
  int positive_int(const std::string& key, int fallback) const {
    return has(key) ? positive_int(key) : fallback;
  }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number()) fail(key, "must be a number");
    return j[key].get<double>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) fail(key, "must be true or false");
    return j[key].get<bool>();
  }
};

std::vector<int> id_list(const json& v) {
  std::vector<int> ids;
  if (v.is_number_integer()) ids.push_back(v.get<int>());
  if (v.is_array())
    for (auto& x : v)
      if (x.is_number_integer()) ids.push_back(x.get<int>());
  return ids;
}

QuantSpec quant_spec(const json& v, const std::string& file, const std::string& key) {
  if (v.is_boolean() && !v.get<bool>()) return {};
  if (!v.is_object())
    throw std::runtime_error(file + ": quantization entry " + key + " is not an object");
  if (v.empty()) return {};
  if (v.contains("mode") && v["mode"] != "affine")
    throw std::runtime_error(file + ": quantization mode " + v["mode"].dump() +
                             " is not supported (only affine)");
  // Missing keys fall back to MLX's own defaults, not the global entry.
  QuantSpec s{v.value("bits", 4), v.value("group_size", 64)};
  if (s.bits < 2 || s.bits > 8 || s.bits == 7)
    throw std::runtime_error(file + ": quantization bits " + std::to_string(s.bits) + " in " + key +
                             " is not supported (2, 3, 4, 5, 6, 8)");
  if (s.group_size <= 0 || (s.group_size * s.bits) % 32 != 0)
    throw std::runtime_error(file + ": quantization group_size " + std::to_string(s.group_size) +
                             " in " + key + " is not supported");
  return s;
}

}  // namespace

QuantSpec ModelConfig::quant_for(const std::string& module_path) const {
  if (auto it = quant_overrides.find(module_path); it != quant_overrides.end()) return it->second;
  return quantization.value_or(QuantSpec{});
}

ModelConfig ModelConfig::load(const fs::path& dir) {
  const fs::path path = dir / "config.json";
  const json j = read_json_file(path);
  const Reader r{j, path.string()};
  ModelConfig c;

  if (!j.contains("architectures") || !j["architectures"].is_array() ||
      j["architectures"].empty() || !j["architectures"][0].is_string())
    r.fail("architectures", "must be a list naming the model class");
  c.architecture = j["architectures"][0].get<std::string>();
  if (c.architecture == "LlamaForCausalLM")
    c.arch = Arch::Llama;
  else if (c.architecture == "MistralForCausalLM")
    c.arch = Arch::Mistral;
  else if (c.architecture == "Qwen2ForCausalLM")
    c.arch = Arch::Qwen2;
  else if (c.architecture == "Qwen3ForCausalLM")
    c.arch = Arch::Qwen3;
  else
    r.fail("architectures",
           "names " + c.architecture +
               ", which hearth does not support (LlamaForCausalLM, MistralForCausalLM, "
               "Qwen2ForCausalLM, Qwen3ForCausalLM)");

  c.hidden_size = r.positive_int("hidden_size");
  c.intermediate_size = r.positive_int("intermediate_size");
  c.num_layers = r.positive_int("num_hidden_layers");
  c.num_heads = r.positive_int("num_attention_heads");
  c.num_kv_heads = r.positive_int("num_key_value_heads", c.num_heads);
  c.vocab_size = r.positive_int("vocab_size");
  c.max_position_embeddings = r.positive_int("max_position_embeddings", 4096);
  if (!r.has("head_dim") && c.hidden_size % c.num_heads != 0)
    r.fail("hidden_size", "is not a multiple of num_attention_heads and no head_dim is given");
  c.head_dim = r.positive_int("head_dim", c.hidden_size / c.num_heads);
  if (c.head_dim % 2 != 0) r.fail("head_dim", "must be even for rotary embeddings");
  if (c.num_heads % c.num_kv_heads != 0)
    r.fail("num_key_value_heads", "must divide num_attention_heads");
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  c.rope_theta = r.number("rope_theta", 10000.0);
  // Hugging Face's default for these classes is untied (mlx-lm differs; follow HF).
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  c.attention_bias = c.arch == Arch::Qwen2 || r.boolean("attention_bias", false);
  c.qk_norm = c.arch == Arch::Qwen3;
  if (r.has("hidden_act")) c.hidden_act = j["hidden_act"].get<std::string>();
  if (c.hidden_act != "silu" && c.hidden_act != "gelu_pytorch_tanh")
    r.fail("hidden_act", "is " + c.hidden_act + "; supported: silu, gelu_pytorch_tanh");
  if (r.has("sliding_window") && c.arch != Arch::Llama) {
    const bool qwen = c.arch == Arch::Qwen2 || c.arch == Arch::Qwen3;
    if (!qwen || r.boolean("use_sliding_window", false)) {
      c.sliding_window = r.positive_int("sliding_window");
      if (qwen) c.sliding_window_from_layer = int(r.number("max_window_layers", 28));
    }
  }

  if (r.has("rope_scaling")) {
    const json& s = j["rope_scaling"];
    if (!s.is_object()) r.fail("rope_scaling", "must be an object or null");
    auto& rs = c.rope_scaling;
    rs.type = s.value("rope_type", s.value("type", std::string("default")));
    rs.factor = s.value("factor", 1.0);
    rs.low_freq_factor = s.value("low_freq_factor", 1.0);
    rs.high_freq_factor = s.value("high_freq_factor", 4.0);
    rs.original_max_position_embeddings =
        s.value("original_max_position_embeddings", double(c.max_position_embeddings));
    rs.beta_fast = s.value("beta_fast", 32.0);
    rs.beta_slow = s.value("beta_slow", 1.0);
    if (s.contains("attention_factor") && s["attention_factor"].is_number())
      rs.attention_factor = s["attention_factor"].get<double>();
    if (rs.type != "default" && rs.type != "linear" && rs.type != "llama3" && rs.type != "yarn")
      r.fail("rope_scaling", "type " + rs.type + " is not supported (linear, llama3, yarn)");
  }

  if (r.has("quantization")) {
    const json& q = j["quantization"];
    if (!q.is_object()) r.fail("quantization", "must be an object");
    c.quantization = quant_spec(json{{"bits", q.value("bits", 4)},
                                     {"group_size", q.value("group_size", 64)},
                                     {"mode", q.value("mode", std::string("affine"))}},
                                path.string(), "quantization");
    for (auto& [key, v] : q.items())
      if (v.is_object() || v.is_boolean())
        c.quant_overrides[key] = quant_spec(v, path.string(), key);
  }
  return c;
}

GenerationConfig GenerationConfig::load(const fs::path& dir) {
  GenerationConfig g;
  if (fs::exists(dir / "config.json")) {
    json c = read_json_file(dir / "config.json");
    if (c.contains("eos_token_id")) g.eos_token_ids = id_list(c["eos_token_id"]);
    if (c.contains("bos_token_id") && c["bos_token_id"].is_number_integer())
      g.bos_token_id = c["bos_token_id"].get<int>();
  }
  const fs::path path = dir / "generation_config.json";
  if (!fs::exists(path)) return g;
  json j = read_json_file(path);
  if (j.contains("eos_token_id")) g.eos_token_ids = id_list(j["eos_token_id"]);
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer())
    g.bos_token_id = j["bos_token_id"].get<int>();
  auto num = [&](const char* k, std::optional<double>& out) {
    if (j.contains(k) && j[k].is_number()) out = j[k].get<double>();
  };
  num("temperature", g.temperature);
  num("top_p", g.top_p);
  num("min_p", g.min_p);
  num("repetition_penalty", g.repetition_penalty);
  if (j.contains("top_k") && j["top_k"].is_number_integer()) g.top_k = j["top_k"].get<int>();
  return g;
}

}  // namespace hearth::io
