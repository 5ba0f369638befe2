#include "server/metrics.h"

#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace hearth::server {

ProcessMemory process_memory() {
  ProcessMemory m;
  const long page = sysconf(_SC_PAGESIZE);
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long size = 0, resident = 0;
    if (std::fscanf(f, "%lu %lu", &size, &resident) == 2) {
      m.virtual_bytes = size_t(size) * size_t(page);
      m.rss_bytes = size_t(resident) * size_t(page);
    }
    std::fclose(f);
  }
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      unsigned long kb = 0;
      if (std::strncmp(line, "VmHWM:", 6) == 0 && std::sscanf(line + 6, "%lu", &kb) == 1) m.peak_rss_bytes = size_t(kb) * 1024;
    }
    std::fclose(f);
  }
  return m;
}

void Histogram::observe(double seconds) {
  for (size_t i = 0; i < kBounds.size(); ++i)
    if (seconds <= kBounds[i]) counts_[i].fetch_add(1);
  sum_us_.fetch_add(int64_t(seconds * 1e6));
  count_.fetch_add(1);
}

std::array<int64_t, Histogram::kBounds.size()> Histogram::buckets() const {
  std::array<int64_t, kBounds.size()> out{};
  for (size_t i = 0; i < kBounds.size(); ++i) out[i] = counts_[i].load();
  return out;
}

double Histogram::sum() const { return double(sum_us_.load()) / 1e6; }

void ServerMetrics::count_http(const std::string& route, int status) {
  std::lock_guard lock(mutex_);
  ++http_[{route, status}];
}

std::map<std::pair<std::string, int>, int64_t> ServerMetrics::http_counts() const {
  std::lock_guard lock(mutex_);
  return http_;
}

int64_t ServerMetrics::http_total() const {
  std::lock_guard lock(mutex_);
  int64_t n = 0;
  for (const auto& [k, v] : http_) n += v;
  return n;
}

}  // namespace hearth::server
