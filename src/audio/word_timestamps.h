// Word-level timestamps as openai-whisper computes them (whisper/timing.py):
// the window's text is decoded once more, teacher-forced, and the
// cross-attention of the alignment heads (which follow the audio) is
// normalized, median-filtered and averaged into a token × frame matrix;
// dynamic time warping through it gives each token the frame where it
// starts, and words (split by the tokenizer's rules) take the times of their
// first tokens. Then openai-whisper's clamps for over-long words and its
// punctuation merging. The pieces are separate so tests can check each.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audio/transcriber.h"

namespace hearth::audio {

struct WordTiming {
  std::string word;
  std::vector<int32_t> tokens;
  double start = 0, end = 0;  // seconds from the window's start
  double probability = 0;
};

// The DTW path through cost x ([rows][cols] row-major) minimising the sum,
// as timing.py's dtw_cpu and backtrace: pairs (text index, time index) from
// (0, 0) to (rows - 1, cols - 1).
std::vector<std::pair<int, int>> dtw(std::span<const double> x, int rows, int cols);

// timing.py's median_filter along one row: reflect padding, odd width; rows
// not longer than width / 2 come back unchanged.
std::vector<float> median_filter(std::span<const float> row, int width);

// Tokenizer.split_to_word_tokens: words and their tokens, split where a
// token completes valid UTF-8 for zh, ja, th, lo, my and yue, else at
// spaces and punctuation.
using WordTokens = std::pair<std::vector<std::string>, std::vector<std::vector<int32_t>>>;
WordTokens split_to_word_tokens(const text::WhisperTokenizer& tokenizer, std::string_view language,
                                std::span<const int32_t> tokens);

inline constexpr std::string_view kPrependPunctuations = "\"'“¿([{-";
inline constexpr std::string_view kAppendPunctuations = "\"'.。,，!！?？:：”)]}、";

// timing.py's merge_punctuations: opening marks join the next word, closing
// marks the previous one; the merged-away entries are left empty.
void merge_punctuations(std::vector<WordTiming>& words, std::string_view prepended,
                        std::string_view appended);

// The scores' alignment heads: the config's, else every head of the second
// half of the decoder layers (openai-whisper's default).
std::vector<std::pair<int, int>> alignment_heads(const WhisperConfig& config);

// timing.py's find_alignment for text_tokens in one window (cross: its keys
// and values; num_frames: its mel frames of audio, at most 3000).
std::vector<WordTiming> find_alignment(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                                       ThreadPool& pool, const WhisperModel::CrossKv& cross,
                                       const std::string& language, const std::string& task,
                                       std::span<const int32_t> text_tokens, int64_t num_frames);

// timing.py's add_word_timestamps: fills the words of one window's segments
// and moves their start and end to the words' where openai-whisper does.
// last_speech_timestamp is the end of the speech before these segments.
void add_word_timestamps(std::span<Segment> segments, WhisperModel& model,
                         const text::WhisperTokenizer& tokenizer, ThreadPool& pool,
                         const WhisperModel::CrossKv& cross, const std::string& language,
                         const std::string& task, int64_t num_frames, double last_speech_timestamp);

}  // namespace hearth::audio
