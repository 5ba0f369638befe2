// The BPE model of tokenizer.json: byte-level (GPT-2 style) and
// SentencePiece-style vocabularies, with merges by rank.
#include "text/tokenizer/models.h"

#include <algorithm>
#include <utility>

#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

namespace {

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

  void encode_word(std::string_view word, std::vector<int32_t>& ids) const override {
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

  void end_section(std::vector<int32_t>& ids, size_t first) const override {
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

}  // namespace

std::unique_ptr<Model> make_bpe(const json& j, ModelData& data) { return std::make_unique<BPE>(j, data); }

}  // namespace hearth::text::detail
