// The Llama family forward pass: LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM (q/k/v bias) and Qwen3ForCausalLM (per-head q/k RMSNorm),
// with explicit head_dim, grouped-query attention and tied or separate output
// embeddings, over dense or MLX-quantized weights used in place.
//
// forward() takes a ragged batch: several sequences, each with some new
// tokens that continue its KV. All rows go through each matmul together.
//
// Weights are named as transformers saves the causal LM ("model.layers.0...",
// "lm_head") or, for embedding checkpoints saved from the bare model
// (Qwen3-Embedding), without the "model." prefix and with no output head:
// such a model gives hidden states only.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/matrix.h"
#include "core/ops.h"
#include "core/thread_pool.h"
#include "io/model_config.h"
#include "io/safetensors.h"
#include "model/kv_cache.h"
#include "model/rope.h"

namespace hearth {

struct BatchRow {
  int seq = 0;                      // KvCache sequence id
  std::span<const int32_t> tokens;  // new tokens, at positions kv.length(seq)...
  bool all_positions = false;       // an output for every new token, else only the last
  bool hidden = false;              // output the final-normed hidden state, not logits
};

// A checkpoint's KV entries: a layer's keys and values for each token.
KvCacheShape kv_shape(const io::ModelConfig& config, DType dtype, int block_tokens = 32);

// What a checkpoint asks of memory, from config.json and the safetensors
// headers alone: no weight is read (hearth fit).
struct CheckpointFootprint {
  io::ModelConfig config;
  size_t weight_bytes = 0;  // as LlamaModel::weight_bytes() would say
  DType native_kv_type = DType::BF16;
};

class LlamaModel {
 public:
  static CheckpointFootprint footprint(const std::filesystem::path& dir);
  // Loads config.json and the safetensors weights of a model directory,
  // checking every tensor's presence, dtype and shape against the config.
  static std::unique_ptr<LlamaModel> load(const std::filesystem::path& dir);

  const io::ModelConfig& config() const { return config_; }
  const std::filesystem::path& dir() const { return dir_; }
  const io::Safetensors& weights() const { return weights_; }
  KvCacheShape kv_shape(DType dtype = DType::F32, int block_tokens = 32) const {
    return hearth::kv_shape(config_, dtype, block_tokens);
  }
  // The KV entry type a user gets by default: the activations' dtype, as
  // mlx-lm keeps it, which follows the weights: BF16 for 16-bit and
  // quantized checkpoints (half the memory and attention traffic of F32),
  // F32 for F32 checkpoints.
  DType native_kv_type() const;

  // Runs the rows, appends their keys/values to the cache and advances each
  // sequence's length. The caller owns reservation: each sequence must
  // already hold blocks for its new tokens (KvCache::reserve). logits
  // receives, row after row, vocab_size floats per requested position of the
  // rows that want logits; hidden (needed when a row sets it) hidden_size
  // floats per requested position of the others.
  void forward(ThreadPool& pool, KvCache& kv, std::span<const BatchRow> rows,
               std::vector<float>& logits, std::vector<float>* hidden = nullptr);

  bool has_output_head() const { return lm_head_.rows > 0; }

  const Matrix& output_head() const { return lm_head_; }  // the largest matrix: bench probes it
  size_t weight_bytes() const;                            // all weights as stored
  size_t bytes_per_decode_token() const;                  // what one decode step streams

 private:
  struct Layer {
    std::vector<float> input_norm, post_norm, q_norm, k_norm, q_bias, k_bias, v_bias;
    std::vector<float> o_bias, gate_bias, up_bias, down_bias;  // empty where the config has none
    Matrix q, k, v, o, gate, up, down;
    // q/k/v and gate/up stacked into one packed matrix each, when the
    // kernels take their format (rows == 0 otherwise).
    Matrix qkv, gate_up;
  };
  LlamaModel() = default;
  void load_weights();
  Matrix load_matrix(const std::string& module, int64_t rows, int64_t cols);
  std::vector<float> load_vector(const std::string& name, int64_t n);
  // The checkpoint's tensors load_weights() did not read, but for the ones
  // every loader skips; a warning names them.
  std::vector<std::string> unread_tensors() const;

  std::filesystem::path dir_;
  std::string prefix_;  // "model." or "" (see the file comment)
  io::ModelConfig config_;
  io::Safetensors weights_;
  std::unordered_set<const io::TensorInfo*> read_;  // by load_matrix / load_vector
  RopeTable rope_;
  Matrix embed_, lm_head_;
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;

  // Scratch, grown as needed and reused across steps.
  std::vector<float> x_, h_, q_, k_, v_, attn_, gate_, up_, fused_, rows_for_logits_;
  std::vector<float> rotations_;  // each token's rope_rotation, for every layer
  std::vector<std::vector<float>> attn_scratch_;
  std::vector<std::vector<AttentionRow>> attn_rows_;
  std::vector<std::pair<int64_t, int64_t>> attn_blocks_;
  std::vector<int> tok_row_;
  std::vector<int64_t> tok_pos_, wanted_;
};

}  // namespace hearth
