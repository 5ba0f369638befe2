#include "server/audio_budget.h"

#include <gtest/gtest.h>

#include "audio/decode.h"

using namespace hearth::server;

namespace {

constexpr size_t kSecond = hearth::audio::kSampleRate;

int refused_status(AudioBudget& budget, AudioBudget::Charge& charge, size_t samples) {
  try {
    budget.add(charge, samples, "file");
  } catch (const ApiError& e) {
    return e.status;
  }
  return 0;
}

}  // namespace

TEST(AudioBudget, ChargesAreGivenBackWhenTheyGo) {
  AudioBudget budget(10);
  {
    AudioBudget::Charge a;
    budget.add(a, 4 * kSecond, "file");
    budget.add(a, 2 * kSecond, "file");  // a session's next part
    EXPECT_EQ(a.samples(), 6 * kSecond);
    EXPECT_DOUBLE_EQ(budget.held_seconds(), 6);
    EXPECT_DOUBLE_EQ(budget.room_seconds(), 4);
    AudioBudget::Charge moved = std::move(a);
    EXPECT_EQ(a.samples(), 0u);
    EXPECT_DOUBLE_EQ(budget.held_seconds(), 6);  // moving is not giving back
    moved.reset();
    EXPECT_DOUBLE_EQ(budget.held_seconds(), 0);
    budget.add(moved, kSecond, "file");  // a reset charge takes samples again
  }
  EXPECT_DOUBLE_EQ(budget.held_seconds(), 0);
}

TEST(AudioBudget, FullNowIs429NeverFitsIs413) {
  AudioBudget budget(10);
  AudioBudget::Charge a, b;
  budget.add(a, 7 * kSecond, "file");
  EXPECT_EQ(refused_status(budget, b, 4 * kSecond), 429);  // fits once a is done
  EXPECT_EQ(b.samples(), 0u);
  EXPECT_EQ(refused_status(budget, b, 11 * kSecond), 413);  // never fits
  EXPECT_EQ(refused_status(budget, a, 4 * kSecond), 413);   // a would outgrow the budget
  EXPECT_DOUBLE_EQ(budget.held_seconds(), 7);               // nothing taken by the refusals
  try {
    budget.add(b, 4 * kSecond, "audio");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code, "audio_memory_full");
    EXPECT_NE(std::string(e.what()).find("--max-audio-held"), std::string::npos);
  }
  EXPECT_EQ(budget.refusal(b, 11 * kSecond, "audio").param, "audio");
  a.reset();
  budget.add(b, 10 * kSecond, "file");  // the whole budget, once free
}

TEST(AudioBudget, AChargeMayOutliveItsBudget) {
  AudioBudget::Charge a;
  {
    AudioBudget budget(1);
    budget.add(a, kSecond, "file");
  }
  a.reset();  // the state is shared: no use after free (ASan)
}
