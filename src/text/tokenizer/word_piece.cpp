// The vocabulary-lookup models of tokenizer.json: WordPiece (BERT's greedy
// longest match with a continuing-subword prefix) and WordLevel (one id per
// word).
#include "text/tokenizer/models.h"

#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

namespace {

class WordPiece final : public Model {
 public:
  WordPiece(const json& j, ModelData& data) {
    load_vocab_object(*this, data, "WordPiece");
    const std::string unk = get_or<std::string>(j, "unk_token", "[UNK]");
    if (const int32_t id = vocab.find(unk); id >= 0) unk_id = id;
    prefix_ = get_or<std::string>(j, "continuing_subword_prefix", "##");
    max_chars_ = get_or<size_t>(j, "max_input_chars_per_word", 100);
  }

  void encode_word(std::string_view w, std::vector<int32_t>& ids) const override {
    thread_local std::vector<size_t> bounds;
    thread_local std::string sub;
    bounds.clear();
    for (size_t i = 0; i < w.size();) {
      if (bounds.size() == max_chars_) {  // longer than a word may be: known before its bounds are kept
        if (unk_id) ids.push_back(*unk_id);
        return;
      }
      bounds.push_back(i);
      u::next(w, i);
    }
    bounds.push_back(w.size());
    const size_t nchars = bounds.size() - 1;
    const size_t mark = ids.size();
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
        ids.resize(mark);
        if (unk_id) ids.push_back(*unk_id);
        return;
      }
      ids.push_back(found);
      start = end;
    }
  }

 private:
  std::string prefix_;
  size_t max_chars_ = 100;
};

class WordLevel final : public Model {
 public:
  WordLevel(const json& j, ModelData& data) {
    load_vocab_object(*this, data, "WordLevel");
    if (auto it = j.find("unk_token"); it != j.end() && it->is_string())
      if (const int32_t id = vocab.find(it->get<std::string>()); id >= 0) unk_id = id;
  }
  void encode_word(std::string_view w, std::vector<int32_t>& ids) const override {
    if (const int32_t id = vocab.find(w); id >= 0)
      ids.push_back(id);
    else if (unk_id)
      ids.push_back(*unk_id);
  }
};

}  // namespace

std::unique_ptr<Model> make_word_piece(const json& j, ModelData& data) {
  return std::make_unique<WordPiece>(j, data);
}

std::unique_ptr<Model> make_word_level(const json& j, ModelData& data) {
  return std::make_unique<WordLevel>(j, data);
}

}  // namespace hearth::text::detail
