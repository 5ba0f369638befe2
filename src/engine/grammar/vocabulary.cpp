#include "engine/grammar/vocabulary.h"

#include <algorithm>
#include <numeric>

#include "text/tokenizer/tokenizer.h"

namespace hearth::grammar {

int32_t plain_string_chars(std::string_view s) {
  auto in = [](unsigned char c, int lo, int hi) { return c >= lo && c <= hi; };
  int32_t chars = 0;
  for (size_t i = 0; i < s.size(); ++chars) {
    const unsigned char c = s[i];
    // RFC 3629: the lead byte gives the length and the second byte's range.
    size_t len = 0;
    int lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      if (c < 0x20 || c == '"' || c == '\\') return -1;
      len = 1;
    } else if (in(c, 0xC2, 0xDF)) {
      len = 2;
    } else if (in(c, 0xE0, 0xEF)) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (in(c, 0xF0, 0xF4)) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return -1;
    }
    // The last character may be cut short: a string takes its start and
    // waits for the rest, so it counts as a character already.
    for (size_t k = 1; k < len && i + k < s.size(); ++k)
      if (!(k == 1 ? in(s[i + k], lo, hi) : in(s[i + k], 0x80, 0xBF))) return -1;
    i += len;
  }
  return chars;
}

namespace {

TokenTrie build_trie(const std::vector<std::string>& bytes, const std::vector<int32_t>& ids) {
  std::vector<int32_t> order = ids;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes[size_t(a)] < bytes[size_t(b)] || (bytes[size_t(a)] == bytes[size_t(b)] && a < b);
  });
  TokenTrie t;
  std::vector<int32_t> path;  // node at each depth of the current token, path[d - 1] at depth d
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view s = bytes[size_t(id)];
    size_t common = 0;
    while (common < prev.size() && common < s.size() && prev[common] == s[common]) ++common;
    // Nodes deeper than the shared prefix are finished.
    for (size_t d = common; d < path.size(); ++d) t.end[size_t(path[d])] = int32_t(t.size());
    path.resize(common);
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(int32_t(t.size()));
      t.byte.push_back(uint8_t(s[d]));
      t.depth.push_back(int32_t(d + 1));
      t.end.push_back(-1);
      t.first.push_back(int32_t(t.tokens.size()));
    }
    t.tokens.push_back(id);  // ends at path.back(), the newest node
    t.max_depth = std::max(t.max_depth, int32_t(s.size()));
    prev = s;
  }
  for (int32_t node : path) t.end[size_t(node)] = int32_t(t.size());
  t.first.push_back(int32_t(t.tokens.size()));
  return t;
}

}  // namespace

Vocabulary::Vocabulary(std::vector<std::string> bytes) : bytes_(std::move(bytes)) {
  std::vector<int32_t> usable, non_plain;
  plain_.assign(size_t(kMaxPlainChars) * mask_words(), 0);
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (bytes_[id].empty()) continue;
    usable.push_back(int32_t(id));
    const int32_t chars = plain_string_chars(bytes_[id]);
    if (chars < 1 || chars > kMaxPlainChars) {
      non_plain.push_back(int32_t(id));
      continue;
    }
    for (int32_t k = chars; k <= kMaxPlainChars; ++k)
      plain_[size_t(k - 1) * mask_words() + id / 32] |= 1u << (id % 32);
  }
  all_ = build_trie(bytes_, usable);
  non_plain_ = build_trie(bytes_, non_plain);
}

std::shared_ptr<const Vocabulary::ClassTokens> Vocabulary::class_tokens(const CodePoints& set) const {
  {
    std::lock_guard lock(classes_->mutex);
    for (const auto& [s, tokens] : classes_->sets)
      if (s == set) return tokens;
  }
  auto any_in_set = [&](char32_t lo, char32_t hi) {
    auto it = std::lower_bound(set.begin(), set.end(), lo, [](const auto& r, char32_t c) { return r.second < c; });
    return it != set.end() && it->first <= hi;
  };
  std::vector<std::pair<int32_t, int32_t>> found;  // (chars, id)
  for (size_t id = 0; id < bytes_.size(); ++id) {
    const std::string& bytes = bytes_[id];
    const int32_t chars = plain_string_chars(bytes);
    if (chars < 1 || chars > kMaxPlainChars) continue;
    bool all = true;
    for (size_t i = 0; i < bytes.size() && all;) {
      // The code points the character's bytes so far can spell: one, or a
      // range where the token cuts it short.
      const auto lead = uint8_t(bytes[i]);
      const size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      char32_t lo = len == 1 ? lead : lead & (0x7F >> len), hi = lo;
      for (size_t k = 1; k < len; ++k) {
        const bool have = i + k < bytes.size();
        lo = (lo << 6) | (have ? uint8_t(bytes[i + k]) & 0x3F : 0x00);
        hi = (hi << 6) | (have ? uint8_t(bytes[i + k]) & 0x3F : 0x3F);
      }
      static constexpr char32_t kFirst[] = {0, 0, 0x80, 0x800, 0x10000}, kLast[] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
      all = any_in_set(std::max(lo, kFirst[len]), std::min(hi, kLast[len]));
      i += len;
    }
    if (all) found.emplace_back(chars, int32_t(id));
  }
  std::sort(found.begin(), found.end());
  auto tokens = std::make_shared<ClassTokens>();
  for (const auto& [chars, id] : found) {
    tokens->ids.push_back(id);
    tokens->chars.push_back(chars);
  }
  // A broad class (., [^"], \S) leaves few others: worth their own trie,
  // so that the mask walks only them wherever the class has room.
  const size_t usable = all_.tokens.size();
  if ((usable - found.size()) * 4 <= usable) {
    std::vector<bool> in_class(bytes_.size());
    for (int32_t id : tokens->ids) in_class[size_t(id)] = true;
    std::vector<int32_t> others;
    for (int32_t id : all_.tokens)
      if (!in_class[size_t(id)]) others.push_back(id);
    tokens->others = build_trie(bytes_, others);
    tokens->has_others = true;
  }
  std::lock_guard lock(classes_->mutex);
  if (classes_->sets.size() >= kKeptClasses) classes_->sets.erase(classes_->sets.begin());
  classes_->sets.emplace_back(set, tokens);
  return tokens;
}

std::span<const uint32_t> Vocabulary::plain_up_to(int32_t chars) const {
  return std::span(plain_).subspan(size_t(chars - 1) * mask_words(), mask_words());
}

std::shared_ptr<const Vocabulary> Vocabulary::from_tokenizer(const text::Tokenizer& tokenizer) {
  std::vector<std::string> bytes(tokenizer.vocab_size());
  for (size_t id = 0; id < bytes.size(); ++id)
    if (!tokenizer.is_added(int32_t(id))) bytes[id] = tokenizer.token_bytes(int32_t(id));
  return std::make_shared<const Vocabulary>(std::move(bytes));
}

}  // namespace hearth::grammar
