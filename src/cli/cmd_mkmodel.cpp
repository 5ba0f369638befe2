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
#include "cli/mkmodel_weights.h"
#include "core/dtype.h"
#include "core/quantize.h"
#include "io/gguf_writer.h"
#include "io/safetensors_writer.h"

namespace hearth::cli {

namespace {

using namespace mkmodel;
namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: hearth mkmodel --arch llama|mistral|qwen2|qwen3 --out DIR [options]\n"
    "       hearth mkmodel --arch whisper --tokenizer VOCAB.tiktoken --out DIR\n"
    "                      [--preset tiny|base|large-v3-turbo] [--dtype D] [--seed S]\n"
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
    "                    entries up to the preset's vocab_size (tiny grows to the tokenizer's)\n"
    "  --gguf T          also write model.gguf (llama.cpp's layout and names, the same weights):\n"
    "                    T = f16 | q8_0 | q4_0 | bf16 | f32 for the matrices (norms stay f32)\n"
    "  --embedding P     an embedding checkpoint as Qwen3-Embedding publishes it: the bare model's\n"
    "                    tensor names (no \"model.\" prefix), no lm_head, Sentence Transformers'\n"
    "                    modules.json with P = last | mean pooling and normalization, and a\n"
    "                    tokenizer that appends <|endoftext|> where it has one\n";

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

class Builder {
 public:
  // embedding: the bare model's names and no lm_head; the values stay those
  // of the causal LM with the same seed (they are drawn by the full name).
  Builder(const Spec& spec, DType dtype, QuantConfig quant, uint64_t seed, bool embedding)
      : spec_(spec), dtype_(dtype), quant_(quant), seed_(seed), embedding_(embedding) {}

  json quantization = json::object();  // per-module entries (mixed recipes)

  void build() {
    for_each_weight(
        spec_, [&](const std::string& name, int64_t n, float mean, float std) { vector(name, n, mean, std); },
        [&](const std::string& module, int64_t rows, int64_t cols, float std) {
          if (!(embedding_ && module == "lm_head")) matrix(module, rows, cols, std);
        });
  }

  io::SafetensorsWriter writer;

 private:
  std::string stored(const std::string& name) const {
    return embedding_ && name.starts_with("model.") ? name.substr(6) : name;
  }

  void vector(const std::string& name, int64_t n, float mean, float std) {
    DType t = dtype_;
    uint64_t seed = seed_;
    writer.add(stored(name), t, {n}, [=](uint8_t* dst) {
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
      writer.add(stored(name), t, {rows, cols}, [=](uint8_t* dst) {
        generate(seed, name, rows * cols, 0.0f, std, [&](int64_t i, float v) { store(t, dst, i, v); });
      });
      return;
    }
    int group = quant_.group_size;
    if (quant_.high_bits) quantization[stored(module)] = {{"group_size", group}, {"bits", bits}};
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
    writer.add(stored(name), DType::U32, {rows, cols * bits / 32}, [=](uint8_t* dst) {
      compute();
      std::memcpy(dst, shared->packed.data(), shared->packed.size() * 4);
      done();
    });
    for (const char* part : {"scales", "biases"}) {
      bool is_scales = part[0] == 's';
      writer.add(stored(module) + "." + part, t, {rows, cols / group}, [=](uint8_t* dst) {
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
  bool embedding_;
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
nlohmann::ordered_json read_tokenizer(const fs::path& from) {
  std::ifstream in(from / "tokenizer.json");
  if (!in) throw std::runtime_error("cannot read " + (from / "tokenizer.json").string());
  nlohmann::ordered_json tok = nlohmann::ordered_json::parse(in);
  if (!tok["model"]["vocab"].is_object()) throw std::runtime_error("tokenizer.json has no model.vocab object");
  return tok;
}

// The ids a tokenizer uses: its vocabulary and added tokens.
int64_t tokenizer_ids(const nlohmann::ordered_json& tok) {
  int64_t n = 0;
  for (const auto& [k, v] : tok["model"]["vocab"].items()) n = std::max<int64_t>(n, v.get<int64_t>() + 1);
  for (const auto& t : tok["added_tokens"]) n = std::max<int64_t>(n, t["id"].get<int64_t>() + 1);
  return n;
}

void write_tokenizer(nlohmann::ordered_json tok, const fs::path& from, const fs::path& to, int64_t vocab_size) {
  auto& vocab = tok["model"]["vocab"];
  const int64_t n = tokenizer_ids(tok);
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

// Sentence Transformers' description of the pipeline: the transformer, then
// pooling, then L2 normalization (as Qwen3-Embedding ships it).
void write_sentence_transformers(const fs::path& out, const std::string& pooling, int64_t hidden) {
  json modules = json::array();
  modules.push_back({{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}});
  modules.push_back({{"idx", 1}, {"name", "1"}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}});
  modules.push_back({{"idx", 2}, {"name", "2"}, {"path", "2_Normalize"}, {"type", "sentence_transformers.models.Normalize"}});
  write_text(out / "modules.json", modules.dump(2) + "\n");
  json config = {{"word_embedding_dimension", hidden}};
  for (const char* mode : {"cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken"})
    config[std::string("pooling_mode_") + mode] = (pooling == "mean" && std::string(mode) == "mean_tokens") ||
                                                  (pooling == "last" && std::string(mode) == "lasttoken");
  config["include_prompt"] = true;
  fs::create_directories(out / "1_Pooling");
  fs::create_directories(out / "2_Normalize");
  write_text(out / "1_Pooling" / "config.json", config.dump(2) + "\n");
}

// Qwen3-Embedding's tokenizer appends <|endoftext|> to every input: the
// token whose hidden state last-token pooling reads.
void append_end_of_text(nlohmann::ordered_json& tok) {
  for (const auto& t : tok["added_tokens"]) {
    if (t["content"] != "<|endoftext|>") continue;
    const nlohmann::ordered_json end = {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}};
    const nlohmann::ordered_json a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
    const nlohmann::ordered_json b = {{"Sequence", {{"id", "B"}, {"type_id", 1}}}};
    nlohmann::ordered_json templ = {
        {"type", "TemplateProcessing"},
        {"single", {a, end}},
        {"pair", {a, end, b, {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 1}}}}}},
        {"special_tokens",
         {{"<|endoftext|>", {{"id", "<|endoftext|>"}, {"ids", {t["id"]}}, {"tokens", {"<|endoftext|>"}}}}}}};
    nlohmann::ordered_json processors = nlohmann::ordered_json::array();
    if (!tok["post_processor"].is_null()) processors.push_back(tok["post_processor"]);
    processors.push_back(templ);
    tok["post_processor"] = {{"type", "Sequence"}, {"processors", processors}};
    return;
  }
}

}  // namespace

int cmd_mkmodel(int argc, char** argv) {
  Args args(argc, argv, {"help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args.str("arch") == "whisper") return write_whisper(args);
  args.allow_only(
      {"arch", "dtype", "quant", "group-size", "preset", "seed", "out", "tokenizer", "gguf", "embedding"});
  args.no_positional();
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
  const uint64_t seed = args.seed("seed", 0);
  std::optional<GgufOptions> gguf;
  if (args.has("gguf")) gguf = parse_gguf(args.str("gguf"));
  const std::string embedding = args.str("embedding");
  if (args.has("embedding") && embedding != "last" && embedding != "mean")
    throw std::runtime_error("--embedding must be last or mean, not '" + embedding + "'");
  if (args.has("embedding") && gguf) throw std::runtime_error("--embedding and --gguf do not go together");

#ifdef HEARTH_DEFAULT_MODEL
  fs::path tokenizer_dir = args.str("tokenizer", HEARTH_DEFAULT_MODEL);
#else
  if (!args.has("tokenizer")) throw std::runtime_error("--tokenizer DIR is required");
  fs::path tokenizer_dir = args.str("tokenizer");
#endif

  // The tiny preset grows its vocabulary to the tokenizer's (a multiple of 64),
  // so any real tokenizer and its chat template can be tested on it.
  nlohmann::ordered_json tokenizer = read_tokenizer(tokenizer_dir);
  if (args.str("preset", "tiny") == "tiny") spec.vocab = std::max<int64_t>(spec.vocab, (tokenizer_ids(tokenizer) + 63) / 64 * 64);

  fs::path out = args.str("out");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw std::runtime_error("cannot create " + out.string() + ": " + ec.message());

  Builder builder(spec, dtype, quant, seed, args.has("embedding"));
  builder.build();
  builder.writer.set_metadata("format", quant.enabled() ? "mlx" : "pt");

  if (args.has("embedding")) {
    append_end_of_text(tokenizer);
    write_sentence_transformers(out, embedding, spec.hidden);
  }
  write_tokenizer(std::move(tokenizer), tokenizer_dir, out, spec.vocab);
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
