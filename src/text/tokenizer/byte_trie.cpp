#include "text/tokenizer/byte_trie.h"

#include <algorithm>

namespace hearth::text {

namespace {
bool byte_less(const std::pair<unsigned char, int32_t>& a, unsigned char b) {
  return a.first < b;
}
}  // namespace

void ByteTrie::insert(std::string_view key, int32_t id) {
  if (key.empty()) return;
  int32_t node = kRoot;
  for (unsigned char c : key) {
    auto& kids = nodes_[size_t(node)].kids;
    auto it = std::lower_bound(kids.begin(), kids.end(), c, byte_less);
    if (it != kids.end() && it->first == c) {
      node = it->second;
    } else {
      const auto next = int32_t(nodes_.size());
      kids.insert(it, {c, next});
      nodes_.emplace_back();  // invalidates `kids`: not used after this
      node = next;
    }
  }
  nodes_[size_t(node)].id = id;
  first_[static_cast<unsigned char>(key[0])] = true;
}

int32_t ByteTrie::child(int32_t node, unsigned char c) const {
  const auto& kids = nodes_[size_t(node)].kids;
  auto it = std::lower_bound(kids.begin(), kids.end(), c, byte_less);
  return it != kids.end() && it->first == c ? it->second : -1;
}

size_t ByteTrie::longest_prefix(std::string_view text, size_t i) const {
  if (i >= text.size() || !first_[static_cast<unsigned char>(text[i])]) return 0;
  int32_t node = kRoot;
  size_t best = 0;
  for (size_t j = i; j < text.size(); ++j) {
    node = child(node, static_cast<unsigned char>(text[j]));
    if (node < 0) break;
    if (nodes_[size_t(node)].id >= 0) best = j + 1 - i;
  }
  return best;
}

}  // namespace hearth::text
