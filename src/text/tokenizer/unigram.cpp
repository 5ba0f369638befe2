// The Unigram model of tokenizer.json (SentencePiece's): the segmentation
// of best total score, found by dynamic programming over a trie of the
// pieces.
#include "text/tokenizer/models.h"

#include <algorithm>
#include <tuple>

#include "text/tokenizer/byte_trie.h"
#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

namespace {

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

  void end_section(std::vector<int32_t>& ids, size_t first) const override {
    if (unk_id) fuse_unknowns(ids, first, *unk_id);  // the reference fuses consecutive unknowns
  }

  void encode_word(std::string_view w, std::vector<int32_t>& ids) const override {
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

 private:
  std::vector<double> scores_;
  double unk_score_ = 0;
  ByteFallback byte_fallback_;
  ByteTrie trie_;  // every piece, with its id
};

}  // namespace

std::unique_ptr<Model> make_unigram(const json& j, ModelData& data) { return std::make_unique<Unigram>(j, data); }

}  // namespace hearth::text::detail
