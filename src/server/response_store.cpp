#include "server/response_store.h"

#include "text/json_shape.h"

namespace hearth::server {

namespace {

// Arrays and objects in j. Each holds a node and a vector in memory, where
// its text may be 2 bytes: a response echoing `[[],[],...]` holds 25 times
// its dump.
int64_t containers(const nlohmann::ordered_json& j) {
  if (!j.is_structured()) return 0;
  int64_t n = 1;
  for (const auto& v : j) n += containers(v);
  return n;
}

int64_t held_bytes(const nlohmann::ordered_json& j) {
  return int64_t(j.dump().size()) + int64_t(text::kJsonContainerBytes) * containers(j);
}

}  // namespace

ResponseStore::ResponseStore(int64_t max_bytes, std::chrono::milliseconds ttl, std::function<Clock::time_point()> now)
    : max_bytes_(max_bytes), ttl_(ttl), now_(std::move(now)) {}

void ResponseStore::drop(std::list<Entry>::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->id);
  lru_.erase(it);
}

// Every entry lives for the same time, so the expired ones are those
// written longest ago; scanning all is fine at the sizes a cap allows.
void ResponseStore::expire(Clock::time_point now) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->expires <= now) drop(it);
    it = next;
  }
}

void ResponseStore::put(const std::string& id, StoredResponse r) {
  const int64_t bytes = int64_t(id.size()) + held_bytes(r.response) + held_bytes(r.conversation);
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(id); it != index_.end()) drop(it->second);
  if (bytes > max_bytes_) return;
  const auto now = now_();
  expire(now);
  while (bytes_ + bytes > max_bytes_ && !lru_.empty()) drop(std::prev(lru_.end()));
  lru_.push_front({id, std::move(r), bytes, now + ttl_});
  index_[id] = lru_.begin();
  bytes_ += bytes;
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  expire(now_());
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->value;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  drop(it->second);
  return true;
}

ResponseStoreStats ResponseStore::stats() {
  std::lock_guard lock(mutex_);
  expire(now_());
  return {int64_t(lru_.size()), bytes_, max_bytes_, int64_t(ttl_.count())};
}

}  // namespace hearth::server
