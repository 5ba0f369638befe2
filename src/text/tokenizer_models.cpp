// Tokenizer models: BPE (byte-level and SentencePiece-style), WordPiece,
// Unigram, and tiktoken's byte-pair ranks.
#include <algorithm>
#include <array>
#include <mutex>
#include <cstdio>
#include <limits>
#include <queue>
#include <stdexcept>

#include "text/byte_trie.h"
#include "text/tokenizer_components.h"
#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

namespace {

[[noreturn]] void bad(const std::string& what) { throw std::runtime_error(what); }

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

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

// (left id, right id) → (rank, merged id), open addressing.
class MergeMap {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    slots_.assign(cap, Slot{});
  }
  void insert(int32_t a, int32_t b, int rank, int32_t id) {
    if ((size_ + 1) * 2 > slots_.size()) {
      std::vector<Slot> old = std::move(slots_);
      reserve(std::max<size_t>(16, old.size()));
      size_ = 0;
      for (const auto& s : old)
        if (s.key != kEmpty) place(s);
    }
    const uint64_t k = key(a, b);
    size_t i = hash(k) & (slots_.size() - 1);
    while (slots_[i].key != kEmpty) {
      if (slots_[i].key == k) return;  // first occurrence wins
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = Slot{k, rank, id};
    ++size_;
  }
  int find(int32_t a, int32_t b, int32_t& id) const {
    if (slots_.empty()) return -1;
    const uint64_t k = key(a, b);
    size_t i = hash(k) & (slots_.size() - 1);
    while (slots_[i].key != kEmpty) {
      if (slots_[i].key == k) {
        id = slots_[i].id;
        return slots_[i].rank;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    return -1;
  }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  struct Slot {
    uint64_t key = kEmpty;
    int rank = 0;
    int32_t id = 0;
  };
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
  }
  void place(const Slot& s) {
    size_t i = hash(s.key) & (slots_.size() - 1);
    while (slots_[i].key != kEmpty) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
    ++size_;
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// Collapses each run of consecutive `unk` ids in ids[first..] into one.
void fuse_unknowns(std::vector<int32_t>& ids, size_t first, int32_t unk) {
  size_t out = first;
  for (size_t i = first; i < ids.size(); ++i) {
    if (ids[i] == unk && out > first && ids[out - 1] == unk) continue;
    ids[out++] = ids[i];
  }
  ids.resize(out);
}

// A token -> id vocabulary given as a JSON object (BPE, WordPiece,
// WordLevel): fills the model's index and its id -> token table, taking the
// strings out of `data`.
void load_vocab_object(Model& m, ModelData& data, const char* model) {
  if (!data.has_vocab_object) bad(std::string(model) + " vocab must be an object");
  int64_t max_id = -1;
  m.vocab.reserve(data.vocab_object.size());
  for (const auto& [tok, id] : data.vocab_object) {
    if (id < 0 || id > kMaxTokenId)
      bad("token id " + std::to_string(id) + " of \"" + tok + "\" is out of range (0 to " +
          std::to_string(kMaxTokenId) + ")");
    m.vocab.set(tok, static_cast<int32_t>(id));
    max_id = std::max(max_id, id);
  }
  m.id_to_token.assign(static_cast<size_t>(max_id + 1), std::string());
  for (auto& [tok, id] : data.vocab_object) m.id_to_token[static_cast<size_t>(id)] = std::move(tok);
  data.vocab_object = {};
}

// SentencePiece byte fallback: a character the vocabulary lacks becomes its
// UTF-8 bytes' <0xXX> tokens, when every one of them is in the vocabulary.
class ByteFallback {
 public:
  void load(const json& j, const TokenIndex& vocab) {
    enabled_ = get_or<bool>(j, "byte_fallback", false);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      ids_[b] = vocab.find(name);
    }
  }
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

// ------------------------------------------------------------------------ BPE

class BPE final : public Model {
 public:
  BPE(const json& j, ModelData& data) {
    load_vocab_object(*this, data, "BPE");

    if (auto it = j.find("unk_token"); it != j.end() && it->is_string()) {
      unk_token_ = it->get<std::string>();
      if (const int32_t id = vocab.find(unk_token_); id >= 0) unk_id = id;
    }
    byte_fallback_.load(j, vocab);
    fuse_unk_ = get_or<bool>(j, "fuse_unk", false);
    ignore_merges_ = get_or<bool>(j, "ignore_merges", false);
    prefix_ = get_or<std::string>(j, "continuing_subword_prefix", "");
    end_of_word_suffix = get_or<std::string>(j, "end_of_word_suffix", "");

    merges_.reserve(data.merges.size());
    int rank = 0;
    std::string joined;
    for (const auto& [a, b] : data.merges) {
      const int32_t ia = vocab.find(a), ib = vocab.find(b);
      joined.assign(a);
      joined.append(b, std::min(b.size(), prefix_for(b)), std::string::npos);
      const int32_t im = vocab.find(joined);
      if (ia >= 0 && ib >= 0 && im >= 0) merges_.insert(ia, ib, rank, im);  // first occurrence wins
      ++rank;
    }
    data.merges = {};
    // SentencePiece-style vocabularies: a word is the whole text, so cut it
    // before each "▁" that follows another character. No merge can cross such
    // a cut unless a token contains "X▁" (X ≠ ▁); the few that do are checked
    // at each cut.
    if (!ignore_merges_ && vocab.find(kMeta) >= 0) {
      for (const auto& t : id_to_token)
        for (size_t p = t.find(kMeta, 1); p != std::string::npos; p = t.find(kMeta, p + 1))
          if (p < 3 || t.compare(p - 3, 3, kMeta) != 0) {
            spanning_.emplace_back(t, p);
            break;
          }
      split_meta_ = spanning_.size() <= 64;
    }
  }

  void encode(const std::vector<std::string>& words, std::vector<int32_t>& ids) const override {
    const size_t first = ids.size();
    for (const auto& w : words) encode_word(w, ids);
    if (fuse_unk_ && unk_id) fuse_unknowns(ids, first, *unk_id);
  }

 private:
  // Length of the continuing-subword prefix at the start of merge part b.
  size_t prefix_for(const std::string& b) const {
    return !prefix_.empty() && b.compare(0, prefix_.size(), prefix_) == 0 ? prefix_.size() : 0;
  }

  static constexpr std::string_view kMeta = "\xE2\x96\x81";  // ▁

  // Whether a token of `spanning_` covers the cut before word[p].
  bool spans(std::string_view word, size_t p) const {
    for (const auto& [t, at] : spanning_) {
      // t has "X▁" with the ▁ at byte `at`; any occurrence of t whose ▁ at `at` is a later
      // ▁ of t than the first one is also caught, since we test every "X▁" of t.
      for (size_t q = t.find(kMeta, 1); q != std::string::npos; q = t.find(kMeta, q + 1)) {
        if (q >= 3 && t.compare(q - 3, 3, kMeta) == 0) continue;
        if (p >= q && p - q + t.size() <= word.size() && word.compare(p - q, t.size(), t) == 0) return true;
      }
    }
    return false;
  }

  void encode_word(std::string_view word, std::vector<int32_t>& ids) const {
    if (word.empty()) return;
    if (ignore_merges_) {
      if (const int32_t id = vocab.find(word); id >= 0) {
        ids.push_back(id);
        return;
      }
    }
    if (split_meta_ && word.size() > 24) {
      size_t start = 0;
      for (size_t p = word.find(kMeta, 1); p != std::string_view::npos; p = word.find(kMeta, p + 3)) {
        if (p >= 3 && word.compare(p - 3, 3, kMeta) == 0) continue;  // inside a run of ▁
        if (!spanning_.empty() && spans(word, p)) continue;
        encode_piece(word.substr(start, p - start), ids);
        start = p;
      }
      encode_piece(word.substr(start), ids);
      return;
    }
    encode_piece(word, ids);
  }

  void encode_piece(std::string_view word, std::vector<int32_t>& ids) const {
    if (word.empty()) return;
    const bool cacheable = word.size() < 256;
    if (cacheable && cache_.get(word, ids)) return;
    const size_t start = ids.size();

    // Initial symbols: one per character (with the subword prefix / suffix).
    thread_local std::vector<int32_t> sym;
    thread_local std::vector<std::string_view> unknown_text;
    sym.clear();
    unknown_text.clear();
    std::string tmp;
    for (size_t i = 0; i < word.size();) {
      const size_t s = i;
      u::next(word, i);
      std::string_view ch = word.substr(s, i - s);
      const bool is_first = s == 0, is_last = i == word.size();
      std::string_view key = ch;
      if ((!prefix_.empty() && !is_first) || (!end_of_word_suffix.empty() && is_last)) {
        tmp.clear();
        if (!is_first) tmp += prefix_;
        tmp += ch;
        if (is_last) tmp += end_of_word_suffix;
        key = tmp;
      }
      if (const int32_t id = vocab.find(key); id >= 0) {
        sym.push_back(id);
      } else {
        sym.push_back(-1 - static_cast<int32_t>(unknown_text.size()));  // placeholder
        unknown_text.push_back(ch);
      }
    }
    merge_symbols(sym, [this](int32_t a, int32_t b, int32_t& nid) -> int {
      if (a < 0 || b < 0) return -1;
      return merges_.find(a, b, nid);
    });
    for (int32_t s : sym) {
      if (s >= 0) {
        ids.push_back(s);
        continue;
      }
      const std::string_view ch = unknown_text[static_cast<size_t>(-1 - s)];
      if (!byte_fallback_.push(ch, ids) && unk_id) ids.push_back(*unk_id);
    }
    if (cacheable) cache_.put(word, ids.data() + start, ids.size() - start);
  }

  MergeMap merges_;
  bool split_meta_ = false;
  std::vector<std::pair<std::string, size_t>> spanning_;  // tokens with "X▁" inside
  std::string unk_token_;
  ByteFallback byte_fallback_;
  bool fuse_unk_ = false, ignore_merges_ = false;
  std::string prefix_;
  WordCache cache_;
};

// ------------------------------------------------------------------ WordPiece

class WordPiece final : public Model {
 public:
  WordPiece(const json& j, ModelData& data) {
    load_vocab_object(*this, data, "WordPiece");
    const std::string unk = get_or<std::string>(j, "unk_token", "[UNK]");
    if (const int32_t id = vocab.find(unk); id >= 0) unk_id = id;
    prefix_ = get_or<std::string>(j, "continuing_subword_prefix", "##");
    max_chars_ = get_or<size_t>(j, "max_input_chars_per_word", 100);
  }

  void encode(const std::vector<std::string>& words, std::vector<int32_t>& ids) const override {
    std::vector<size_t> bounds;
    std::string sub;
    for (const auto& w : words) {
      bounds.clear();
      for (size_t i = 0; i < w.size();) {
        bounds.push_back(i);
        u::next(w, i);
      }
      bounds.push_back(w.size());
      const size_t nchars = bounds.size() - 1;
      if (nchars > max_chars_) {
        if (unk_id) ids.push_back(*unk_id);
        continue;
      }
      const size_t mark = ids.size();
      bool unknown = false;
      size_t start = 0;
      while (start < nchars) {
        size_t end = nchars;
        int32_t found = -1;
        while (start < end) {
          sub.clear();
          if (start > 0) sub = prefix_;
          sub.append(w, bounds[start], bounds[end] - bounds[start]);
          if (const int32_t id = vocab.find(sub); id >= 0) {
            found = id;
            break;
          }
          --end;
        }
        if (found < 0) {
          unknown = true;
          break;
        }
        ids.push_back(found);
        start = end;
      }
      if (unknown) {
        ids.resize(mark);
        if (unk_id) ids.push_back(*unk_id);
      }
    }
  }

 private:
  std::string prefix_;
  size_t max_chars_ = 100;
};

// ------------------------------------------------------------------ WordLevel

class WordLevel final : public Model {
 public:
  WordLevel(const json& j, ModelData& data) {
    load_vocab_object(*this, data, "WordLevel");
    if (auto it = j.find("unk_token"); it != j.end() && it->is_string())
      if (const int32_t id = vocab.find(it->get<std::string>()); id >= 0) unk_id = id;
  }
  void encode(const std::vector<std::string>& words, std::vector<int32_t>& ids) const override {
    for (const auto& w : words) {
      if (const int32_t id = vocab.find(w); id >= 0)
        ids.push_back(id);
      else if (unk_id)
        ids.push_back(*unk_id);
    }
  }
};

// -------------------------------------------------------------------- Unigram

class Unigram final : public Model {
 public:
  Unigram(const json& j, ModelData& data) {
    if (!data.has_vocab_array) bad("Unigram vocab must be an array of [piece, score]");
    scores_.reserve(data.vocab_array.size());
    vocab.reserve(data.vocab_array.size());
    for (auto& [piece, score] : data.vocab_array) {
      const int32_t id = static_cast<int32_t>(id_to_token.size());
      vocab.set(piece, id);  // last occurrence wins, as in the reference's Map
      id_to_token.push_back(std::move(piece));
      scores_.push_back(score);
    }
    if (auto it = j.find("unk_id"); it != j.end() && it->is_number_integer()) {
      const int64_t id = it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX ? -1 : it->get<int64_t>();
      if (id < 0 || static_cast<size_t>(id) >= id_to_token.size()) bad("Unigram unk_id out of range");
      unk_id = static_cast<int32_t>(id);
    }
    double min_score = std::numeric_limits<double>::infinity();
    for (double s : scores_) min_score = std::min(min_score, s);
    unk_score_ = (scores_.empty() ? 0.0 : min_score) - 10.0;
    if (unk_id) scores_[static_cast<size_t>(*unk_id)] = unk_score_;
    for (const std::string& p : id_to_token) trie_.insert(p, vocab.find(p));
    byte_fallback_.load(j, vocab);
  }

  void encode(const std::vector<std::string>& words, std::vector<int32_t>& ids) const override {
    const size_t first = ids.size();
    for (const auto& w : words) encode_word(w, ids);
    if (unk_id) fuse_unknowns(ids, first, *unk_id);  // the reference fuses consecutive unknowns
  }

 private:
  void encode_word(const std::string& w, std::vector<int32_t>& ids) const {
    if (w.empty()) return;
    // Character boundaries.
    std::vector<size_t> pos;
    for (size_t i = 0; i < w.size();) {
      pos.push_back(i);
      u::next(w, i);
    }
    const size_t n = pos.size();
    pos.push_back(w.size());
    std::vector<size_t> char_at(w.size() + 1, 0);
    for (size_t k = 0; k <= n; ++k) char_at[pos[k]] = k;
    // best[k]: best score of a segmentation of chars [0, k); back[k]: (start char, id).
    const double kNone = -std::numeric_limits<double>::infinity();
    std::vector<double> best(n + 1, kNone);
    std::vector<std::pair<size_t, int32_t>> back(n + 1, {0, -1});
    best[0] = 0;
    // The reference visits, for each end position, the candidate left nodes in
    // order of their start position and keeps the first strictly better one.
    // Equivalently: process starts in increasing order and relax with ">".
    // Nodes are (start, length); for a fixed end, candidates arrive ordered by start.
    std::vector<std::vector<std::tuple<size_t, int32_t, double>>> ending(n + 1);
    for (size_t k = 0; k < n; ++k) {
      bool single = false;
      int32_t node = 0;
      for (size_t b = pos[k]; b < w.size(); ++b) {
        node = trie_.child(node, static_cast<unsigned char>(w[b]));
        if (node < 0) break;
        const int32_t id = trie_.id(node);
        if (id >= 0 && (b + 1 == w.size() || (static_cast<unsigned char>(w[b + 1]) & 0xC0) != 0x80)) {
          const size_t end = char_at[b + 1];
          ending[end].emplace_back(k, id, scores_[static_cast<size_t>(id)]);
          if (end == k + 1) single = true;
        }
      }
      if (!single) ending[k + 1].emplace_back(k, -1, unk_score_);
    }
    for (size_t e = 1; e <= n; ++e) {
      for (const auto& [s, id, score] : ending[e]) {
        if (best[s] == kNone) continue;
        const double cand = best[s] + score;
        if (best[e] == kNone || cand > best[e]) {
          best[e] = cand;
          back[e] = {s, id};
        }
      }
    }
    std::vector<std::pair<size_t, int32_t>> path;
    for (size_t e = n; e > 0;) {
      path.emplace_back(e, back[e].second);
      e = back[e].first;
    }
    std::reverse(path.begin(), path.end());
    size_t start = 0;
    for (const auto& [e, id] : path) {
      const size_t s_char = start;
      start = e;
      if (id >= 0) {
        ids.push_back(id);
        continue;
      }
      const std::string_view ch(w.data() + pos[s_char], pos[e] - pos[s_char]);
      if (!byte_fallback_.push(ch, ids) && unk_id) ids.push_back(*unk_id);
    }
  }

  std::vector<double> scores_;
  double unk_score_ = 0;
  ByteFallback byte_fallback_;
  ByteTrie trie_;  // every piece, with its id
};

// ------------------------------------------------------------------- tiktoken

class Tiktoken final : public Model {
 public:
  explicit Tiktoken(std::vector<std::pair<std::string, int32_t>> ranks) {
    int32_t max_id = -1;
    for (auto& [bytes, rank] : ranks) {
      if (rank < 0 || rank > kMaxTokenId)
        bad("rank " + std::to_string(rank) + " is out of range (0 to " + std::to_string(kMaxTokenId) + ")");
      max_id = std::max(max_id, rank);
    }
    id_to_token.assign(static_cast<size_t>(max_id + 1), std::string());
    vocab.reserve(ranks.size());
    for (auto& [bytes, rank] : ranks) {
      if (vocab.find(bytes) < 0) vocab.set(bytes, rank);
      id_to_token[static_cast<size_t>(rank)] = std::move(bytes);
    }
    for (int b = 0; b < 256; ++b) {
      const char c = static_cast<char>(b);
      byte_ids_[b] = vocab.find(std::string_view(&c, 1));
      if (byte_ids_[b] < 0) bad("tiktoken ranks lack the single byte " + std::to_string(b));
    }
  }

  void encode(const std::vector<std::string>& words, std::vector<int32_t>& ids) const override {
    for (const auto& w : words) {
      if (w.empty()) continue;
      if (const int32_t id = vocab.find(w); id >= 0) {
        ids.push_back(id);
        continue;
      }
      if (w.size() < 256 && cache_.get(w, ids)) continue;
      const size_t start = ids.size();
      // Symbols are byte ranges; a merge's rank is the rank of the merged bytes.
      std::vector<int32_t> sym;  // index into spans
      std::vector<std::pair<uint32_t, uint32_t>> spans;
      spans.reserve(w.size());
      for (size_t i = 0; i < w.size(); ++i) spans.emplace_back(static_cast<uint32_t>(i), 1u);
      // Work on span ids: a "symbol id" is the span index; merged spans are appended.
      for (size_t i = 0; i < w.size(); ++i) sym.push_back(static_cast<int32_t>(i));
      merge_symbols(sym, [&](int32_t a, int32_t b, int32_t& nid) -> int {
        const auto sa = spans[static_cast<size_t>(a)], sb = spans[static_cast<size_t>(b)];
        const int32_t rank = vocab.find(std::string_view(w).substr(sa.first, sa.second + sb.second));
        if (rank < 0) return -1;
        nid = static_cast<int32_t>(spans.size());
        spans.emplace_back(sa.first, sa.second + sb.second);
        return rank;
      });
      for (int32_t s : sym) {
        const auto sp = spans[static_cast<size_t>(s)];
        ids.push_back(vocab.find(std::string_view(w).substr(sp.first, sp.second)));
      }
      if (w.size() < 256) cache_.put(w, ids.data() + start, ids.size() - start);
    }
  }

 private:
  std::array<int32_t, 256> byte_ids_{};
  WordCache cache_;
};

}  // namespace

std::unique_ptr<Model> make_model(const json& j, ModelData& data) {
  std::string type = j.value("type", "");
  if (type.empty()) {
    // Old files omit the type; guess as the reference does.
    if (data.has_vocab_array)
      type = "Unigram";
    else if (data.has_merges)
      type = "BPE";
    else
      type = "WordPiece";
  }
  if (type == "BPE") return std::make_unique<BPE>(j, data);
  if (type == "WordPiece") return std::make_unique<WordPiece>(j, data);
  if (type == "Unigram") return std::make_unique<Unigram>(j, data);
  if (type == "WordLevel") return std::make_unique<WordLevel>(j, data);
  bad("unknown model type \"" + type + "\"");
}

std::unique_ptr<Model> make_tiktoken_model(std::vector<std::pair<std::string, int32_t>> ranks) {
  return std::make_unique<Tiktoken>(std::move(ranks));
}

}  // namespace hearth::text::detail
