#include "io/model_config.h"

#include <climits>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

namespace hearth::io {

namespace fs = std::filesystem;
using nlohmann::json;

std::string json_for_message(const nlohmann::json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  const std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 80) + "..." : text;
}

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

// Typed fields of one JSON object (config.json, or an object inside it:
// `prefix` names it in messages). Every value is checked before it is
// converted: a float or an integer out of range never becomes an int.
struct Reader {
  const json& j;
  std::string file;
  std::string prefix;  // "rope_scaling." for the fields of that object
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::runtime_error(file + ": \"" + prefix + key + "\" " + what);
  }
  bool has(const std::string& key) const { return j.is_object() && j.contains(key) && !j[key].is_null(); }
  int integer(const std::string& key, int64_t min, int64_t max) const {
    const json& v = j[key];
    const bool fits = v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(max)) &&
                      v.get<int64_t>() >= min && v.get<int64_t>() <= max;
    if (!fits) fail(key, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
    return int(v.get<int64_t>());
  }
  int positive_int(const std::string& key) const {
    if (!has(key)) fail(key, "is missing");
    return integer(key, 1, INT_MAX);
  }
  int positive_int(const std::string& key, int fallback) const {
    return has(key) ? positive_int(key) : fallback;
  }
  int integer(const std::string& key, int64_t min, int64_t max, int fallback) const {
    return has(key) ? integer(key, min, max) : fallback;
  }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number()) fail(key, "must be a number");
    return j[key].get<double>();
  }
  // Above `above`: an epsilon, a base or a factor at or below it is a NaN or
  // an infinity in every output, not an error.
  double number_above(const std::string& key, double above, double fallback) const {
    const double v = number(key, fallback);
    if (!(v > above)) fail(key, "must be a number above " + std::to_string(above));
    return v;
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) fail(key, "must be true or false");
    return j[key].get<bool>();
  }
  std::string string(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string()) fail(key, "must be a string");
    return j[key].get<std::string>();
  }
};

// A JSON integer that fits an int; nullopt for anything else.
std::optional<int> int_value(const json& v) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT_MAX))) return std::nullopt;
  const int64_t x = v.get<int64_t>();
  if (x < INT_MIN || x > INT_MAX) return std::nullopt;
  return int(x);
}

// A token id (a non-negative int); nullopt for anything else.
std::optional<int> token_id(const json& v) {
  auto id = int_value(v);
  return id && *id >= 0 ? id : std::nullopt;
}

// Token ids: an id or a list of them; anything else is left out.
std::vector<int> id_list(const json& v) {
  std::vector<int> ids;
  if (auto id = token_id(v)) ids.push_back(*id);
  if (v.is_array())
    for (auto& x : v)
      if (auto id = token_id(x)) ids.push_back(*id);
  return ids;
}

}  // namespace

// bits, group_size and mode of a quantization object; missing keys fall
// back to MLX's own defaults (4, 64, affine), not the global entry's.
namespace {

// The rope's scaling as transformers reads it: the keys a type needs are
// required (a default there shifts every position), and yarn's betas of 0
// (or null) are their defaults.
RopeScaling read_rope_scaling(const Reader& rr, int max_position_embeddings) {
  RopeScaling rs;
  rs.type = rr.string("rope_type", rr.string("type", "default"));
  if (rs.type == "default") return rs;
  if (rs.type != "linear" && rs.type != "llama3" && rs.type != "yarn")
    rr.fail("rope_type", "is " + rs.type + ", which hearth does not support (linear, llama3, yarn)");
  auto required = [&](const char* key) {
    if (!rr.has(key)) rr.fail(key, "is missing: rope type " + rs.type + " needs it");
  };
  rs.original_max_position_embeddings =
      rr.number_above("original_max_position_embeddings", 0, double(max_position_embeddings));
  if (rs.type != "yarn") required("factor");
  // yarn without a factor: the context's extension (transformers v5).
  rs.factor = rr.number_above("factor", 0, max_position_embeddings / rs.original_max_position_embeddings);
  if (rs.type == "llama3") {
    for (const char* key : {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
      required(key);
    rs.low_freq_factor = rr.number_above("low_freq_factor", 0, 1.0);
    rs.high_freq_factor = rr.number_above("high_freq_factor", 0, 4.0);
    if (!(rs.high_freq_factor > rs.low_freq_factor))
      rr.fail("high_freq_factor", "must be above low_freq_factor");
  }
  if (rs.type == "yarn") {
    auto beta = [&](const char* key, double fallback) {
      const double v = rr.number(key, 0.0);
      if (v < 0) rr.fail(key, "must not be negative");
      return v == 0 ? fallback : v;
    };
    rs.beta_fast = beta("beta_fast", 32.0);
    rs.beta_slow = beta("beta_slow", 1.0);
    if (rr.has("attention_factor")) rs.attention_factor = rr.number_above("attention_factor", 0, 1.0);
    // As transformers, a 0 is no mscale.
    if (const double m = rr.number("mscale", 0.0); m != 0) rs.mscale = m;
    if (const double m = rr.number("mscale_all_dim", 0.0); m != 0) rs.mscale_all_dim = m;
    rs.truncate = rr.boolean("truncate", true);
  }
  return rs;
}

}  // namespace

QuantSpec read_quant(const json& v, const std::string& file, const std::string& key) {
  if (v.contains("mode") && v["mode"] != "affine")
    throw std::runtime_error(file + ": quantization mode " + json_for_message(v["mode"]) +
                             " is not supported (only affine)");
  const Reader r{v, file, key + "."};
  QuantSpec s{r.integer("bits", 0, 64, 4), r.integer("group_size", 1, INT_MAX, 64)};
  if (s.bits < 2 || s.bits > 8 || s.bits == 7)
    throw std::runtime_error(file + ": quantization bits " + std::to_string(s.bits) + " in " + key +
                             " is not supported (2, 3, 4, 5, 6, 8)");
  if ((int64_t{s.group_size} * s.bits) % 32 != 0)
    throw std::runtime_error(file + ": quantization group_size " + std::to_string(s.group_size) +
                             " in " + key + " is not supported");
  return s;
}

// A per-module entry: an object, {} or false (not quantized).
QuantSpec quant_spec(const json& v, const std::string& file, const std::string& key) {
  if (v.is_boolean() && !v.get<bool>()) return {};
  if (!v.is_object())
    throw std::runtime_error(file + ": quantization entry " + key + " is not an object");
  if (v.empty()) return {};
  return read_quant(v, file, key);
}

QuantSpec ModelConfig::quant_for(const std::string& module_path) const {
  if (auto it = quant_overrides.find(module_path); it != quant_overrides.end()) return it->second;
  return quantization.value_or(QuantSpec{});
}

ModelConfig ModelConfig::load(const fs::path& dir) {
  const fs::path path = dir / "config.json";
  const json j = read_json_file(path);
  const Reader r{j, path.string(), ""};
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

  // Sizes are held to well past any published model's, so that what is
  // computed from them before a tensor can disagree (the KV plan, the rope
  // table, the layer list) cannot overflow or take all memory.
  auto size = [&](const char* key, int max) {
    if (!r.has(key)) r.fail(key, "is missing");
    return r.integer(key, 1, max);
  };
  c.hidden_size = size("hidden_size", 1 << 20);
  c.intermediate_size = size("intermediate_size", 1 << 22);
  c.num_layers = size("num_hidden_layers", 1024);
  c.num_heads = size("num_attention_heads", 1024);
  c.num_kv_heads = r.has("num_key_value_heads") ? size("num_key_value_heads", 1024) : c.num_heads;
  c.vocab_size = size("vocab_size", 1 << 24);
  c.max_position_embeddings = r.has("max_position_embeddings") ? size("max_position_embeddings", 1 << 26) : 4096;
  if (!r.has("head_dim") && c.hidden_size % c.num_heads != 0)
    r.fail("hidden_size", "is not a multiple of num_attention_heads and no head_dim is given");
  c.head_dim = r.has("head_dim") ? size("head_dim", 1024) : c.hidden_size / c.num_heads;
  if (c.head_dim > 1024) r.fail("hidden_size", "/ num_attention_heads is over 1024 (the head size)");
  if (c.head_dim % 2 != 0) r.fail("head_dim", "must be even for rotary embeddings");
  if (c.num_heads % c.num_kv_heads != 0)
    r.fail("num_key_value_heads", "must divide num_attention_heads");
  c.rms_norm_eps = r.number_above("rms_norm_eps", 0, 1e-6);
  c.rope_theta = r.number_above("rope_theta", 1, 10000.0);
  // Hugging Face's default for these classes is untied (mlx-lm differs; follow HF).
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  c.attention_bias = c.arch == Arch::Qwen2 || r.boolean("attention_bias", false);
  // As Hugging Face's classes: Qwen2's o_proj and MLP never have biases.
  c.output_bias = c.attention_bias && (c.arch == Arch::Llama || c.arch == Arch::Qwen3);
  c.mlp_bias = c.arch == Arch::Llama && r.boolean("mlp_bias", false);
  c.qk_norm = c.arch == Arch::Qwen3;
  c.hidden_act = r.string("hidden_act", c.hidden_act);
  if (c.hidden_act != "silu" && c.hidden_act != "gelu_pytorch_tanh")
    r.fail("hidden_act", "is " + c.hidden_act + "; supported: silu, gelu_pytorch_tanh");
  if (r.has("sliding_window") && c.arch != Arch::Llama) {
    const bool qwen = c.arch == Arch::Qwen2 || c.arch == Arch::Qwen3;
    if (!qwen || r.boolean("use_sliding_window", false)) {
      c.sliding_window = r.positive_int("sliding_window");
      if (qwen) c.sliding_window_from_layer = r.integer("max_window_layers", 0, INT_MAX, 28);
    }
  }

  // Newer transformers write the rope's base and scaling together, as
  // rope_parameters; older ones rope_theta and rope_scaling.
  const json* rope = r.has("rope_parameters") ? &j["rope_parameters"] : nullptr;
  if (rope) {
    if (!rope->is_object()) r.fail("rope_parameters", "must be an object or null");
    for (const auto& [key, v] : rope->items())
      if (v.is_object())
        r.fail("rope_parameters", "holds per-layer-type parameters (\"" + key + "\"), which hearth does not support");
    const Reader rp{*rope, path.string(), "rope_parameters."};
    if (rp.has("rope_theta")) c.rope_theta = rp.number_above("rope_theta", 1, c.rope_theta);
    if (rp.has("partial_rotary_factor") && rp.number("partial_rotary_factor", 1.0) != 1.0)
      rp.fail("partial_rotary_factor", "is not 1: a partial rotary embedding is not supported");
  } else if (r.has("rope_scaling")) {
    rope = &j["rope_scaling"];
    if (!rope->is_object()) r.fail("rope_scaling", "must be an object or null");
  }
  if (r.has("partial_rotary_factor") && r.number("partial_rotary_factor", 1.0) != 1.0)
    r.fail("partial_rotary_factor", "is not 1: a partial rotary embedding is not supported");
  if (rope)
    c.rope_scaling = read_rope_scaling(
        Reader{*rope, path.string(), r.has("rope_parameters") ? "rope_parameters." : "rope_scaling."},
        c.max_position_embeddings);

  if (r.has("quantization")) {
    const json& q = j["quantization"];
    if (!q.is_object()) r.fail("quantization", "must be an object");
    c.quantization = read_quant(q, path.string(), "quantization");
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
    if (c.contains("bos_token_id"))
      if (auto id = token_id(c["bos_token_id"])) g.bos_token_id = id;
  }
  const fs::path path = dir / "generation_config.json";
  if (!fs::exists(path)) return g;
  json j = read_json_file(path);
  if (j.contains("eos_token_id")) g.eos_token_ids = id_list(j["eos_token_id"]);
  if (j.contains("bos_token_id"))
    if (auto id = token_id(j["bos_token_id"])) g.bos_token_id = id;
  auto num = [&](const char* k, std::optional<double>& out) {
    if (j.contains(k) && j[k].is_number()) out = j[k].get<double>();
  };
  num("temperature", g.temperature);
  num("top_p", g.top_p);
  num("min_p", g.min_p);
  num("repetition_penalty", g.repetition_penalty);
  if (j.contains("top_k"))
    if (auto k = int_value(j["top_k"])) g.top_k = k;
  return g;
}

}  // namespace hearth::io
