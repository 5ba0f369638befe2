// Matcher::fill_mask: a walk of the vocabulary's byte trie with the
// matcher's stacks, pruning every subtree whose prefix is refused, plus
// the bulk-accepted plain tokens inside a free JSON string.
#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>

#include "engine/grammar/matcher.h"

namespace hearth::grammar {

int32_t Matcher::free_string_room() const {
  // A stack waiting on a repetition of string characters with room left
  // takes any run of plain characters up to that room. With several such
  // stacks the roomiest decides: a token needs only one stack that takes
  // it. Any other stack must refuse every plain token at its first byte
  // (the closing quote does), or the bulk answer would be incomplete.
  static const ByteSet plain_lead = [] {
    ByteSet s = byte_range(0x20, 0x7F) | byte_range(0xC2, 0xF4);
    s.reset('"');
    s.reset('\\');
    return s;
  }();
  const int32_t char_rule = grammar_->string_char_rule();
  if (char_rule < 0) return 0;
  int32_t room = 0;
  for (int32_t t : tops_) {
    const Frame& f = frames_[size_t(t)];
    const Element& e = element(f);
    if (e.kind == Element::Kind::Rule && e.index == char_rule) {
      room = std::max(room, e.max < 0 ? INT32_MAX : e.max - f.count);
      continue;
    }
    const ByteSet& starts = e.kind == Element::Kind::Rule ? grammar_->first(e.index) : grammar_->set(e.index);
    if ((starts & plain_lead).any()) return 0;
  }
  return room;
}

void Matcher::walk(const TokenTrie& trie, std::span<uint32_t> mask) {
  const size_t base = frames_.size();
  if (levels_.size() < size_t(trie.max_depth) + 1) {
    levels_.resize(size_t(trie.max_depth) + 1);
    marks_.resize(size_t(trie.max_depth) + 1);
  }
  levels_[0].tops = tops_;
  marks_[0] = base;
  for (size_t i = 0; i < trie.size();) {
    const size_t d = size_t(trie.depth[i]);
    frames_.resize(marks_[d - 1]);  // drop what the previous sibling subtree made
    Stacks& here = levels_[d];
    advance(levels_[d - 1].tops, trie.byte[i], here);
    if (here.tops.empty() && !here.complete) {
      i = size_t(trie.end[i]);
      continue;
    }
    marks_[d] = frames_.size();
    for (int32_t k = trie.first[i]; k < trie.first[i + 1]; ++k) {
      const auto id = uint32_t(trie.tokens[size_t(k)]);
      mask[id / 32] |= 1u << (id % 32);
    }
    i = here.tops.empty() ? size_t(trie.end[i]) : i + 1;
  }
  frames_.resize(base);
}

void Matcher::fill_mask(std::span<uint32_t> mask) {
  if (!vocab_ || mask.size() != vocab_->mask_words())
    throw std::invalid_argument("grammar: the mask does not fit the vocabulary");
  std::fill(mask.begin(), mask.end(), 0u);
  if (const int32_t room = free_string_room(); room > 0) {
    const auto plain = vocab_->plain_up_to(std::min(room, Vocabulary::kMaxPlainChars));
    std::memcpy(mask.data(), plain.data(), plain.size_bytes());
    walk(vocab_->non_plain_tokens(), mask);
  } else {
    walk(vocab_->all_tokens(), mask);
  }
}

}  // namespace hearth::grammar
