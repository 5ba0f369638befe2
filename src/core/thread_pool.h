// A persistent pool of worker threads for the kernels. The calling thread
// takes part in every job, so a pool of size N uses N-1 extra threads.
// Workers spin briefly between jobs: a decode step issues hundreds of small
// jobs, and waking sleeping threads for each would cost more than the work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hearth {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(task, thread) for task in [0, n_tasks), spread over the threads;
  // returns when all are done. Not reentrant: call from one thread at a time.
  // A task that throws ends the job: tasks not yet started are skipped, and
  // the first exception is rethrown here, on the calling thread.
  void run(int n_tasks, const std::function<void(int task, int thread)>& fn);

  // Splits [0, n) into chunks of at least `grain`, long ones first and
  // shorter ones as the work runs out, and calls fn(begin, end) on each.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // Physical cores of this machine (HEARTH_THREADS overrides).
  static int default_threads();

 private:
  void worker(int thread);
  void work_on_job(uint64_t id, int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  // The current job. `next_` packs the job's id (high 32 bits) with the next
  // task index; tasks are claimed by compare-and-swap only while the id
  // matches, so a worker still finishing an old job can never claim or skip
  // a task of the next one.
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<int> job_tasks_{0};
  std::atomic<uint64_t> next_{0};
  std::atomic<int> tasks_done_{0};
  std::atomic<bool> failed_{false};  // a task of the current job threw
  std::exception_ptr error_;          // its exception; set once per job, under mutex_
  std::atomic<uint64_t> generation_{0};  // id of the latest job
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace hearth
