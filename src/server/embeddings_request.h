// The embedding routes' requests, read into one shape: OpenAI's
// /v1/embeddings (input as a string, strings, token ids or lists of them;
// encoding_format; dimensions) and Ollama's /api/embed (input as a string or
// strings; truncate, on by default; dimensions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hearth::server {

struct EmbeddingInput {
  std::string text;          // tokenized with special tokens, as the checkpoint's tokenizer says
  std::vector<int32_t> ids;  // used verbatim when given as token ids
  bool is_ids = false;
};

struct EmbeddingsRequest {
  std::vector<EmbeddingInput> inputs;
  int64_t dimensions = 0;  // 0: the model's hidden size
  bool base64 = false;     // OpenAI encoding_format "base64": little-endian float32 bytes
  bool truncate = false;   // cut inputs longer than the context instead of refusing them
};

// OpenAI accepts at most 2048 inputs per request; so does hearth.
inline constexpr size_t kMaxEmbeddingInputs = 2048;

EmbeddingsRequest parse_openai_embeddings(const nlohmann::ordered_json& body);
EmbeddingsRequest parse_ollama_embed(const nlohmann::ordered_json& body);

}  // namespace hearth::server
