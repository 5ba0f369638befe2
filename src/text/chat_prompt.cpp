#include "text/chat_prompt.h"

#include <cstring>

namespace hearth::text {

ChatPrompt::ChatPrompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer)
    : template_(chat_template), tokenizer_(tokenizer) {
  // Does encoding plain text add a BOS? Compare with and without specials.
  if (auto bos = tokenizer_.bos_id()) {
    auto with = tokenizer_.encode("a", true), without = tokenizer_.encode("a", false);
    if (!with.empty() && with.front() == *bos && (without.empty() || without.front() != *bos)) {
      bos_ = *bos;
      bos_text_ = tokenizer_.bos_token();
      if (bos_text_.empty()) bos_text_ = tokenizer_.id_to_token(*bos);
    }
  }
}

std::vector<int32_t> ChatPrompt::tokenize(const std::string& rendered) const {
  return tokenize(rendered, {});
}

std::vector<int32_t> ChatPrompt::tokenize(const std::string& rendered, std::span<const KnownIds> known) const {
  std::vector<int32_t> ids;
  size_t at = 0;
  for (const KnownIds& k : known) {
    if (k.text.empty()) continue;
    // glibc's memmem is linear (two-way); std::string::find is not, and both
    // the text and the prompt come from clients.
    const void* hit = memmem(rendered.data() + at, rendered.size() - at, k.text.data(), k.text.size());
    if (!hit) continue;
    const size_t found = size_t(static_cast<const char*>(hit) - rendered.data());
    const auto gap = tokenizer_.encode(std::string_view(rendered).substr(at, found - at), false);
    ids.insert(ids.end(), gap.begin(), gap.end());
    ids.insert(ids.end(), k.ids.begin(), k.ids.end());
    at = found + k.text.size();
  }
  const auto rest = tokenizer_.encode(std::string_view(rendered).substr(at), false);
  ids.insert(ids.end(), rest.begin(), rest.end());
  if (bos_ && rendered.compare(0, bos_text_.size(), bos_text_) != 0) ids.insert(ids.begin(), *bos_);
  return ids;
}

}  // namespace hearth::text
