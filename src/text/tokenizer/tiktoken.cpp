// tiktoken's model: byte-pair ranks over raw bytes, where a merge's rank is
// the rank of the merged bytes.
#include "text/tokenizer/models.h"

#include <algorithm>
#include <utility>

namespace hearth::text::detail {

namespace {

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

  void encode_word(std::string_view w, std::vector<int32_t>& ids) const override {
    if (w.empty()) return;
    if (const int32_t id = vocab.find(w); id >= 0) {
      ids.push_back(id);
      return;
    }
    if (w.size() < 256 && cache_.get(w, ids)) return;
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
      const int32_t rank = vocab.find(w.substr(sa.first, sa.second + sb.second));
      if (rank < 0) return -1;
      nid = static_cast<int32_t>(spans.size());
      spans.emplace_back(sa.first, sa.second + sb.second);
      return rank;
    });
    for (int32_t s : sym) {
      const auto sp = spans[static_cast<size_t>(s)];
      ids.push_back(vocab.find(w.substr(sp.first, sp.second)));
    }
    if (w.size() < 256) cache_.put(w, ids.data() + start, ids.size() - start);
  }

 private:
  std::array<int32_t, 256> byte_ids_{};
  WordCache cache_;
};

}  // namespace

std::unique_ptr<Model> make_tiktoken_model(std::vector<std::pair<std::string, int32_t>> ranks) {
  return std::make_unique<Tiktoken>(std::move(ranks));
}

}  // namespace hearth::text::detail
