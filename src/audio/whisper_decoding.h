// Decoding one 30-second window as openai-whisper's DecodingTask does it
// (whisper/decoding.py): the start sequence (with the previous text as a
// prompt), the logit filters (SuppressBlank, SuppressTokens,
// ApplyTimestampRules), greedy or temperature sampling, and the scores the
// transcriber's fallback reads (average log-probability, compression ratio,
// no-speech probability).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/whisper.h"
#include "text/tokenizer/whisper.h"

namespace hearth::audio {

struct DecodingOptions {
  std::string task = "transcribe";  // or "translate"
  std::string language = "en";      // a code; ignored by English-only models
  float temperature = 0;
  int beam_size = 0;      // > 1: beam search (temperature 0 only)
  float patience = 1.0f;  // beam search ends with round(beam_size * patience) finished candidates
  int best_of = 0;        // > 1: that many samples (temperature > 0), the likeliest kept
  int sample_len = 0;     // 0: text_ctx / 2
  std::vector<int32_t> prompt;         // previous text, after <|startofprev|>
  std::string suppress_tokens = "-1";  // comma-separated ids; -1: the non-speech set
  bool suppress_blank = true;
  bool without_timestamps = false;
  float max_initial_timestamp = 1.0f;
};

struct DecodingResult {
  std::vector<int32_t> tokens;  // sampled, without the start sequence or the end token
  std::string text;
  float avg_logprob = 0, no_speech_prob = 0, temperature = 0, compression_ratio = 0;
};

// Called per decoding step with the raw logits (before the filters) and the
// token then chosen, for outside checks (`hearth transcribe --logits`).
using StepObserver = std::function<void(int step, std::span<const float> logits, int32_t token)>;

// openai-whisper's ApplyTimestampRules on one row of logits, given the
// tokens sampled so far in this window: <|notimestamps|> never; timestamps
// in pairs (text after a closed pair, only a closing timestamp or the end
// after an open one); never decreasing, and no empty segment; the first
// token a timestamp of at most max_initial_index steps; and a timestamp
// whenever all of them together are likelier than the best text token.
struct TimestampTokens {
  int32_t eot = 0, no_timestamps = 0, timestamp_begin = 0;
};
void apply_timestamp_rules(const TimestampTokens& ids, std::span<const int32_t> sampled,
                           std::span<float> logits, int max_initial_index);

// zlib's compression ratio of the text's bytes, as openai-whisper computes it.
float compression_ratio(const std::string& text);

class WindowDecoder {
 public:
  WindowDecoder(WhisperModel& model, const text::WhisperTokenizer& tokenizer, ThreadPool& pool);

  // The language of one window: openai-whisper's detect_language (the
  // language token most likely after <|startoftranscript|>). Returns its code.
  std::string detect_language(const WhisperModel::CrossKv& cross);

  DecodingResult decode(const WhisperModel::CrossKv& cross, const DecodingOptions& options,
                        std::mt19937_64& rng, const StepObserver& observe = nullptr);

 private:
  std::vector<int32_t> suppressed(const DecodingOptions& options) const;

  WhisperModel& model_;
  const text::WhisperTokenizer& tokenizer_;
  ThreadPool& pool_;
  std::vector<float> logits_;
};

}  // namespace hearth::audio
