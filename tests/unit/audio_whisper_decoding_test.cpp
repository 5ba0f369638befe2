// openai-whisper's decoding rules on crafted logits, and the transcript
// formats. Expected values are worked out by hand from whisper/decoding.py
// (ApplyTimestampRules), whisper/utils.py (format_timestamp, the SRT and VTT
// writers) and zlib (compression ratio).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "audio/subtitles.h"
#include "audio/whisper_decoding.h"

namespace hearth::audio {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
// A toy vocabulary: text 0..9, eot 10, 11 another special, no_timestamps 12,
// timestamps 13..22 (<|0.00|> .. <|0.18|>).
constexpr TimestampTokens kIds{10, 12, 13};
constexpr int kVocab = 23;

// Text at logit 0, timestamps at -5: less likely together than one text token.
std::vector<float> text_favoured() {
  std::vector<float> l(kVocab, 0.0f);
  for (int id = kIds.timestamp_begin; id < kVocab; ++id) l[size_t(id)] = -5.0f;
  return l;
}

std::vector<float> apply(std::vector<int32_t> sampled, int max_initial = 5,
                         std::vector<float> logits = text_favoured()) {
  apply_timestamp_rules(kIds, sampled, logits, max_initial);
  return logits;
}

bool allowed(const std::vector<float>& l, int id) { return l[size_t(id)] > -kInf; }

TEST(TimestampRules, FirstTokenIsATimestampWithinTheInitialLimit) {
  const auto l = apply({}, 3);
  for (int id = 0; id < 13; ++id) EXPECT_FALSE(allowed(l, id)) << id;
  for (int id = 13; id <= 16; ++id) EXPECT_TRUE(allowed(l, id)) << id;
  for (int id = 17; id < kVocab; ++id) EXPECT_FALSE(allowed(l, id)) << id;
}

TEST(TimestampRules, AfterAnOpeningTimestampComesText) {
  // [<|0.04|>]: the penultimate counts as a timestamp when there is none, so
  // the pair is "closed" and text must follow; timestamps all forbidden.
  const auto l = apply({15});
  for (int id = 0; id < 10; ++id) EXPECT_TRUE(allowed(l, id)) << id;
  EXPECT_TRUE(allowed(l, 10));
  EXPECT_FALSE(allowed(l, 12));
  for (int id = 13; id < kVocab; ++id) EXPECT_FALSE(allowed(l, id)) << id;
}

TEST(TimestampRules, AfterTextTimestampsOnlyMoveForward) {
  // [<|0.04|>, text]: no timestamp below <|0.06|> (a segment has a length).
  const auto l = apply({15, 4});
  for (int id = 0; id <= 10; ++id) EXPECT_TRUE(allowed(l, id)) << id;
  for (int id = 13; id <= 15; ++id) EXPECT_FALSE(allowed(l, id)) << id;
  for (int id = 16; id < kVocab; ++id) EXPECT_TRUE(allowed(l, id)) << id;
}

TEST(TimestampRules, AnOpenPairClosesOrEnds) {
  // [<|0.04|>, text, <|0.10|>]: the pair is open, so the next token is its
  // closing timestamp (<|0.10|> or later) or the end, never text.
  const auto l = apply({15, 4, 18});
  for (int id = 0; id < 10; ++id) EXPECT_FALSE(allowed(l, id)) << id;
  EXPECT_TRUE(allowed(l, 10));
  for (int id = 13; id < 18; ++id) EXPECT_FALSE(allowed(l, id)) << id;
  for (int id = 18; id < kVocab; ++id) EXPECT_TRUE(allowed(l, id)) << id;
}

TEST(TimestampRules, AClosedPairIsFollowedByText) {
  const auto l = apply({15, 4, 18, 18});
  for (int id = 0; id <= 10; ++id) EXPECT_TRUE(allowed(l, id)) << id;
  for (int id = 13; id < kVocab; ++id) EXPECT_FALSE(allowed(l, id)) << id;
}

TEST(TimestampRules, TimestampsWinWhenTheirTotalBeatsTheBestText) {
  // After [<|0.00|>, text] the timestamps from <|0.02|> on are open. Nine of
  // them at logit 0 sum to log 9 = 2.197: above a best text token of 2.1,
  // below one of 2.3.
  std::vector<float> logits(kVocab, 0.0f);
  logits[3] = 2.1f;
  auto l = apply({13, 4}, 5, logits);
  for (int id = 0; id < 10; ++id) EXPECT_FALSE(allowed(l, id)) << id;
  EXPECT_TRUE(allowed(l, 14));
  logits[3] = 2.3f;
  l = apply({13, 4}, 5, logits);
  EXPECT_TRUE(allowed(l, 3));
  EXPECT_TRUE(allowed(l, 14));
}

TEST(CompressionRatio, RepetitionCompresses) {
  EXPECT_EQ(compression_ratio(""), 0.0f);
  std::string repeated;
  for (int i = 0; i < 50; ++i) repeated += "the same words again ";
  EXPECT_GT(compression_ratio(repeated), 2.4f);  // the fallback threshold
  EXPECT_LT(compression_ratio("And so my fellow Americans, ask not what your country can do"),
            1.4f);
}

TEST(Subtitles, Timestamps) {
  EXPECT_EQ(format_timestamp(0, true, ','), "00:00:00,000");
  EXPECT_EQ(format_timestamp(3661.5, true, ','), "01:01:01,500");
  EXPECT_EQ(format_timestamp(5.25, false, '.'), "00:05.250");
  EXPECT_EQ(format_timestamp(3600.001, false, '.'), "01:00:00.001");
}

Transcript two_segments() {
  Transcript t;
  t.text = " Hello there. General --> Kenobi";
  t.language = "en";
  t.duration = 4.5;
  Segment a, b, empty;
  a.start = 0, a.end = 1.5, a.text = " Hello there.";
  empty.id = 1, empty.start = 1.5, empty.end = 1.5;
  b.id = 2, b.start = 1.5, b.end = 4.25, b.text = " General --> Kenobi";
  t.segments = {a, empty, b};
  return t;
}

TEST(Subtitles, SrtAndVtt) {
  const Transcript t = two_segments();
  EXPECT_EQ(format_transcript(t, "srt", "transcribe").body,
            "1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n"
            "2\n00:00:01,500 --> 00:00:04,250\nGeneral -> Kenobi\n\n");
  EXPECT_EQ(format_transcript(t, "vtt", "transcribe").body,
            "WEBVTT\n\n00:00.000 --> 00:01.500\nHello there.\n\n"
            "00:01.500 --> 00:04.250\nGeneral -> Kenobi\n\n");
  EXPECT_EQ(format_transcript(t, "text", "transcribe").body, t.text + "\n");
  EXPECT_THROW(format_transcript(t, "xml", "transcribe"), std::invalid_argument);
}

// A blank line would end the cue early: line breaks in a segment's text
// (Whisper can write them) stay single.
TEST(Subtitles, ACueHasNoBlankLine) {
  Transcript t = two_segments();
  t.segments[0].text = " Hello.\n\n\nThere.\r\nYes.";
  EXPECT_EQ(format_transcript(t, "srt", "transcribe").body.substr(0, 52),
            "1\n00:00:00,000 --> 00:00:01,500\nHello.\nThere.\nYes.\n\n");
  EXPECT_NE(format_transcript(t, "vtt", "transcribe").body.find("\nHello.\nThere.\nYes.\n\n00:01.500"), std::string::npos);
}

}  // namespace
}  // namespace hearth::audio
