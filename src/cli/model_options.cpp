#include "cli/model_options.h"

#include <algorithm>
#include <climits>
#include <cstdio>

namespace hearth::cli {

const std::vector<std::string> kSamplingOptions = {"temperature", "top-p", "top-k", "min-p",
                                                   "seed"};

std::filesystem::path model_dir(const Args& args) {
  return args.str("model", HEARTH_DEFAULT_MODEL);
}

int thread_count(const Args& args) {
  return int(args.integer("threads", ThreadPool::default_threads(), 1, 1024));
}

std::vector<int32_t> reply_stop_ids(const io::GenerationConfig& gen, std::optional<int32_t> tokenizer_eos) {
  std::vector<int32_t> ids(gen.eos_token_ids.begin(), gen.eos_token_ids.end());
  if (tokenizer_eos && std::find(ids.begin(), ids.end(), *tokenizer_eos) == ids.end()) ids.push_back(*tokenizer_eos);
  return ids;
}

SamplingParams sampling_params(const Args& args, const io::GenerationConfig& gen) {
  SamplingParams p;
  p.temperature = float(args.number("temperature", gen.temperature.value_or(0.0)));
  p.top_p = float(args.number("top-p", gen.top_p.value_or(1.0)));
  p.top_k = int(args.integer("top-k", gen.top_k.value_or(0), 0, INT_MAX));
  p.min_p = float(args.number("min-p", gen.min_p.value_or(0.0)));
  if (args.has("seed")) p.seed = args.seed("seed", 0);
  if (p.temperature < 0) throw std::runtime_error("--temperature must be >= 0");
  if (p.top_p <= 0 || p.top_p > 1) throw std::runtime_error("--top-p must be in (0, 1]");
  if (p.top_k < 0) throw std::runtime_error("generation_config.json: top_k must be >= 0");
  if (p.min_p < 0 || p.min_p > 1) throw std::runtime_error("--min-p must be in [0, 1]");
  return p;
}

std::optional<DType> kv_type(const Args& args) {
  const std::string t = args.str("kv-type", "auto");
  if (t == "auto") return std::nullopt;
  if (t == "f32") return DType::F32;
  if (t == "bf16") return DType::BF16;
  if (t == "int8") return DType::I8;
  throw std::runtime_error("--kv-type must be auto, f32, bf16 or int8, not '" + t + "'");
}

DType kv_type(const Args& args, const LlamaModel& model) {
  return kv_type(args).value_or(model.native_kv_type());
}

std::unique_ptr<KvCache> make_kv_cache(const Args& args, const LlamaModel& model,
                                       int64_t ctx_tokens, int sequences) {
  KvCacheShape shape = model.kv_shape(kv_type(args, model));
  return std::make_unique<KvCache>(shape, KvCache::blocks_for_tokens(shape, ctx_tokens) * sequences);
}

std::string size_text(double bytes) {
  char buf[32];
  if (bytes >= 0.1 * kGB)
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / kGB);
  else if (bytes >= 1 << 20)
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f KB", bytes / 1024);
  return buf;
}

nlohmann::json top_logits(std::span<const float> logits, int k) {
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  k = std::min<int>(k, int(order.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  nlohmann::json top = nlohmann::json::array();
  for (int i = 0; i < k; ++i) top.push_back({order[i], logits[order[i]]});
  return top;
}

}  // namespace hearth::cli
