#include "core/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define HEARTH_PAUSE() _mm_pause()
#else
#define HEARTH_PAUSE() std::this_thread::yield()
#endif

namespace hearth {

namespace {
// How long an idle worker spins before it sleeps: about 50 µs, longer than
// the gap between two kernels of one decode step.
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::work_on_job(uint64_t id, int thread) {
  for (;;) {
    uint64_t v = next_.load();
    do {
      if ((v >> 32) != (id & 0xffffffffu) || int(v & 0xffffffffu) >= job_tasks_.load()) return;
    } while (!next_.compare_exchange_weak(v, v + 1));
    // A worker's exception cannot leave its thread (that would terminate the
    // process): it is kept for run() to rethrow, and the rest of the job is skipped.
    if (!failed_.load(std::memory_order_relaxed)) {
      try {
        (*job_)(int(v & 0xffffffffu), thread);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!failed_.exchange(true)) error_ = std::current_exception();
      }
    }
    tasks_done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker(int thread) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen) {
      if (++spins < kSpinIterations) {
        HEARTH_PAUSE();
        continue;
      }
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    work_on_job(seen, thread);
  }
}

void ThreadPool::run(int n_tasks, const std::function<void(int, int)>& fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  // Every task of the previous job has finished, but a worker may still be
  // trying to claim one more from it. Moving `next_` to the new id first
  // makes any such claim fail (its compare-and-swap sees a changed value)
  // before the job's fields change; sequentially consistent order keeps a
  // worker from seeing the new task count with the old id.
  const uint64_t id = generation_.load() + 1;
  next_.store((id & 0xffffffffu) << 32);
  job_ = &fn;
  job_tasks_.store(n_tasks);
  tasks_done_.store(0);
  failed_.store(false);
  error_ = nullptr;
  {
    std::lock_guard lock(mutex_);  // pairs with the sleepers' predicate check
    generation_.store(id, std::memory_order_release);
  }
  wake_.notify_all();
  work_on_job(id, 0);
  while (tasks_done_.load(std::memory_order_acquire) < n_tasks) HEARTH_PAUSE();
  if (failed_.load()) std::rethrow_exception(error_);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  // Guided chunks: each takes a quarter of the remaining work per thread
  // (at least `grain`), so the first are long (few claims, long sequential
  // weight streams) and the last short, and no thread idles long while
  // another finishes a long last chunk. Bounds are fixed by n, grain and the
  // thread count alone; claims go in order, as in run(). (The bounds are the
  // calling thread's: like run(), parallel_for is not reentrant.)
  thread_local std::vector<int64_t> bounds;
  bounds.assign(1, 0);
  for (int64_t at = 0; at < n;) {
    at = std::min(n, at + std::max(grain, (n - at) / (4 * int64_t(n_threads_))));
    bounds.push_back(at);
  }
  const std::vector<int64_t>& b = bounds;  // the workers read the caller's vector
  run(int(b.size()) - 1, [&](int c, int) { fn(b[size_t(c)], b[size_t(c) + 1]); });
}

int ThreadPool::default_threads() {
  if (const char* env = std::getenv("HEARTH_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  // Count distinct (physical id, core id) pairs: SMT siblings share a core's
  // FMA units and memory port, so they do not speed up these kernels.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "physical id") phys = value;
    if (key == "core id") cores.insert({phys, value});
  }
  int hw = int(std::thread::hardware_concurrency());
  int n = cores.empty() ? hw : int(cores.size());
  return std::max(1, n);
}

}  // namespace hearth
