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
  a.reset();
  budget.add(b, 10 * kSecond, "file");  // the whole budget, once free
}

TEST(AudioBudget, ADecodeGrowsItsChargeAndAPartJoinsItsSession) {
  AudioBudget budget(10);
  AudioBudget::Charge session, part;
  budget.add(session, 3 * kSecond, "audio");
  budget.grow_to(part, kSecond, "audio");  // what a decode reports after each block
  budget.grow_to(part, 2 * kSecond, "audio");
  budget.grow_to(part, kSecond, "audio");  // never less
  EXPECT_EQ(part.samples(), 2 * kSecond);
  EXPECT_EQ(refused_status(budget, part, 6 * kSecond), 429);  // 3 + 2 + 6 > 10
  try {  // with the session's 3, the part would outgrow the budget: never fits
    budget.grow_to(part, 8 * kSecond, "audio", session.samples());
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 413);
  }
  session.absorb(std::move(part));
  EXPECT_EQ(session.samples(), 5 * kSecond);
  EXPECT_EQ(part.samples(), 0u);
  EXPECT_DOUBLE_EQ(budget.held_seconds(), 5);  // absorbing takes nothing more
  session.reset();
  part.reset();
  EXPECT_DOUBLE_EQ(budget.held_seconds(), 0);
}

TEST(AudioBudget, AChargeMayOutliveItsBudget) {
  AudioBudget::Charge a;
  {
    AudioBudget budget(1);
    budget.add(a, kSecond, "file");
  }
  a.reset();  // the state is shared: no use after free (ASan)
}
