#include "model/whisper_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace hearth {

namespace {

int positive(const nlohmann::json& c, const char* key) {
  if (!c.contains(key) || !c[key].is_number_integer() || c[key].get<int64_t>() <= 0 ||
      c[key].get<int64_t>() > (1 << 24))
    throw std::runtime_error(std::string("config.json: \"") + key +
                             "\" must be a positive integer");
  return c[key].get<int>();
}

struct DimensionKeys {
  const char *n_mels, *d_model, *encoder_layers, *encoder_heads, *decoder_layers, *decoder_heads,
      *audio_ctx, *text_ctx, *vocab_size;
};
constexpr DimensionKeys kMlxKeys{"n_mels",       "n_audio_state", "n_audio_layer",
                                 "n_audio_head", "n_text_layer",  "n_text_head",
                                 "n_audio_ctx",  "n_text_ctx",    "n_vocab"};
constexpr DimensionKeys kHfKeys{"num_mel_bins",         "d_model",
                                "encoder_layers",       "encoder_attention_heads",
                                "decoder_layers",       "decoder_attention_heads",
                                "max_source_positions", "max_target_positions",
                                "vocab_size"};

}  // namespace

bool is_whisper_checkpoint(const std::filesystem::path& dir) {
  std::ifstream in(dir / "config.json");
  const nlohmann::json c = nlohmann::json::parse(in, nullptr, false);
  if (!c.is_object()) return false;
  const auto type = c.find("model_type");
  return (type != c.end() && *type == "whisper") || c.contains("n_audio_state");
}

WhisperConfig WhisperConfig::load(const std::filesystem::path& dir) {
  const nlohmann::json c = io::read_json_file(dir / "config.json");
  WhisperConfig w;
  w.mlx_layout = c.contains("n_audio_state");
  // The dimensions both layouts give, by their names in each.
  const DimensionKeys& keys = w.mlx_layout ? kMlxKeys : kHfKeys;
  w.n_mels = positive(c, keys.n_mels);
  w.d_model = positive(c, keys.d_model);
  w.encoder_layers = positive(c, keys.encoder_layers);
  w.encoder_heads = positive(c, keys.encoder_heads);
  w.decoder_layers = positive(c, keys.decoder_layers);
  w.decoder_heads = positive(c, keys.decoder_heads);
  w.audio_ctx = positive(c, keys.audio_ctx);
  w.text_ctx = positive(c, keys.text_ctx);
  w.vocab_size = positive(c, keys.vocab_size);
  if (w.mlx_layout) {  // openai-whisper's ModelDimensions, as mlx-examples saves them
    w.encoder_ffn = w.decoder_ffn = 4 * w.d_model;
    if (positive(c, "n_text_state") != w.d_model)
      throw std::runtime_error("config.json: n_text_state differs from n_audio_state");
    const std::string file = (dir / "config.json").string();
    if (c.contains("quantization")) {
      if (!c["quantization"].is_object())
        throw std::runtime_error(file + ": quantization must be an object");
      w.quantization = io::read_quant(c["quantization"], file, "quantization");
      for (const auto& [key, v] : c["quantization"].items())
        if (key != "bits" && key != "group_size" && key != "mode")
          w.quant_overrides[key] = io::quant_spec(v, file, key);
    }
  } else {
    w.encoder_ffn = positive(c, "encoder_ffn_dim");
    w.decoder_ffn = positive(c, "decoder_ffn_dim");
  }
  // Whisper's window is 30 s of log-mel, 3000 frames, 1500 after the
  // encoder's stride. A larger value would size every window (and, in the
  // MLX layout, the computed positions) by it: gigabytes from one number.
  if (w.audio_ctx > 1500)
    throw std::runtime_error(
        "config.json: the audio context (max_source_positions, n_audio_ctx) "
        "is " +
        std::to_string(w.audio_ctx) + "; Whisper's is at most 1500");
  if (w.d_model % w.encoder_heads || w.d_model % w.decoder_heads)
    throw std::runtime_error("config.json: d_model is not a multiple of the attention heads");
  if (c.contains("activation_function") && c["activation_function"] != "gelu")
    throw std::runtime_error("config.json: activation_function " +
                             io::json_for_message(c["activation_function"]) +
                             " is not supported (gelu)");
  if (c.contains("scale_embedding") && c["scale_embedding"] != false)  // any other value than false (or none)
    throw std::runtime_error("config.json: scale_embedding " + io::json_for_message(c["scale_embedding"]) +
                             " is not supported (false)");
  if (std::filesystem::exists(dir / "generation_config.json")) {
    const nlohmann::json g = io::read_json_file(dir / "generation_config.json");
    if (g.contains("alignment_heads") && g["alignment_heads"].is_array())
      for (const auto& pair : g["alignment_heads"]) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
            !pair[1].is_number_integer() || pair[0].get<int>() < 0 ||
            pair[0].get<int>() >= w.decoder_layers || pair[1].get<int>() < 0 ||
            pair[1].get<int>() >= w.decoder_heads)
          throw std::runtime_error("generation_config.json: bad alignment_heads entry " +
                                   io::json_for_message(pair));
        w.alignment_heads.emplace_back(pair[0].get<int>(), pair[1].get<int>());
      }
  }
  return w;
}

}  // namespace hearth
