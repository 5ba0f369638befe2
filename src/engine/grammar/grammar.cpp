#include "engine/grammar/grammar.h"

#include <algorithm>

namespace hearth::grammar {

ByteSet byte_range(unsigned char lo, unsigned char hi) {
  ByteSet s;
  for (int c = lo; c <= hi; ++c) s.set(size_t(c));
  return s;
}

ByteSet single_byte(unsigned char c) { return byte_range(c, c); }

int32_t GrammarBuilder::set_id(const ByteSet& set) {
  auto& sets = grammar_->sets_;
  const auto it = std::find(sets.begin(), sets.end(), set);
  if (it != sets.end()) return int32_t(it - sets.begin());
  sets.push_back(set);
  return int32_t(sets.size() - 1);
}

Element GrammarBuilder::byte_element(const ByteSet& set, int32_t min, int32_t max) {
  return {Element::Kind::Bytes, set_id(set), min, max};
}

Expr GrammarBuilder::reserve() {
  grammar_->rules_.emplace_back();
  return Expr(grammar_->rules_.size() - 1);
}

void GrammarBuilder::define(Expr rule, std::vector<std::vector<Element>> alternatives) {
  grammar_->rules_[size_t(rule)].alternatives = std::move(alternatives);
}

Expr GrammarBuilder::literal(std::string_view bytes) {
  std::vector<Element> seq;
  for (unsigned char c : bytes) seq.push_back(byte_element(single_byte(c)));
  const Expr e = reserve();
  define(e, {std::move(seq)});
  return e;
}

Expr GrammarBuilder::sequence(const std::vector<Expr>& parts) {
  std::vector<Element> seq;
  for (Expr p : parts) seq.push_back(ref(p));
  const Expr e = reserve();
  define(e, {std::move(seq)});
  return e;
}

Expr GrammarBuilder::choice(const std::vector<Expr>& options) {
  std::vector<std::vector<Element>> alts;
  for (Expr o : options) alts.push_back({ref(o)});
  const Expr e = reserve();
  define(e, std::move(alts));
  return e;
}

Expr GrammarBuilder::repeat(Expr inner, int32_t min, int32_t max) {
  const Expr e = reserve();
  define(e, {{ref(inner, min, max)}});
  return e;
}

Expr GrammarBuilder::bytes(const ByteSet& set, int32_t min, int32_t max) {
  const Expr e = reserve();
  define(e, {{byte_element(set, min, max)}});
  return e;
}

void GrammarBuilder::set_char_class(Expr rule, CodePoints set) {
  Grammar& g = *grammar_;
  if (g.class_of_.size() <= size_t(rule)) g.class_of_.resize(size_t(rule) + 1, -1);
  g.class_of_[size_t(rule)] = int32_t(g.classes_.size());
  g.classes_.push_back(std::move(set));
}

Expr& GrammarBuilder::cached(std::string_view key) {
  for (auto& [k, e] : cache_)
    if (k == key) return e;
  cache_.emplace_back(std::string(key), -1);
  return cache_.back().second;
}

void GrammarBuilder::analyze() {
  // Fixed points over the rules: which can match the empty string, then
  // which bytes each can start with.
  Grammar& g = *grammar_;
  const size_t n = g.rules_.size();
  g.nullable_.assign(n, false);
  g.first_.assign(n, ByteSet());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (g.nullable_[r]) continue;
      for (const auto& alt : g.rules_[r].alternatives)
        if (std::all_of(alt.begin(), alt.end(), [&](const Element& e) { return g.skippable(e); })) {
          g.nullable_[r] = changed = true;
          break;
        }
    }
  }
  // An alternative's first bytes: its first element's, and the next one's
  // while the elements before can match nothing.
  auto alt_first = [&](const std::vector<Element>& alt) {
    ByteSet first;
    for (const Element& e : alt) {
      first |= e.kind == Element::Kind::Bytes ? g.sets_[size_t(e.index)] : g.first_[size_t(e.index)];
      if (!g.skippable(e)) break;
    }
    return first;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      ByteSet first = g.first_[r];
      for (const auto& alt : g.rules_[r].alternatives) first |= alt_first(alt);
      if (first != g.first_[r]) {
        g.first_[r] = first;
        changed = true;
      }
    }
  }
  g.alt_first_.assign(n, {});
  for (size_t r = 0; r < n; ++r)
    for (const auto& alt : g.rules_[r].alternatives) g.alt_first_[r].push_back(alt_first(alt));
}

std::shared_ptr<const Grammar> GrammarBuilder::build(Expr root) {
  grammar_->root_ = root;
  analyze();
  // A repeated rule that can match nothing would let the matcher count
  // repetitions forever without reading a byte: a bug in the composer.
  for (const auto& rule : grammar_->rules_)
    for (const auto& alt : rule.alternatives)
      for (const auto& e : alt)
        if (e.kind == Element::Kind::Rule && e.max != 1 && grammar_->nullable(e.index))
          throw std::logic_error("grammar: a repeated rule matches the empty string");
  auto done = std::move(grammar_);
  grammar_ = std::make_shared<Grammar>();
  cache_.clear();
  return done;
}

}  // namespace hearth::grammar
