// Embeddings through the engine: each input is one request that prefills its
// tokens and pools the final hidden states (Engine, GenerationRequest::embed),
// so embedding inputs batch with each other and with generation like any
// prompt. What every front end (the OpenAI and Ollama routes, `hearth embed`)
// then does to a pooled vector is here too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/engine.h"

namespace hearth {

// Keeps the first `dimensions` values (0: all) and scales to unit L2 length,
// as Sentence Transformers' Normalize module and Qwen3-Embedding's
// Matryoshka truncation do (a zero vector stays zero).
void finish_embedding(std::vector<float>& v, int64_t dimensions = 0);

struct EmbeddingBatch {
  std::vector<std::vector<float>> vectors;  // one per input, finished as above
  int64_t tokens = 0;                       // input tokens, all inputs together
};

// Submits every input, oldest first, waiting for its own earlier inputs to
// finish whenever max_batch of them are in flight or the engine's queue is
// full, and returns their embeddings in order. on_submit sees each handle as it is queued (a server cancels them
// when its client leaves). Throws what Engine::submit throws (QueueFull only
// when none of its own inputs is in flight to wait for), and
// std::runtime_error when an input fails or is cancelled; what it queued is
// cancelled when it throws.
EmbeddingBatch embed(Engine& engine, std::span<const std::vector<int32_t>> inputs, io::Pooling pooling,
                     int64_t dimensions = 0,
                     const std::function<void(const std::shared_ptr<RequestHandle>&)>& on_submit = {});

}  // namespace hearth
