// A Whisper checkpoint's shape, from its config.json alone (both layouts
// model/whisper.h loads), checked before anything is sized by it.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/model_config.h"

namespace hearth {

struct WhisperConfig {
  int n_mels = 80;
  int d_model = 0;
  int encoder_layers = 0, encoder_heads = 0, encoder_ffn = 0;
  int decoder_layers = 0, decoder_heads = 0, decoder_ffn = 0;
  int audio_ctx = 1500;  // encoder positions: 3000 mel frames after the stride-2 convolution
  int text_ctx = 448;    // decoder positions
  int vocab_size = 0;
  // (decoder layer, head) pairs whose cross-attention follows the alignment
  // (generation_config.json "alignment_heads"); empty when not given.
  std::vector<std::pair<int, int>> alignment_heads;
  // mlx-examples' layout: openai-whisper's names and dimensions in config.json
  // (n_audio_state, ...), convolution weights [out][3][in], the encoder's
  // positions computed, MLX affine quantization by module.
  bool mlx_layout = false;
  std::optional<io::QuantSpec> quantization;
  std::map<std::string, io::QuantSpec> quant_overrides;

  // config.json (and generation_config.json, where present) of a checkpoint.
  static WhisperConfig load(const std::filesystem::path& dir);
  int mel_frames() const { return audio_ctx * 2; }
};

// Whether dir holds a Whisper checkpoint, from its config.json alone:
// model_type "whisper" (Hugging Face), or openai-whisper's dimensions
// (n_audio_state: the MLX layout). False when there is no readable config.
bool is_whisper_checkpoint(const std::filesystem::path& dir);

}  // namespace hearth
