// The Responses API's stored responses: what GET /v1/responses/{id} returns
// and what previous_response_id continues. Kept in memory for a time to
// live and within a byte cap (least recently used first out), as the
// conversation so far in the chat-template message shape.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace hearth::server {

struct StoredResponse {
  nlohmann::ordered_json response;      // the response object as answered
  nlohmann::ordered_json conversation;  // input and output messages, instructions excluded
};

struct ResponseStoreStats {
  int64_t entries = 0, bytes = 0, max_bytes = 0, ttl_ms = 0;
};

class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;
  ResponseStore(int64_t max_bytes, std::chrono::milliseconds ttl, std::function<Clock::time_point()> now = Clock::now);

  // A response larger than the whole cap is not kept.
  void put(const std::string& id, StoredResponse r);
  std::optional<StoredResponse> get(const std::string& id);  // nullopt when unknown or expired
  bool erase(const std::string& id);
  ResponseStoreStats stats();

 private:
  struct Entry {
    std::string id;
    StoredResponse value;
    int64_t bytes;
    Clock::time_point expires;
  };
  void drop(std::list<Entry>::iterator it);
  void expire(Clock::time_point now);

  const int64_t max_bytes_;
  const std::chrono::milliseconds ttl_;
  std::function<Clock::time_point()> now_;
  std::mutex mutex_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  int64_t bytes_ = 0;
};

}  // namespace hearth::server
