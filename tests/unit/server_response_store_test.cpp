#include "server/response_store.h"

#include <gtest/gtest.h>

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
  const int64_t one = int64_t(1 + response("x").response.dump().size() + response("x").conversation.dump().size());
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

}  // namespace
}  // namespace hearth::server
