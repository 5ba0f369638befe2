#include "core/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/aligned_bytes.h"
#include "core/elapsed.h"
#include "core/simd.h"

namespace hearth {

double measure_read_bandwidth(ThreadPool& pool, size_t bytes, int repeats) {
  // The sums land in `sink` so the reads cannot be optimized away.
  const int64_t n = int64_t(bytes / sizeof(float));
  // The same kind of storage as the packed weights (huge pages): on 4 KB
  // pages a VM's page walks, not its memory, can set the rate.
  AlignedBytes storage = aligned_bytes(size_t(n) * sizeof(float));  // zeroed: every page touched
  const float* buffer = reinterpret_cast<const float*>(storage.get());
  std::vector<float> sink(static_cast<size_t>(pool.size()));
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    pool.run(pool.size(), [&](int task, int) {
      int64_t per = n / pool.size(), b = task * per, e = task + 1 == pool.size() ? n : b + per;
      sink[task] = simd::sum(buffer + b, e - b);
    });
    double s = seconds_since(t0);
    best = std::max(best, double(bytes) / s);
  }
  return best;
}

}  // namespace hearth
