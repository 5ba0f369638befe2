// How a checkpoint turns its final hidden states into one embedding:
// Sentence Transformers' modules.json and its Pooling module's config.json
// (Qwen3-Embedding: last token; most BERT-style models: mean). A checkpoint
// without them (a chat model served for embeddings) gets last-token pooling,
// the choice for causal models, where only the last token has seen the
// whole input.
#pragma once

#include <filesystem>
#include <string>

namespace hearth::io {

enum class Pooling { Last, Mean, First };

struct PoolingConfig {
  Pooling pooling = Pooling::Last;
  std::string source;  // the file it came from, relative to the checkpoint; "" for the default
};

// Throws std::runtime_error naming the file for a mode hearth does not
// implement (max, weighted mean, mean-sqrt-len) or a malformed file.
PoolingConfig read_pooling_config(const std::filesystem::path& model_dir);

const char* pooling_name(Pooling p);  // "last", "mean", "first"

}  // namespace hearth::io
