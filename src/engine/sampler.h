// Turns a row of logits into the next token. Follows mlx-lm's sampler
// (mlx_lm/sample_utils.py): first the logits processors (logit bias, then
// repetition, presence and frequency penalties over windows of the token
// history), then the filters (top_p, min_p, XTC, top_k, in that order) on
// the processed distribution, then a draw among the survivors at the given
// temperature. temperature 0 is greedy (after the processors).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace hearth {

class ThreadPool;

struct SamplingParams {
  float temperature = 1.0f;
  float top_p = 1.0f;  // 1: off
  int top_k = 0;       // 0: off
  float min_p = 0.0f;  // 0: off
  std::optional<uint64_t> seed;

  // XTC ("exclude top choices"): with probability xtc_probability, drop every
  // token whose probability exceeds that of the least likely token above
  // xtc_threshold; xtc_special_tokens (EOS, newline) are never dropped.
  float xtc_probability = 0.0f;  // 0: off
  float xtc_threshold = 0.1f;    // in [0, 0.5]
  std::vector<int32_t> xtc_special_tokens;

  // Logits processors; each penalty looks at the last *_context_size tokens
  // of the history (prompt + generated so far). 0 turns a penalty off.
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit)
  float repetition_penalty = 0.0f;  // logit > 0: divided by it, else multiplied (once per distinct token)
  int repetition_context_size = 20;
  float presence_penalty = 0.0f;    // subtracted once from each distinct token in the window
  int presence_context_size = 20;
  float frequency_penalty = 0.0f;   // subtracted once per occurrence in the window
  int frequency_context_size = 20;

  bool has_processors() const {
    return !logit_bias.empty() || (repetition_penalty != 0.0f && repetition_penalty != 1.0f) ||
           presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // logits is scratch: the sampler may overwrite it. Without a history the
  // penalties have nothing to act on (the logit bias still applies).
  int32_t sample(std::span<float> logits);
  // history: the sequence so far, prompt then generated tokens, oldest first.
  // The passes over the whole vocabulary spread over `pool` where one is
  // given; the draw is the same either way.
  int32_t sample(std::span<float> logits, std::span<const int32_t> history,
                 ThreadPool* pool = nullptr);

  // Applies only the logits processors, in place (what sample() does first).
  void process(std::span<float> logits, std::span<const int32_t> history);
  // What sample() does after the processors: the filters and the draw (or
  // the argmax), which leave the row as it is.
  int32_t choose(std::span<const float> logits, ThreadPool* pool = nullptr);

  const SamplingParams& params() const { return params_; }
  // Frees the buffers of the passes over the vocabulary (megabytes for a
  // large one), which each call sets up again: for a sampler kept idle.
  void release_scratch();
  static int32_t argmax(std::span<const float> logits);

 private:
  Sampler(const SamplingParams& params, std::mt19937_64 rng);
  // min_p's and top_p's cut: the survivors are the tokens with a logit at
  // or above the returned value; keep becomes about how many there are.
  float min_p_top_p_cut(std::span<const float> logits, float top, int64_t& keep, ThreadPool* pool);
  // order_ = the tokens with logits above at_least, and of those equal to
  // it the first `ties`, in order of id.
  void collect(std::span<const float> logits, float at_least, int64_t ties);
  int32_t sample_xtc(std::span<const float> logits, float at_least);
  // The tempered draw among order_[0, keep), or among every token at or
  // above at_least (the best being `top`).
  int32_t draw_listed(std::span<const float> logits, int64_t keep);
  int32_t draw_above(std::span<const float> logits, float top, float at_least, ThreadPool* pool);
  // The same draw among every token at or above at_least, by rejection
  // from top_p's histogram (edge_bucket_ >= 0).
  int32_t draw_by_bucket(std::span<const float> logits, float top, float at_least, ThreadPool* pool);
  // order_[0, sorted_) are the best candidates in order; with partitioned_
  // > 0, order_[0, partitioned_) are the partitioned_ best, and sorting
  // stays inside them.
  void sort_prefix(std::span<const float> logits, int64_t k);
  void partition(std::span<const float> logits, int64_t keep);

  // The sampler's state: its parameters and its random numbers. Everything
  // below them is scratch for one call (release_scratch).
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> order_;
  int64_t sorted_ = 0, partitioned_ = 0;
  bool by_id_ = true;  // order_[0, partitioned_ or its size) is in order of token id
  std::vector<int32_t> window_;  // scratch: distinct tokens of a penalty window
  std::vector<uint8_t> member_;  // scratch: the survivors as a mask over the vocabulary
  std::vector<float> gathered_;  // scratch: the survivors' logits
  std::vector<float> edge_;      // scratch: the logits of top_p's edge bucket, best first
  int edge_bucket_ = -1;         // that bucket, or -1 where top_p made no histogram
  std::vector<int32_t> bucket_ids_;  // scratch: the tokens of one bucket
  std::vector<double> weights_, block_sums_;  // scratch: draw weights
  std::vector<double> bucket_mass_, chunk_mass_;  // scratch: top_p histogram, per chunk of the row
  std::vector<double> bucket_total_;  // top_p histogram of the whole row, buckets up to the edge
  std::vector<double> envelope_;      // scratch: draw_by_bucket's bounds U_b
};

}  // namespace hearth
