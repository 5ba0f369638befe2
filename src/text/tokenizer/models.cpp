// make_model, and the out-of-line parts of what the tokenizer.json models
// share (models.h).
#include "text/tokenizer/models.h"

#include <algorithm>
#include <cstdio>

namespace hearth::text::detail {

void fuse_unknowns(std::vector<int32_t>& ids, size_t first, int32_t unk) {
  size_t out = first;
  for (size_t i = first; i < ids.size(); ++i) {
    if (ids[i] == unk && out > first && ids[out - 1] == unk) continue;
    ids[out++] = ids[i];
  }
  ids.resize(out);
}

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

void ByteFallback::load(const json& j, const TokenIndex& vocab) {
  enabled_ = get_or<bool>(j, "byte_fallback", false);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    ids_[b] = vocab.find(name);
  }
}

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
  if (type == "BPE") return make_bpe(j, data);
  if (type == "WordPiece") return make_word_piece(j, data);
  if (type == "Unigram") return make_unigram(j, data);
  if (type == "WordLevel") return make_word_level(j, data);
  bad("unknown model type \"" + type + "\"");
}

}  // namespace hearth::text::detail
