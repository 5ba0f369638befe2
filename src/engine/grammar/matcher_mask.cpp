// Matcher::fill_mask: a walk of the vocabulary's byte trie with the
// matcher's stacks, pruning every subtree whose prefix is refused, plus
// the bulk-accepted plain tokens inside a free JSON string or a pattern's
// character class.
#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>

#include "engine/grammar/matcher.h"

namespace hearth::grammar {

Matcher::Bulk Matcher::bulk_run() {
  static const ByteSet plain_lead = [] {
    ByteSet s = byte_range(0x20, 0x7F) | byte_range(0xC2, 0xF4);
    s.reset('"');
    s.reset('\\');
    return s;
  }();
  const int32_t char_rule = grammar_->string_char_rule();
  auto room = [](const Element& e, const Frame& f) { return e.max < 0 ? INT32_MAX : e.max - f.count; };
  // A run with room for the longest bulk token takes every one of them,
  // whatever the other stacks take, if the walk covers all the rest: a
  // free string (the free sides of an unanchored pattern), or a broad
  // class that has a trie of the tokens it does not take.
  for (int32_t t : tops_) {
    const Frame& f = frames_[size_t(t)];
    const Element& e = element(f);
    if (e.kind != Element::Kind::Rule || room(e, f) < Vocabulary::kMaxPlainChars) continue;
    if (e.index == char_rule) return {char_rule, room(e, f), &vocab_->non_plain_tokens()};
    if (grammar_->char_class(e.index))
      if (const Vocabulary::ClassTokens& c = class_tokens(e.index); c.has_others) return {e.index, room(e, f), &c.others};
  }
  // Otherwise a stack waiting on a repetition of string characters with
  // room left takes any run of plain characters up to that room; with
  // several such stacks the roomiest decides (a token needs only one stack
  // that takes it). Any other stack must refuse every plain token at its
  // first byte (the closing quote does), or the bulk answer would be
  // incomplete. A pattern's class counts too, alone and past its minimum
  // count, so that what may follow it is among the stacks checked here.
  Bulk bulk;
  for (int32_t t : tops_) {
    const Frame& f = frames_[size_t(t)];
    const Element& e = element(f);
    const bool run = e.kind == Element::Kind::Rule &&
                     (e.index == char_rule || (grammar_->char_class(e.index) && f.count >= e.min));
    if (run && (bulk.rule < 0 || (bulk.rule == char_rule && e.index == char_rule))) {
      bulk = {e.index, std::max(bulk.room, room(e, f)), &vocab_->non_plain_tokens()};
      continue;
    }
    const ByteSet& starts = e.kind == Element::Kind::Rule ? grammar_->first(e.index) : grammar_->set(e.index);
    if ((starts & plain_lead).any()) return {};
  }
  return bulk;
}

const Vocabulary::ClassTokens& Matcher::class_tokens(int32_t rule) {
  for (const auto& [r, tokens] : class_tokens_)
    if (r == rule) return *tokens;
  class_tokens_.emplace_back(rule, vocab_->class_tokens(*grammar_->char_class(rule)));
  return *class_tokens_.back().second;
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
  work_ = 0;
  if (const Bulk bulk = bulk_run(); bulk.room > 0) {
    const int32_t most = std::min(bulk.room, Vocabulary::kMaxPlainChars);
    if (bulk.rule == grammar_->string_char_rule()) {
      const auto plain = vocab_->plain_up_to(most);
      std::memcpy(mask.data(), plain.data(), plain.size_bytes());
    } else {
      const Vocabulary::ClassTokens& c = class_tokens(bulk.rule);
      for (size_t k = 0; k < c.ids.size() && c.chars[k] <= most; ++k)
        mask[size_t(c.ids[k]) / 32] |= 1u << (c.ids[k] % 32);
    }
    walk(*bulk.rest, mask);
  } else {
    walk(vocab_->all_tokens(), mask);
  }
}

}  // namespace hearth::grammar
