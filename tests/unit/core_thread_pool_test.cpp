#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace hearth {
namespace {

TEST(ThreadPool, RunsEveryTaskOnce) {
  ThreadPool pool(3);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> hits(97);
    pool.run(97, [&](int task, int) { hits[task]++; });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  // Many tiny jobs back to back: a worker finishing one job late must never
  // claim, skip or double-run a task of the next.
  std::vector<int> out(8);
  for (int round = 0; round < 20000; ++round) {
    const int n = 2 + round % 7;
    pool.run(n, [&](int task, int) { out[task] = round; });
    for (int t = 0; t < n; ++t) ASSERT_EQ(out[t], round) << "task " << t << " of round " << round;
  }
  std::atomic<int64_t> sum{0};
  pool.parallel_for(1000, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

// parallel_for's chunks cover [0, n) once, each at least `grain` long but
// the last, the first ones longest.
TEST(ThreadPool, ParallelForChunksCoverTheRangeOnce) {
  ThreadPool pool(2);
  for (auto [n, grain] : {std::pair<int64_t, int64_t>{9496, 1}, {1000, 7}, {64, 1}, {130, 64}, {5, 8}}) {
    std::mutex m;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
      std::lock_guard lock(m);
      chunks.push_back({b, e});
    });
    std::sort(chunks.begin(), chunks.end());
    int64_t at = 0;
    for (size_t c = 0; c < chunks.size(); ++c) {
      ASSERT_EQ(chunks[c].first, at) << n;
      ASSERT_GT(chunks[c].second, chunks[c].first) << n;
      if (c + 1 < chunks.size()) {
        EXPECT_GE(chunks[c].second - chunks[c].first, grain) << n;
        EXPECT_GE(chunks[c].second - chunks[c].first, chunks[c + 1].second - chunks[c + 1].first) << n;
      }
      at = chunks[c].second;
    }
    EXPECT_EQ(at, n);
    if (n >= 1000) EXPECT_GT(chunks.size(), 8u) << "the last chunks are short";
  }
}

// A task's exception reaches the caller of run(), from the calling thread's
// own tasks and from a worker's (where escaping would end the process), and
// the pool goes on to run the next job whole.
TEST(ThreadPool, ATaskThatThrowsReachesTheCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.run(50, [](int task, int) {
    if (task == 17) throw std::runtime_error("task 17");
  }), std::runtime_error);
  // Only the workers' tasks throw; the calling thread's wait (up to 10 s)
  // until a worker has claimed one, however late the workers wake.
  std::atomic<int> on_workers{0};
  try {
    pool.run(24, [&](int, int thread) {
      if (thread != 0) {
        ++on_workers;
        throw std::invalid_argument("from a worker");
      }
      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (on_workers == 0 && std::chrono::steady_clock::now() < limit)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    FAIL() << "no exception reached the caller";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "from a worker");
  }
  EXPECT_GE(on_workers.load(), 1);
  EXPECT_THROW(pool.parallel_for(1000, 1, [](int64_t b, int64_t) {
    if (b > 500) throw std::out_of_range("late chunk");
  }), std::out_of_range);
  std::vector<std::atomic<int>> hits(64);
  pool.run(64, [&](int task, int) { hits[task]++; });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

}  // namespace
}  // namespace hearth
