#include "server/response_store.h"

#include <gtest/gtest.h>

#include <set>

#include "server/random_id.h"

namespace hearth::server {
namespace {

using namespace std::chrono_literals;

struct FakeClock {
  ResponseStore::Clock::time_point t{};
  std::function<ResponseStore::Clock::time_point()> fn() {
    return [this] { return t; };
  }
};

StoredResponse response(const std::string& text) {
  return {{{"id", "r"}, {"text", text}}, nlohmann::ordered_json::array({{{"role", "user"}, {"content", text}}})};
}

TEST(ResponseStore, KeepsUntilTheTimeToLive) {
  FakeClock clock;
  ResponseStore store(1 << 20, 1000ms, clock.fn());
  store.put("a", response("hello"));
  clock.t += 999ms;
  ASSERT_TRUE(store.get("a"));
  EXPECT_EQ(store.get("a")->response["text"], "hello");
  clock.t += 1ms;
  EXPECT_FALSE(store.get("a"));
  EXPECT_EQ(store.stats().entries, 0);
  EXPECT_EQ(store.stats().bytes, 0);
}

TEST(ResponseStore, EvictsLeastRecentlyUsedPastTheCap) {
  FakeClock clock;
  const int64_t one = [&] {
    ResponseStore sizing(1 << 20, 1h, clock.fn());
    sizing.put("a", response("x"));
    return sizing.stats().bytes;
  }();
  ResponseStore store(3 * one, 1h, clock.fn());
  store.put("a", response("x"));
  store.put("b", response("x"));
  store.put("c", response("x"));
  EXPECT_EQ(store.stats().bytes, 3 * one);
  ASSERT_TRUE(store.get("a"));  // a is now the most recent
  store.put("d", response("x"));
  EXPECT_FALSE(store.get("b"));
  EXPECT_TRUE(store.get("a"));
  EXPECT_TRUE(store.get("c"));
  EXPECT_TRUE(store.get("d"));
  EXPECT_EQ(store.stats().entries, 3);
}

TEST(ResponseStore, EraseAndReplace) {
  FakeClock clock;
  ResponseStore store(1 << 20, 1h, clock.fn());
  store.put("a", response("one"));
  store.put("a", response("two"));
  EXPECT_EQ(store.stats().entries, 1);
  EXPECT_EQ(store.get("a")->response["text"], "two");
  EXPECT_TRUE(store.erase("a"));
  EXPECT_FALSE(store.erase("a"));
  EXPECT_FALSE(store.get("a"));
}

TEST(ResponseStore, ATooLargeResponseIsNotKept) {
  FakeClock clock;
  ResponseStore store(16, 1h, clock.fn());
  store.put("a", response("far more than sixteen bytes"));
  EXPECT_FALSE(store.get("a"));
  EXPECT_EQ(store.stats().bytes, 0);
}

// What an entry counts is what it holds in memory, not its text: 10,000
// empty arrays are 30 KB of JSON and near a megabyte of nodes and vectors.
TEST(ResponseStore, CountsEachArrayAndObjectItHolds) {
  FakeClock clock;
  ResponseStore store(int64_t(1) << 30, 1h, clock.fn());
  StoredResponse r = response("x");
  r.response["user"] = nlohmann::ordered_json::array();
  for (int i = 0; i < 10000; ++i) r.response["user"].push_back(nlohmann::ordered_json::array());
  const int64_t text = int64_t(r.response.dump().size() + r.conversation.dump().size());
  store.put("a", std::move(r));
  EXPECT_GE(store.stats().bytes, text + 80 * 10000);
}

// A stored response's id is all that grants access to it: 128 random bits.
TEST(ResponseIds, AreOneHundredTwentyEightRandomBits) {
  std::set<std::string> seen;
  std::set<char> digits;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = random_id("resp_");
    ASSERT_EQ(id.size(), 5u + 32u) << id;
    EXPECT_EQ(id.rfind("resp_", 0), 0u);
    for (char c : id.substr(5)) {
      EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(static_cast<unsigned char>(c))) << id;
      digits.insert(c);
    }
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(digits.size(), 16u);
}

}  // namespace
}  // namespace hearth::server
