// What the tokenizer.json models share (bpe.cpp, word_piece.cpp,
// unigram.cpp, tiktoken.cpp): a word cache, the merge loop of the byte-pair
// models, the vocabulary loader and SentencePiece's byte fallback; and the
// constructors of the tokenizer.json models, which make_model (models.cpp)
// picks by the model's type (tiktoken's is make_tiktoken_model, components.h).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer/component_util.h"

namespace hearth::text::detail {

std::unique_ptr<Model> make_bpe(const json& j, ModelData& data);
std::unique_ptr<Model> make_word_piece(const json& j, ModelData& data);
std::unique_ptr<Model> make_word_level(const json& j, ModelData& data);
std::unique_ptr<Model> make_unigram(const json& j, ModelData& data);

// A bounded word → ids cache shared by threads.
class WordCache {
 public:
  bool get(std::string_view word, std::vector<int32_t>& out) const {
    auto& shard = shards_[std::hash<std::string_view>{}(word) % kShards];
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.map.find(word);
    if (it == shard.map.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }
  void put(std::string_view word, const int32_t* ids, size_t n) const {
    auto& shard = shards_[std::hash<std::string_view>{}(word) % kShards];
    std::lock_guard<std::mutex> lock(shard.mu);
    if (shard.map.size() >= kCapacity) shard.map.clear();
    shard.map.emplace(std::string(word), std::vector<int32_t>(ids, ids + n));
  }

 private:
  static constexpr size_t kShards = 16;
  static constexpr size_t kCapacity = 4096;
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
  };
  mutable std::array<Shard, kShards> shards_;
};

// Merges adjacent symbols by rank until none applies; the lowest rank wins and
// ties go to the leftmost pair (what both Rust and the reference do).
// `pair_rank(a, b, &new_id)` returns the rank or -1.
template <class PairRank>
void merge_symbols(std::vector<int32_t>& sym, PairRank&& pair_rank) {
  const size_t n = sym.size();
  if (n < 2) return;
  if (n <= 12) {
    // Small words: a quadratic scan beats the heap.
    while (sym.size() > 1) {
      int best_rank = std::numeric_limits<int>::max();
      size_t best = 0;
      int32_t best_id = -1;
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        int32_t nid;
        const int r = pair_rank(sym[i], sym[i + 1], nid);
        if (r >= 0 && r < best_rank) {
          best_rank = r;
          best = i;
          best_id = nid;
        }
      }
      if (best_id < 0) break;
      sym[best] = best_id;
      sym.erase(sym.begin() + static_cast<long>(best) + 1);
    }
    return;
  }
  std::vector<int32_t> prev(n), next(n);
  std::vector<char> alive(n, 1);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  struct Item {
    int rank;
    int32_t pos;
    int32_t left, right;  // the symbol ids the pair was computed for
    int32_t new_id;
    bool operator>(const Item& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  auto push = [&](int32_t pos) {
    const int32_t nx = next[static_cast<size_t>(pos)];
    if (nx < 0) return;
    int32_t nid;
    const int r = pair_rank(sym[static_cast<size_t>(pos)], sym[static_cast<size_t>(nx)], nid);
    if (r >= 0) heap.push({r, pos, sym[static_cast<size_t>(pos)], sym[static_cast<size_t>(nx)], nid});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i));
  while (!heap.empty()) {
    const Item top = heap.top();
    heap.pop();
    const auto pos = static_cast<size_t>(top.pos);
    if (!alive[pos]) continue;
    const int32_t nx = next[pos];
    if (nx < 0) continue;
    if (sym[pos] != top.left || sym[static_cast<size_t>(nx)] != top.right) continue;  // stale
    sym[pos] = top.new_id;
    alive[static_cast<size_t>(nx)] = 0;
    next[pos] = next[static_cast<size_t>(nx)];
    if (next[pos] >= 0) prev[static_cast<size_t>(next[pos])] = static_cast<int32_t>(pos);
    if (prev[pos] >= 0) push(prev[pos]);
    push(static_cast<int32_t>(pos));
  }
  size_t w = 0;
  for (int32_t i = 0; i >= 0; i = next[static_cast<size_t>(i)]) sym[w++] = sym[static_cast<size_t>(i)];
  sym.resize(w);
}

// Collapses each run of consecutive `unk` ids in ids[first..] into one.
void fuse_unknowns(std::vector<int32_t>& ids, size_t first, int32_t unk);

// A token -> id vocabulary given as a JSON object (BPE, WordPiece,
// WordLevel): fills the model's index and its id -> token table, taking the
// strings out of `data`.
void load_vocab_object(Model& m, ModelData& data, const char* model);

// SentencePiece byte fallback: a character the vocabulary lacks becomes its
// UTF-8 bytes' <0xXX> tokens, when every one of them is in the vocabulary.
class ByteFallback {
 public:
  void load(const json& j, const TokenIndex& vocab);
  // Appends ch's byte tokens; false (nothing appended) when off or one is missing.
  bool push(std::string_view ch, std::vector<int32_t>& ids) const {
    if (!enabled_) return false;
    for (unsigned char b : ch)
      if (ids_[b] < 0) return false;
    for (unsigned char b : ch) ids.push_back(ids_[b]);
    return true;
  }

 private:
  bool enabled_ = false;
  std::array<int32_t, 256> ids_{};
};

}  // namespace hearth::text::detail
