#include "core/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/simd.h"

namespace hearth {

double measure_read_bandwidth(ThreadPool& pool, size_t bytes, int repeats) {
  // The sums land in `sink` so the reads cannot be optimized away.
  const int64_t n = int64_t(bytes / sizeof(float));
  std::vector<float> buffer(static_cast<size_t>(n));
  // Touch every page first (in parallel, so the pages spread as they will be read).
  pool.parallel_for(n, 1 << 16,
                    [&](int64_t b, int64_t e) { std::fill(&buffer[b], &buffer[e], 1.0f); });
  std::vector<float> sink(static_cast<size_t>(pool.size()));
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    pool.run(pool.size(), [&](int task, int) {
      int64_t per = n / pool.size(), b = task * per, e = task + 1 == pool.size() ? n : b + per;
      sink[task] = simd::sum(&buffer[b], e - b);
    });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(bytes) / s);
  }
  return best;
}

}  // namespace hearth
