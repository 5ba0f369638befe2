// A trie over byte strings whose entries carry an id: longest-match
// splitting of added tokens, and the Unigram model's walk over its pieces.
// Children are kept sorted by byte, so each step is a binary search.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace hearth::text {

class ByteTrie {
 public:
  static constexpr int32_t kRoot = 0;

  // Adds key (non-empty) with its id; a later id for the same key wins.
  void insert(std::string_view key, int32_t id);
  bool empty() const { return nodes_.size() == 1; }

  // The node reached from `node` by byte c, or -1.
  int32_t child(int32_t node, unsigned char c) const;
  // The id of the key ending at `node`, or -1.
  int32_t id(int32_t node) const { return nodes_[size_t(node)].id; }

  // Length of the longest key that text[i..] starts with, or 0.
  size_t longest_prefix(std::string_view text, size_t i) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> kids;  // sorted by byte
    int32_t id = -1;
  };
  std::vector<Node> nodes_{1};
  std::array<bool, 256> first_{};  // bytes some key starts with
};

}  // namespace hearth::text
