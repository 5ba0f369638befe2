// One sequence's generation loop, synchronous, for the command line: prefill
// the prompt as one batched pass, then decode a token at a time until the
// sequence's Decoding finishes or the caller says stop.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "engine/decoding.h"
#include "model/llama.h"

namespace hearth {

struct GenerateOptions {
  int64_t max_tokens = -1;  // -1: until EOS or the context is full
  int64_t ctx_size = 0;     // 0: the model's max_position_embeddings
  SamplingParams sampling;
  std::vector<int32_t> eos_ids;
  std::optional<grammar::Constraint> constraint;  // structured output (see Decoding)
  std::vector<float>* prompt_logits = nullptr;  // if set, receives [n_prompt, vocab]
};

struct GenerateStats {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  // Of the decode: the time spent choosing tokens from the logits (the
  // sampler, or greedy's argmax), the first token's choice included.
  double choosing_seconds = 0;
};

// Called with each new token and its logits (before sampling's changes);
// return false to stop.
using TokenCallback = std::function<bool(int32_t token, std::span<const float> logits)>;

class Generator {
 public:
  Generator(LlamaModel& model, ThreadPool& pool, KvCache& kv)
      : model_(model), pool_(pool), kv_(kv) {}

  FinishReason run(std::span<const int32_t> prompt, const GenerateOptions& options,
                   const TokenCallback& on_token, GenerateStats* stats = nullptr);

 private:
  LlamaModel& model_;
  ThreadPool& pool_;
  KvCache& kv_;
  std::vector<float> logits_;
};

}  // namespace hearth
