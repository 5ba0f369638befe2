// What every model-running subcommand shares: where the model is, how many
// threads, the sampling options, and loading the model with a KV pool.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/args.h"
#include "core/thread_pool.h"
#include "engine/sampler.h"
#include "io/model_config.h"
#include "model/kv_cache.h"
#include "model/llama.h"

namespace hearth::cli {

// --model, or the bundled model when none is given.
std::filesystem::path model_dir(const Args& args);
int thread_count(const Args& args);  // --threads, else physical cores

// Sampling: command-line values beat generation_config.json, which beats
// the built-in defaults (greedy, as mlx-lm's command line).
SamplingParams sampling_params(const Args& args, const io::GenerationConfig& gen);
// The tokens that end a chat reply: the configs' EOS ids and the
// tokenizer's own EOS (a chat model's end of turn, where the configs name
// only the end of text).
std::vector<int32_t> reply_stop_ids(const io::GenerationConfig& gen, std::optional<int32_t> tokenizer_eos);
extern const std::vector<std::string> kSamplingOptions;

// KV pool for `sequences` sequences of ctx_tokens each; --kv-type
// auto|f32|bf16|int8 picks the entry type (auto, the default: the model's
// native_kv_type).
std::unique_ptr<KvCache> make_kv_cache(const Args& args, const LlamaModel& model,
                                       int64_t ctx_tokens, int sequences = 1);
std::optional<DType> kv_type(const Args& args);  // empty for auto
DType kv_type(const Args& args, const LlamaModel& model);

// The options' GB: GiB.
inline constexpr double kGB = 1024.0 * 1024.0 * 1024.0;
// Bytes for people: KB, MB or GB (kGB).
std::string size_text(double bytes);

// The k largest logits as [[id, logit], ...], largest first (--logits K).
nlohmann::json top_logits(std::span<const float> logits, int k);

}  // namespace hearth::cli
