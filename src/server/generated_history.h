// The exact token ids behind assistant messages this server generated.
// Re-tokenizing generated text often gives other ids than the ones sampled
// (a model may spell a word in pieces the tokenizer would merge), and then a
// follow-up turn no longer starts with the conversation's cached KV. Chat
// prompts therefore put these ids back where the client sends the text back
// (text::ChatPrompt::tokenize with known ids). Bounded in bytes, least
// recently used first out; thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace hearth::server {

class GeneratedHistory {
 public:
  explicit GeneratedHistory(size_t max_bytes = size_t(32) << 20) : max_bytes_(max_bytes) {}

  // `ids` decode to `text` (the caller checks): the message as the client got it.
  void remember(const std::string& text, std::vector<int32_t> ids);
  std::optional<std::vector<int32_t>> find(const std::string& text);

  size_t entries() const;
  size_t bytes() const;

 private:
  struct Item {
    std::string text;
    std::vector<int32_t> ids;
    size_t bytes() const { return text.size() + ids.size() * sizeof(int32_t); }
  };
  size_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<Item> items_;  // most recently used first
  std::unordered_map<std::string_view, std::list<Item>::iterator> by_text_;
  size_t bytes_ = 0;
};

}  // namespace hearth::server
