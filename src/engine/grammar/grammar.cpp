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

Expr& GrammarBuilder::cached(std::string_view key) {
  for (auto& [k, e] : cache_)
    if (k == key) return e;
  cache_.emplace_back(std::string(key), -1);
  return cache_.back().second;
}

namespace {

// Which rules can match the empty string (a fixed point over the rules).
std::vector<bool> nullable_rules(const Grammar& g, size_t n) {
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : g.rule(int32_t(r)).alternatives) {
        const bool empty = std::all_of(alt.begin(), alt.end(), [&](const Element& e) {
          return e.min == 0 || (e.kind == Element::Kind::Rule && nullable[size_t(e.index)]);
        });
        if (empty) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

}  // namespace

std::shared_ptr<const Grammar> GrammarBuilder::build(Expr root) {
  grammar_->root_ = root;
  // A repeated rule that can match nothing would let the matcher count
  // repetitions forever without reading a byte: a bug in the composer.
  const auto& rules = grammar_->rules_;
  const auto nullable = nullable_rules(*grammar_, rules.size());
  for (const auto& rule : rules)
    for (const auto& alt : rule.alternatives)
      for (const auto& e : alt)
        if (e.kind == Element::Kind::Rule && e.max != 1 && nullable[size_t(e.index)])
          throw std::logic_error("grammar: a repeated rule matches the empty string");
  auto done = std::move(grammar_);
  grammar_ = std::make_shared<Grammar>();
  cache_.clear();
  return done;
}

}  // namespace hearth::grammar
