// Measures this machine's memory read bandwidth the way decode uses memory:
// all threads streaming through a buffer far larger than the caches.
#pragma once

#include "core/thread_pool.h"

namespace hearth {

// Bytes per second, best of `repeats` passes over a `bytes`-sized buffer.
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t(1) << 30, int repeats = 3);

}  // namespace hearth
