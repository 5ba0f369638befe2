// Counters the server keeps beside the engine's own (EngineStats), and the
// process's memory as /proc reports it. /stats shows them as JSON, /metrics
// in Prometheus' text format.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace hearth::server {

struct ProcessMemory {
  size_t rss_bytes = 0, peak_rss_bytes = 0, virtual_bytes = 0;
};
ProcessMemory process_memory();

// A cumulative histogram with fixed bucket bounds, in seconds.
class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    10,  30};
  void observe(double seconds);
  // (upper bound, cumulative count) per bucket, then the sum and the count.
  std::array<int64_t, kBounds.size()> buckets() const;
  double sum() const;
  int64_t count() const { return count_.load(); }

 private:
  std::array<std::atomic<int64_t>, kBounds.size()> counts_{};
  std::atomic<int64_t> sum_us_{0}, count_{0};
};

struct ServerMetrics {
  std::atomic<int64_t> in_flight{0};  // generation requests being answered
  std::atomic<int64_t> chat_requests{0}, completion_requests{0}, messages_requests{0}, responses_requests{0};
  std::atomic<int64_t> embedding_requests{0}, embedding_inputs{0};
  std::atomic<int64_t> streamed_requests{0};
  std::atomic<int64_t> completed{0}, client_cancelled{0}, failed{0}, rejected_queue_full{0};
  std::atomic<int64_t> prompt_tokens{0}, completion_tokens{0};
  std::atomic<int64_t> decode_us{0}, decode_tokens{0};  // for the average decode speed
  Histogram time_to_first_token, request_duration;

  void count_http(const std::string& route, int status);
  std::map<std::pair<std::string, int>, int64_t> http_counts() const;
  int64_t http_total() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> http_;
};

}  // namespace hearth::server
