// Whisper (WhisperForConditionalGeneration in the Hugging Face layout, or
// the MLX layout of mlx-community's conversions, MLX-quantized or not): the audio
// encoder (two convolutions, then pre-norm transformer layers over 1500
// frames) and the text decoder (causal self-attention with a KV cache,
// cross-attention to the encoder output, output head tied to the token
// embedding), over dense or MLX-quantized weights used in place, on the same
// matmul kernels as the Llama family.
//
// One 30-second window is encoded once; its cross-attention keys and values
// (CrossKv) are computed once and shared by every decoder sequence that reads
// that window (temperature fallback, beam search).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/matrix.h"
#include "core/thread_pool.h"
#include "io/model_config.h"
#include "io/safetensors.h"
#include "model/whisper_config.h"

namespace hearth {

// openai-whisper's sinusoidal positions, [length][channels] (the encoder's).
std::vector<float> whisper_sinusoids(int64_t length, int64_t channels);
// A tensor's name in the MLX layout from its Hugging Face name
// ("model.decoder.layers.0.encoder_attn.q_proj.weight" ->
// "decoder.blocks.0.cross_attn.query.weight").
std::string whisper_mlx_name(const std::string& hf_name);

class WhisperModel {
 public:
  static std::unique_ptr<WhisperModel> load(const std::filesystem::path& dir);

  const WhisperConfig& config() const { return config_; }
  const std::filesystem::path& dir() const { return dir_; }
  size_t weight_bytes() const { return weights_.total_bytes(); }

  // The encoder output for one window: mel is [n_mels][mel_frames()]
  // row-major; features receives [audio_ctx][d_model].
  void encode(ThreadPool& pool, const float* mel, std::vector<float>& features);

  // Cross-attention keys and values of every decoder layer for one window.
  struct CrossKv {
    // Per layer: keys [heads][audio_ctx][head_dim], values transposed
    // [heads][head_dim][audio_ctx] (so both products are matmuls).
    std::vector<std::vector<float>> keys, values_t;
  };
  void cross_kv(ThreadPool& pool, const std::vector<float>& features, CrossKv& out);

  // One decoder sequence: its self-attention cache.
  struct Sequence {
    int64_t length = 0;  // tokens decoded so far
    // Per layer: keys and values [heads][text_ctx][head_dim].
    std::vector<std::vector<float>> keys, values;
  };
  Sequence new_sequence() const;
  // to = from, copying only the positions decoded so far (beam search
  // reorders its beams' caches every step).
  void copy_sequence(const Sequence& from, Sequence& to) const;

  struct Row {
    Sequence* seq = nullptr;
    std::span<const int32_t> tokens;  // new tokens at positions seq->length...
    bool all_positions = false;       // logits for every new token, else only the last
  };
  // Cross-attention scores before the softmax (q k^T / sqrt(head_dim)) of
  // chosen heads: what openai-whisper's hooks read to align words with audio.
  struct CrossScores {
    std::vector<std::pair<int, int>> heads;  // (decoder layer, head) to keep
    std::vector<std::vector<float>> scores;  // per head: [every row's new tokens][audio_ctx]
  };
  // Runs the rows against one window's cross keys/values, appends to each
  // sequence's cache and advances it; logits receives vocab_size floats per
  // requested position, row after row. When `keep` is given its heads'
  // scores are filled (only then, so the usual decode copies nothing).
  // Throws std::out_of_range for a token outside the vocabulary or past
  // text_ctx.
  void decode(ThreadPool& pool, const CrossKv& cross, std::span<const Row> rows,
              std::vector<float>& logits, CrossScores* keep = nullptr);

 private:
  struct Linear {
    Matrix w;
    std::vector<float> b;  // empty: no bias
  };
  struct Norm {
    std::vector<float> w, b;
  };
  struct Attention {
    Linear q, k, v, out;
  };
  struct EncoderLayer {
    Norm attn_norm, mlp_norm;
    Attention attn;
    Linear fc1, fc2;
  };
  struct DecoderLayer {
    Norm self_norm, cross_norm, mlp_norm;
    Attention self_attn, cross_attn;
    Linear fc1, fc2;
  };

  WhisperModel() = default;
  void load_weights();
  std::string stored(const std::string& hf_name) const;  // the name in this checkpoint's layout
  Matrix load_dense(const std::string& name, int64_t rows, int64_t cols) const;
  Matrix load_matrix(const std::string& module, int64_t rows, int64_t cols) const;  // module.weight
  // A float tensor of rows * cols values (a vector: cols 1), as float.
  std::vector<float> load_vector(const std::string& name, int64_t rows, int64_t cols = 1) const;
  Linear load_linear(const std::string& module, int64_t rows, int64_t cols, bool bias) const;
  Norm load_norm(const std::string& module) const;
  Attention load_attention(const std::string& module) const;
  // attn_[i][head h] = softmax(q_[i][head h] K_h^T / sqrt(head_dim)) V_h for
  // n query rows and n_keys keys: head_kv(h) gives K_h [n_keys][head_dim]
  // and V_h transposed [head_dim][n_keys]; scores_seen(h, ...) sees a head's
  // scores before the softmax (word timestamps keep some).
  void attend_heads(ThreadPool& pool, int64_t n, int64_t n_keys, int heads,
                    const std::function<std::pair<const float*, const float*>(int)>& head_kv,
                    const std::function<void(int, std::span<const float>)>& scores_seen = nullptr);
  // y = x W^T + b for n rows.
  void linear(ThreadPool& pool, const Linear& l, const float* x, int64_t n, float* y);
  void mlp(ThreadPool& pool, const Linear& fc1, const Linear& fc2, int64_t n, int ffn);

  std::filesystem::path dir_;
  WhisperConfig config_;
  io::Safetensors weights_;
  Linear conv1_, conv2_;  // as matrices over [in_channels * 3] unfolded windows
  std::vector<float> encoder_positions_;
  std::vector<EncoderLayer> encoder_;
  Norm encoder_norm_;
  Matrix token_embedding_, output_head_;  // the same matrix unless proj_out is stored
  std::vector<float> decoder_positions_;
  std::vector<DecoderLayer> decoder_;
  Norm decoder_norm_;

  // Scratch, reused across calls.
  std::vector<float> x_, h_, q_, k_, v_, attn_, ffn_, unfolded_, scores_, head_q_, head_out_,
      head_k_, head_v_;
};

}  // namespace hearth
