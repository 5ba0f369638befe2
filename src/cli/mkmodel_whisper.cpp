// hearth mkmodel --arch whisper: a random-weight WhisperForConditionalGeneration
// checkpoint in the Hugging Face layout, with the real shapes of the published
// sizes, so the encoder, decoder and decoding rules can be tested and
// benchmarked without downloads. The vocabulary (a .tiktoken file) is copied
// beside the weights.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "cli/args.h"
#include "cli/mkmodel_weights.h"
#include "io/safetensors_writer.h"

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
    return {80, 512, 8, 6, 6, 2048, 51865,
            {{3, 1}, {4, 2}, {4, 3}, {4, 7}, {5, 1}, {5, 2}, {5, 4}, {5, 6}}};
  if (preset == "large-v3-turbo")
    return {128, 1280, 20, 32, 4, 5120, 51866,
            {{2, 4}, {2, 11}, {3, 3}, {3, 6}, {3, 11}, {3, 14}}};
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
  args.allow_only({"arch", "dtype", "preset", "seed", "out", "tokenizer"});
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
  const uint64_t seed = uint64_t(args.integer("seed", 0));
  const fs::path out = args.str("out");
  fs::create_directories(out);

  io::SafetensorsWriter writer;
  writer.set_metadata("format", "pt");
  auto random = [&](const std::string& name, std::vector<int64_t> shape, float mean, float std) {
    int64_t n = 1;
    for (int64_t dim : shape) n *= dim;
    writer.add(name, dtype, shape, [=](uint8_t* dst) {
      generate(seed, name, n, mean, std, [&](int64_t i, float v) { store(dtype, dst, i, v); });
    });
  };
  const int64_t d = s.d;
  // Linear layers: weights of std 1/sqrt(fan_in), small biases.
  auto linear = [&](const std::string& module, int64_t rows, int64_t cols, bool bias) {
    random(module + ".weight", {rows, cols}, 0.0f, 1.0f / std::sqrt(float(cols)));
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
  random("model.encoder.conv1.weight", {d, s.n_mels, 3}, 0.0f, 1.0f / std::sqrt(float(s.n_mels * 3)));
  random("model.encoder.conv1.bias", {d}, 0.0f, 0.02f);
  random("model.encoder.conv2.weight", {d, d, 3}, 0.0f, 1.0f / std::sqrt(float(d * 3)));
  random("model.encoder.conv2.bias", {d}, 0.0f, 0.02f);
  // The encoder's positions are openai-whisper's fixed sinusoids.
  writer.add("model.encoder.embed_positions.weight", dtype, {1500, d}, [=](uint8_t* dst) {
    const int64_t half = d / 2;
    const double increment = std::log(10000.0) / double(half - 1);
    for (int64_t t = 0; t < 1500; ++t)
      for (int64_t j = 0; j < half; ++j) {
        const double angle = double(t) * std::exp(-increment * double(j));
        store(dtype, dst, t * d + j, float(std::sin(angle)));
        store(dtype, dst, t * d + half + j, float(std::cos(angle)));
      }
  });
  for (int64_t l = 0; l < s.encoder_layers; ++l) {
    const std::string p = "model.encoder.layers." + std::to_string(l) + ".";
    norm(p + "self_attn_layer_norm");
    attention(p + "self_attn");
    norm(p + "final_layer_norm");
    linear(p + "fc1", s.ffn, d, true);
    linear(p + "fc2", d, s.ffn, true);
  }
  norm("model.encoder.layer_norm");
  // Token embeddings scaled so the tied output head gives logits of std ~2.
  random("model.decoder.embed_tokens.weight", {s.vocab, d}, 0.0f, 2.0f / std::sqrt(float(d)));
  random("model.decoder.embed_positions.weight", {448, d}, 0.0f, 0.02f);
  for (int64_t l = 0; l < s.decoder_layers; ++l) {
    const std::string p = "model.decoder.layers." + std::to_string(l) + ".";
    norm(p + "self_attn_layer_norm");
    attention(p + "self_attn");
    norm(p + "encoder_attn_layer_norm");
    attention(p + "encoder_attn");
    norm(p + "final_layer_norm");
    linear(p + "fc1", s.ffn, d, true);
    linear(p + "fc2", d, s.ffn, true);
  }
  norm("model.decoder.layer_norm");

  const bool multilingual = s.vocab >= 51865;
  const int eot = multilingual ? 50257 : 50256;
  write_json(out / "config.json",
             {{"architectures", {"WhisperForConditionalGeneration"}},
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
              {"torch_dtype", dtype_arg == "f32" ? "float32" : dtype_arg == "bf16" ? "bfloat16"
                                                                                   : "float16"}});
  write_json(out / "generation_config.json",
             {{"alignment_heads", s.alignment_heads},
              {"is_multilingual", multilingual},
              {"decoder_start_token_id", eot + 1},
              {"eos_token_id", eot}});
  fs::copy_file(tokenizer, out / tokenizer.filename(), fs::copy_options::overwrite_existing);
  fs::permissions(out / tokenizer.filename(), fs::perms::owner_write, fs::perm_options::add);
  writer.write((out / "model.safetensors").string());
  return 0;
}

}  // namespace hearth::cli::mkmodel
