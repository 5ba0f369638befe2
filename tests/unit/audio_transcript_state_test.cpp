// TranscriptState::mark and rewind: a streaming session marks the state
// before every window and goes back to a mark when a window fails or must be
// redone, so rewinding has to give back exactly the state that was marked.
#include <gtest/gtest.h>

#include "audio/transcriber.h"

namespace hearth::audio {
namespace {

// What one window does to the state (transcribe_window): tokens and segments
// appended, the scalars moved on, the generator advanced.
void run_window(TranscriptState& s, int first_token) {
  s.seek += 3000;
  for (int i = 0; i < 5; ++i) s.all_tokens.push_back(first_token + i);
  Segment seg;
  seg.id = int(s.transcript.segments.size());
  seg.text = "window " + std::to_string(first_token);
  s.transcript.segments.push_back(seg);
  s.prompt_reset_since = s.all_tokens.size();
  s.rng.discard(7);
  s.first_window = false;
  s.last_speech_timestamp += 29.5;
  s.transcript.language = "en";
  ++s.transcript.timings.windows;
  s.transcript.timings.decoder_ms += 12.5;
}

void expect_same(const TranscriptState& a, const TranscriptState& b) {
  EXPECT_EQ(a.seek, b.seek);
  EXPECT_EQ(a.all_tokens, b.all_tokens);
  EXPECT_EQ(a.initial_prompt_tokens, b.initial_prompt_tokens);
  EXPECT_EQ(a.prompt_reset_since, b.prompt_reset_since);
  EXPECT_TRUE(a.rng == b.rng);
  EXPECT_EQ(a.first_window, b.first_window);
  EXPECT_EQ(a.last_speech_timestamp, b.last_speech_timestamp);
  EXPECT_EQ(a.transcript.language, b.transcript.language);
  EXPECT_EQ(a.transcript.timings.windows, b.transcript.timings.windows);
  EXPECT_EQ(a.transcript.timings.decoder_ms, b.transcript.timings.decoder_ms);
  ASSERT_EQ(a.transcript.segments.size(), b.transcript.segments.size());
  for (size_t i = 0; i < a.transcript.segments.size(); ++i)
    EXPECT_EQ(a.transcript.segments[i].text, b.transcript.segments[i].text);
}

TEST(TranscriptState, RewindGivesBackTheMarkedState) {
  TranscriptState s;
  s.all_tokens = {1, 2, 3};  // a prompt
  s.initial_prompt_tokens = 3;
  s.rng.seed(42);
  run_window(s, 100);
  const TranscriptState at_mark = s;
  const TranscriptState::Mark mark = s.mark();
  run_window(s, 200);
  run_window(s, 300);
  s.rewind(mark);
  expect_same(s, at_mark);
  // And the same windows run again give the same state as the first time.
  TranscriptState again = at_mark;
  run_window(again, 200);
  run_window(s, 200);
  expect_same(s, again);
}

TEST(TranscriptState, RewindToTheStartUndoesLanguageDetection) {
  TranscriptState s;
  const TranscriptState start = s;
  const TranscriptState::Mark mark = s.mark();
  run_window(s, 10);
  s.rewind(mark);
  expect_same(s, start);
  EXPECT_TRUE(s.transcript.language.empty());
}

}  // namespace
}  // namespace hearth::audio
