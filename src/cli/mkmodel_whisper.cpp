// hearth mkmodel --arch whisper: a random-weight WhisperForConditionalGeneration
// checkpoint in the Hugging Face layout, or in mlx-community's MLX layout
// (--layout mlx, MLX-quantized with --quant), with the real shapes of the
// published sizes, so the encoder, decoder and decoding rules can be tested
// and benchmarked without downloads. The vocabulary (a .tiktoken file) is
// copied beside the weights. The same seed gives the same values in both
// layouts (quantization aside).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "cli/args.h"
#include "cli/mkmodel_weights.h"
#include "core/quantize.h"
#include "io/safetensors_writer.h"
#include "model/whisper.h"

namespace hearth::cli::mkmodel {

namespace {

namespace fs = std::filesystem;

struct WhisperSpec {
  int64_t n_mels, d, heads, encoder_layers, decoder_layers, ffn, vocab;
  nlohmann::json alignment_heads;
};

// Shapes as the published checkpoints' config.json give them; alignment heads
// as their generation_config.json does.
WhisperSpec whisper_spec(const std::string& preset) {
  if (preset == "tiny")
    return {80, 384, 6, 4, 4, 1536, 51865, {{2, 2}, {3, 0}, {3, 2}, {3, 3}, {3, 4}, {3, 5}}};
  if (preset == "base")
    return {80, 512,  8,     6,
            6,  2048, 51865, {{3, 1}, {4, 2}, {4, 3}, {4, 7}, {5, 1}, {5, 2}, {5, 4}, {5, 6}}};
  if (preset == "large-v3-turbo")
    return {128, 1280, 20, 32, 4, 5120, 51866, {{2, 4}, {2, 11}, {3, 3}, {3, 6}, {3, 11}, {3, 14}}};
  throw std::runtime_error("unknown --preset '" + preset +
                           "' for whisper (expected tiny, base or large-v3-turbo)");
}

void write_json(const fs::path& path, const nlohmann::json& j) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int write_whisper(const Args& args) {
  args.allow_only(
      {"arch", "dtype", "preset", "seed", "out", "tokenizer", "layout", "quant", "group-size"});
  const WhisperSpec s = whisper_spec(args.str("preset", "tiny"));
  const std::string dtype_arg = args.str("dtype", "f32");
  DType dtype = DType::F32;
  if (dtype_arg == "bf16")
    dtype = DType::BF16;
  else if (dtype_arg == "f16")
    dtype = DType::F16;
  else if (dtype_arg != "f32")
    throw std::runtime_error("unknown --dtype '" + dtype_arg + "' (expected f32, bf16 or f16)");
  if (!args.has("tokenizer"))
    throw std::runtime_error(
        "--tokenizer FILE is required for whisper: openai-whisper's multilingual.tiktoken (or "
        "gpt2.tiktoken), e.g. ../shared/audio/multilingual.tiktoken");
  const fs::path tokenizer = args.str("tokenizer");
  if (!fs::is_regular_file(tokenizer))
    throw std::runtime_error("cannot read the vocabulary " + tokenizer.string());
  const uint64_t seed = args.seed("seed", 0);
  const std::string layout = args.str("layout", "hf");
  if (layout != "hf" && layout != "mlx")
    throw std::runtime_error("--layout must be hf or mlx, not '" + layout + "'");
  const bool mlx = layout == "mlx";
  int bits = 0;
  const int group = int(args.integer("group-size", 64));
  if (args.has("quant")) {
    const std::string q = args.str("quant");
    if (!mlx) throw std::runtime_error("--quant needs --layout mlx for whisper");
    if (q.size() != 4 || q.compare(0, 3, "mlx") != 0 || !std::strchr("234568", q[3]))
      throw std::runtime_error("--quant must be mlx2, mlx3, mlx4, mlx5, mlx6 or mlx8 for whisper");
    bits = q[3] - '0';
    if (group != 32 && group != 64 && group != 128)
      throw std::runtime_error("--group-size must be 32, 64 or 128");
  }
  const fs::path out = args.str("out");
  fs::create_directories(out);

  io::SafetensorsWriter writer;
  writer.set_metadata("format", mlx ? "mlx" : "pt");
  // Values are drawn by the Hugging Face name, then stored under the layout's.
  auto name_of = [&](const std::string& hf) { return mlx ? whisper_mlx_name(hf) : hf; };
  auto random = [&](const std::string& name, std::vector<int64_t> shape, float mean, float std) {
    int64_t n = 1;
    for (int64_t dim : shape) n *= dim;
    writer.add(name_of(name), dtype, shape, [=](uint8_t* dst) {
      generate(seed, name, n, mean, std, [&](int64_t i, float v) { store(dtype, dst, i, v); });
    });
  };
  // A convolution [out][in][3]; MLX stores it [out][3][in].
  auto conv = [&](const std::string& name, int64_t out_ch, int64_t in_ch) {
    const float std = 1.0f / std::sqrt(float(in_ch * 3));
    writer.add(
        name_of(name), dtype,
        mlx ? std::vector<int64_t>{out_ch, 3, in_ch} : std::vector<int64_t>{out_ch, in_ch, 3},
        [=](uint8_t* dst) {
          generate(seed, name, out_ch * in_ch * 3, 0.0f, std, [&](int64_t i, float v) {
            const int64_t o = i / (in_ch * 3), c = i / 3 % in_ch, k = i % 3;
            store(dtype, dst, mlx ? (o * 3 + k) * in_ch + c : i, v);
          });
        });
  };
  // A Linear or embedding weight, MLX-quantized when asked and its input
  // size allows (as mlx's nn.quantize does).
  auto matrix = [&](const std::string& module, int64_t rows, int64_t cols, float std) {
    const std::string hf = module + ".weight";
    if (!bits || !affine_quantizable(cols, bits, group)) return random(hf, {rows, cols}, 0.0f, std);
    const std::string stored = name_of(module);
    struct Packed {
      std::vector<uint32_t> codes;
      std::vector<float> scales, biases;
    };
    auto packed = std::make_shared<Packed>();
    auto compute = [=]() {
      if (!packed->codes.empty()) return;
      std::vector<float> w(size_t(rows * cols));
      generate(seed, hf, rows * cols, 0.0f, std,
               [&](int64_t i, float v) { w[size_t(i)] = round_to(dtype, v); });
      packed->codes.resize(size_t(rows * cols * bits / 32));
      packed->scales.resize(size_t(rows * cols / group));
      packed->biases.resize(size_t(rows * cols / group));
      affine_quantize(w.data(), rows, cols, bits, group, packed->codes.data(),
                      packed->scales.data(), packed->biases.data());
    };
    writer.add(stored + ".weight", DType::U32, {rows, cols * bits / 32}, [=](uint8_t* dst) {
      compute();
      std::memcpy(dst, packed->codes.data(), packed->codes.size() * 4);
    });
    for (const bool is_scales : {true, false})
      writer.add(stored + (is_scales ? ".scales" : ".biases"), dtype, {rows, cols / group},
                 [=](uint8_t* dst) {
                   compute();
                   const auto& v = is_scales ? packed->scales : packed->biases;
                   for (size_t i = 0; i < v.size(); ++i) store(dtype, dst, int64_t(i), v[i]);
                 });
  };
  const int64_t d = s.d;
  // Linear layers: weights of std 1/sqrt(fan_in), small biases.
  auto linear = [&](const std::string& module, int64_t rows, int64_t cols, bool bias) {
    matrix(module, rows, cols, 1.0f / std::sqrt(float(cols)));
    if (bias) random(module + ".bias", {rows}, 0.0f, 0.02f);
  };
  auto norm = [&](const std::string& module) {
    random(module + ".weight", {d}, 1.0f, 0.1f);
    random(module + ".bias", {d}, 0.0f, 0.02f);
  };
  auto attention = [&](const std::string& module) {
    linear(module + ".q_proj", d, d, true);
    linear(module + ".k_proj", d, d, false);
    linear(module + ".v_proj", d, d, true);
    linear(module + ".out_proj", d, d, true);
  };
  conv("model.encoder.conv1.weight", d, s.n_mels);
  random("model.encoder.conv1.bias", {d}, 0.0f, 0.02f);
  conv("model.encoder.conv2.weight", d, d);
  random("model.encoder.conv2.bias", {d}, 0.0f, 0.02f);
  // The encoder's positions are openai-whisper's fixed sinusoids (MLX computes them).
  if (!mlx)
    writer.add("model.encoder.embed_positions.weight", dtype, {1500, d}, [=](uint8_t* dst) {
      const std::vector<float> p = whisper_sinusoids(1500, d);
      for (size_t i = 0; i < p.size(); ++i) store(dtype, dst, int64_t(i), p[i]);
    });
  // A pre-norm block: self-attention, cross-attention (decoder), MLP.
  auto block = [&](const std::string& p, bool cross) {
    norm(p + "self_attn_layer_norm");
    attention(p + "self_attn");
    if (cross) {
      norm(p + "encoder_attn_layer_norm");
      attention(p + "encoder_attn");
    }
    norm(p + "final_layer_norm");
    linear(p + "fc1", s.ffn, d, true);
    linear(p + "fc2", d, s.ffn, true);
  };
  for (int64_t l = 0; l < s.encoder_layers; ++l)
    block("model.encoder.layers." + std::to_string(l) + ".", false);
  norm("model.encoder.layer_norm");
  // Token embeddings scaled so the tied output head gives logits of std ~2.
  matrix("model.decoder.embed_tokens", s.vocab, d, 2.0f / std::sqrt(float(d)));
  random("model.decoder.embed_positions.weight", {448, d}, 0.0f, 0.02f);
  for (int64_t l = 0; l < s.decoder_layers; ++l)
    block("model.decoder.layers." + std::to_string(l) + ".", true);
  norm("model.decoder.layer_norm");

  const bool multilingual = s.vocab >= 51865;
  const int eot = multilingual ? 50257 : 50256;
  if (mlx) {
    // openai-whisper's ModelDimensions, as mlx-examples' convert.py saves them.
    nlohmann::json c = {{"model_type", "whisper"},
                        {"n_mels", s.n_mels},
                        {"n_audio_ctx", 1500},
                        {"n_audio_state", d},
                        {"n_audio_head", s.heads},
                        {"n_audio_layer", s.encoder_layers},
                        {"n_vocab", s.vocab},
                        {"n_text_ctx", 448},
                        {"n_text_state", d},
                        {"n_text_head", s.heads},
                        {"n_text_layer", s.decoder_layers}};
    if (bits) c["quantization"] = {{"group_size", group}, {"bits", bits}};
    write_json(out / "config.json", c);
  } else {
    write_json(out / "config.json", {{"architectures", {"WhisperForConditionalGeneration"}},
                                     {"model_type", "whisper"},
                                     {"num_mel_bins", s.n_mels},
                                     {"d_model", d},
                                     {"encoder_layers", s.encoder_layers},
                                     {"encoder_attention_heads", s.heads},
                                     {"encoder_ffn_dim", s.ffn},
                                     {"decoder_layers", s.decoder_layers},
                                     {"decoder_attention_heads", s.heads},
                                     {"decoder_ffn_dim", s.ffn},
                                     {"max_source_positions", 1500},
                                     {"max_target_positions", 448},
                                     {"vocab_size", s.vocab},
                                     {"activation_function", "gelu"},
                                     {"scale_embedding", false},
                                     {"tie_word_embeddings", true},
                                     {"bos_token_id", eot},
                                     {"eos_token_id", eot},
                                     {"pad_token_id", eot},
                                     {"decoder_start_token_id", eot + 1},
                                     {"torch_dtype", dtype_arg == "f32"    ? "float32"
                                                     : dtype_arg == "bf16" ? "bfloat16"
                                                                           : "float16"}});
  }
  write_json(out / "generation_config.json", {{"alignment_heads", s.alignment_heads},
                                              {"is_multilingual", multilingual},
                                              {"decoder_start_token_id", eot + 1},
                                              {"eos_token_id", eot}});
  fs::copy_file(tokenizer, out / tokenizer.filename(), fs::copy_options::overwrite_existing);
  fs::permissions(out / tokenizer.filename(), fs::perms::owner_write, fs::perm_options::add);
  writer.write((out / (mlx ? "weights.safetensors" : "model.safetensors")).string());
  return 0;
}

}  // namespace hearth::cli::mkmodel
