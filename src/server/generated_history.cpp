#include "server/generated_history.h"

namespace hearth::server {

void GeneratedHistory::remember(const std::string& text, std::vector<int32_t> ids) {
  if (text.empty() || ids.empty()) return;
  std::lock_guard lock(mutex_);
  if (auto it = by_text_.find(text); it != by_text_.end()) {
    items_.splice(items_.begin(), items_, it->second);
    return;
  }
  items_.push_front(Item{text, std::move(ids)});
  by_text_.emplace(items_.front().text, items_.begin());
  bytes_ += items_.front().bytes();
  while (bytes_ > max_bytes_ && items_.size() > 1) {
    bytes_ -= items_.back().bytes();
    by_text_.erase(items_.back().text);
    items_.pop_back();
  }
}

std::optional<std::vector<int32_t>> GeneratedHistory::find(const std::string& text) {
  std::lock_guard lock(mutex_);
  auto it = by_text_.find(text);
  if (it == by_text_.end()) return std::nullopt;
  items_.splice(items_.begin(), items_, it->second);
  return it->second->ids;
}

size_t GeneratedHistory::entries() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

size_t GeneratedHistory::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace hearth::server
