// The pieces of openai-whisper's timing.py in audio/word_timestamps: the DTW
// and its tie-breaking on matrices worked out by hand, the median filter,
// merge_punctuations on word lists, and the tokenizer's word split with the
// real multilingual vocabulary. The whole alignment is compared with a NumPy
// timing.py in tests/numerics/test_whisper_words.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "audio/word_timestamps.h"
#include "shared_audio.h"

using namespace hearth::audio;
using Path = std::vector<std::pair<int, int>>;

TEST(WordTimestampsDtw, FollowsTheCheapDiagonal) {
  EXPECT_EQ(dtw(std::vector<double>{0, 1, 1, 0}, 2, 2), (Path{{0, 0}, {1, 1}}));
}

TEST(WordTimestampsDtw, TiesMoveAlongTimeWhenBacktracking) {
  // All costs equal: every step ties, dtw_cpu records "left", so the path
  // reaches the last token at the first frame and stays there.
  EXPECT_EQ(dtw(std::vector<double>(6, 0.0), 2, 3), (Path{{0, 0}, {1, 0}, {1, 1}, {1, 2}}));
}

TEST(WordTimestampsDtw, TieOfDiagonalAndUpTakesLeft) {
  // At the last cell the diagonal and the upper predecessors both cost 0 and
  // the left one 5: dtw_cpu's strict comparisons fall through to "left".
  const std::vector<double> x{0, 5, 5,  //
                              5, 0, 0,  //
                              5, 5, 0};
  EXPECT_EQ(dtw(x, 3, 3), (Path{{0, 0}, {1, 1}, {2, 1}, {2, 2}}));
}

TEST(WordTimestampsDtw, OneRow) {
  EXPECT_EQ(dtw(std::vector<double>{3, 1, 2}, 1, 3), (Path{{0, 0}, {0, 1}, {0, 2}}));
}

TEST(WordTimestampsMedianFilter, ReflectsAtTheEdges) {
  const std::vector<float> row{5, 1, 4, 2, 3, 9, 0, 7};
  EXPECT_EQ(median_filter(row, 3), (std::vector<float>{1, 4, 2, 3, 3, 3, 7, 0}));
  // Width 7 over 4 values: padded 4 3 2 | 1 2 3 4 | 3 2 1.
  EXPECT_EQ(median_filter(std::vector<float>{1, 2, 3, 4}, 7), (std::vector<float>{3, 3, 2, 2}));
  // No longer than half the width: returned as is.
  EXPECT_EQ(median_filter(std::vector<float>{3, 1, 2}, 7), (std::vector<float>{3, 1, 2}));
}

namespace {

std::vector<WordTiming> timings(const std::vector<std::string>& words) {
  std::vector<WordTiming> out;
  int32_t id = 0;
  for (const std::string& w : words) out.push_back({w, {id++}, 0, 0, 0});
  return out;
}

std::vector<std::string> merged(const std::vector<std::string>& words) {
  std::vector<WordTiming> t = timings(words);
  merge_punctuations(t, kPrependPunctuations, kAppendPunctuations);
  std::vector<std::string> out;
  for (const WordTiming& w : t) out.push_back(w.word);
  return out;
}

}  // namespace

TEST(WordTimestampsMergePunctuations, ClosingMarksJoinThePreviousWord) {
  EXPECT_EQ(merged({" Hello", ",", " world", "."}),
            (std::vector<std::string>{" Hello,", "", " world.", ""}));
  std::vector<WordTiming> t = timings({" Hello", ",", " world", "."});
  merge_punctuations(t, kPrependPunctuations, kAppendPunctuations);
  EXPECT_EQ(t[0].tokens, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(t[1].tokens.empty());
}

TEST(WordTimestampsMergePunctuations, OpeningMarksJoinTheNextWord) {
  EXPECT_EQ(merged({" \"", "Hi", "\""}), (std::vector<std::string>{"", " \"Hi\"", ""}));
  // Chained: both go to the first word after them.
  EXPECT_EQ(merged({" (", " [", " x"}), (std::vector<std::string>{"", "", " ( [ x"}));
}

TEST(WordTimestampsMergePunctuations, SpacesDecide) {
  // A hyphen without its space is not an opening mark; a word ending in a
  // space takes no closing mark.
  EXPECT_EQ(merged({" a", "-", "b"}), (std::vector<std::string>{" a", "-", "b"}));
  EXPECT_EQ(merged({"Hi ", "."}), (std::vector<std::string>{"Hi ", "."}));
  // A run of marks counts when it is a substring of the list, as Python's `in`.
  EXPECT_EQ(merged({" end", "”)"}), (std::vector<std::string>{" end”)", ""}));
}

TEST(WordTimestampsSplit, EnglishSplitsAtSpacesAndPunctuation) {
  const auto path = shared_audio("multilingual.tiktoken");
  if (path.empty()) GTEST_SKIP() << "shared/audio/multilingual.tiktoken missing";
  const auto tok = hearth::text::WhisperTokenizer::load_tiktoken(path, 51865);
  std::vector<int32_t> ids = tok.encode(" And so, my fellow supercalifragilistic Americans.");
  ids.push_back(tok.eot());
  const auto [words, word_tokens] = split_to_word_tokens(tok, "en", ids);
  EXPECT_EQ(words,
            (std::vector<std::string>{" And", " so", ",", " my", " fellow", " supercalifragilistic",
                                      " Americans", ".", "<|endoftext|>"}));
  ASSERT_EQ(word_tokens.size(), words.size());
  EXPECT_GT(word_tokens[5].size(), 1u);  // one word of several tokens
  std::vector<int32_t> joined;
  for (const auto& w : word_tokens) joined.insert(joined.end(), w.begin(), w.end());
  EXPECT_EQ(joined, ids);
}

TEST(WordTimestampsSplit, ChineseSplitsAtWholeCharacters) {
  const auto path = shared_audio("multilingual.tiktoken");
  if (path.empty()) GTEST_SKIP() << "shared/audio/multilingual.tiktoken missing";
  const auto tok = hearth::text::WhisperTokenizer::load_tiktoken(path, 51865);
  const std::string text = "我们龘今天去北京";
  const std::vector<int32_t> ids = tok.encode(text);
  const auto [words, word_tokens] = split_to_word_tokens(tok, "zh", ids);
  std::string joined;
  bool several = false;
  for (size_t i = 0; i < words.size(); ++i) {
    EXPECT_EQ(words[i].find("\xEF\xBF\xBD"), std::string::npos) << words[i];
    EXPECT_EQ(words[i], tok.decode(word_tokens[i]));
    several |= word_tokens[i].size() > 1;
    joined += words[i];
  }
  EXPECT_EQ(joined, text);
  EXPECT_TRUE(several);  // a rare character spans tokens and stays whole
  // Without spaces in the text, the space rule would make it one word.
  EXPECT_EQ(split_to_word_tokens(tok, "en", ids).first.size(), 1u);
}
