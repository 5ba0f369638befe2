#include "engine/grammar/grammar.h"

#include "engine/grammar/matcher.h"

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
  const auto [it, added] = set_ids_.try_emplace(set, int32_t(sets.size()));
  if (added) sets.push_back(set);
  return it->second;
}

Element GrammarBuilder::byte_element(const ByteSet& set, int32_t min, int32_t max) {
  return {Element::Kind::Bytes, set_id(set), min, max};
}

void GrammarBuilder::grow(size_t n) {
  size_ += n;
  if (size_ > kMaxSize)
    throw GrammarError("the schema's grammar is larger than " + std::to_string(kMaxSize) +
                       " rules and elements (a very large enum, or a schema repeated at every level)");
}

Expr GrammarBuilder::reserve() {
  grow(1);
  grammar_->rules_.emplace_back();
  return Expr(grammar_->rules_.size() - 1);
}

void GrammarBuilder::define(Expr rule, std::vector<std::vector<Element>> alternatives) {
  size_t n = alternatives.size();
  for (const auto& alt : alternatives) n += alt.size();
  grow(n);
  grammar_->rules_[size_t(rule)].alternatives = std::move(alternatives);
}

Expr GrammarBuilder::literal(std::string_view bytes) {
  std::vector<Element> seq;
  for (unsigned char c : bytes) seq.push_back(byte_element(single_byte(c)));
  const Expr e = reserve();
  define(e, {std::move(seq)});
  return e;
}

Expr GrammarBuilder::literals(std::vector<std::string> options) {
  if (options.empty()) throw std::logic_error("grammar: a choice of no literals");
  std::sort(options.begin(), options.end());
  options.erase(std::unique(options.begin(), options.end()), options.end());
  return trie(options, 0);
}

// options: sorted, distinct, sharing their first `depth` bytes. A node is a
// rule with one alternative per next byte: the bytes its options share
// from there, then the node below where they part (an empty alternative
// where one of them ends).
Expr GrammarBuilder::trie(std::span<const std::string> options, size_t depth) {
  std::vector<std::vector<Element>> alternatives;
  size_t i = 0;
  if (options[0].size() == depth) {  // sorted: the one that ends here comes first
    alternatives.emplace_back();
    i = 1;
  }
  while (i < options.size()) {
    const char c = options[i][depth];
    size_t j = i + 1;
    while (j < options.size() && options[j][depth] == c) ++j;
    const std::string &first = options[i], &last = options[j - 1];
    size_t shared = depth + 1;
    while (shared < first.size() && shared < last.size() && first[shared] == last[shared]) ++shared;
    std::vector<Element> alt;
    for (size_t k = depth; k < shared; ++k) alt.push_back(byte_element(single_byte(uint8_t(first[k]))));
    if (j - i > 1) alt.push_back(ref(trie(options.subspan(i, j - i), shared)));
    alternatives.push_back(std::move(alt));
    i = j;
  }
  const Expr e = reserve();
  define(e, std::move(alternatives));
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
  return cache_.try_emplace(std::string(key), -1).first->second;
}

void GrammarBuilder::refuse_left_recursion() const {
  // Rule r leads to rule s when an alternative of r can start with s: s is
  // its first element, or follows elements that can match nothing. A cycle
  // of these is a rule that can start with itself ({"anyOf": [{"$ref":
  // "#"}, ...]}), which the matcher would enter forever on the first byte.
  const Grammar& g = *grammar_;
  const size_t n = g.rules_.size();
  std::vector<std::vector<int32_t>> leads(n);
  for (size_t r = 0; r < n; ++r)
    for (const auto& alt : g.rules_[r].alternatives)
      for (const Element& e : alt) {
        if (e.kind == Element::Kind::Rule) leads[r].push_back(e.index);
        if (!g.skippable(e)) break;
      }
  // Depth-first, without recursion (rules nest as deep as the schema).
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(n, kNew);
  std::vector<std::pair<int32_t, size_t>> path;  // rule, next lead to follow
  for (size_t start = 0; start < n; ++start) {
    if (state[start] != kNew) continue;
    path.push_back({int32_t(start), 0});
    state[start] = kOnPath;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == leads[size_t(r)].size()) {
        state[size_t(r)] = kDone;
        path.pop_back();
        continue;
      }
      const int32_t s = leads[size_t(r)][next++];
      if (state[size_t(s)] == kOnPath)
        throw GrammarError(
            "the schema refers back to itself before anything is written (a $ref that is "
            "its own first part, directly or through anyOf, allOf or a sequence), which can "
            "never finish");
      if (state[size_t(s)] == kNew) {
        state[size_t(s)] = kOnPath;
        path.push_back({s, 0});
      }
    }
  }
}

void GrammarBuilder::refuse_long_skippable_runs() const {
  for (const auto& rule : grammar_->rules_)
    for (const auto& alt : rule.alternatives) {
      size_t run = 0;
      for (const Element& e : alt) {
        run = grammar_->skippable(e) ? run + 1 : 0;
        if (run > kMaxSkippableRun)
          throw GrammarError("the schema has more than " + std::to_string(kMaxSkippableRun) +
                             " optional parts in a row (a pattern like \".?.?.?...\"); write a bounded "
                             "repetition instead (\".{0,40}\")");
      }
    }
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
  refuse_left_recursion();
  refuse_long_skippable_runs();
  std::shared_ptr<const Grammar> done = std::move(grammar_);
  grammar_ = std::make_shared<Grammar>();
  cache_.clear();
  set_ids_.clear();
  size_ = 0;
  Matcher{done};  // its first stacks: too many (an anyOf of thousands alike) is a GrammarError now
  return done;
}

}  // namespace hearth::grammar
