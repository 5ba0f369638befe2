// A byte-level context-free grammar for constrained decoding, and the
// builder that composes one from literals, sequences, choices and
// repetitions (json_schema.h adds JSON Schema values and tool-call objects).
//
// A grammar is a list of rules; a rule is a choice of alternatives; an
// alternative is a sequence of elements. An element is either a byte set
// (one byte out of a set) or a reference to a rule, each repeated between
// min and max times (max -1: unbounded). Working on bytes rather than
// characters lets a token end inside a multi-byte UTF-8 character. The
// matcher (matcher.h) runs it as a set of stacks, like llama.cpp's GBNF
// engine, so rules may be recursive (any JSON value, recursive $ref).
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hearth::grammar {

// What the server turns into a 400: an unsupported or invalid schema; the
// message names the feature and its JSON pointer.
struct GrammarError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using ByteSet = std::bitset<256>;
// Code points as sorted, disjoint ranges.
using CodePoints = std::vector<std::pair<char32_t, char32_t>>;

struct Element {
  enum class Kind : uint8_t { Bytes, Rule };
  Kind kind = Kind::Bytes;
  int32_t index = 0;  // Bytes: into Grammar::sets; Rule: the rule id
  int32_t min = 1, max = 1;
};

struct Rule {
  std::vector<std::vector<Element>> alternatives;
};

class Grammar {
 public:
  const Rule& rule(int32_t id) const { return rules_[size_t(id)]; }
  size_t rule_count() const { return rules_.size(); }
  const ByteSet& set(int32_t id) const { return sets_[size_t(id)]; }
  int32_t root() const { return root_; }
  // The rule of one character inside a JSON string, the one whose
  // unbounded repetition is the free-string state the vocabulary
  // short-cuts (-1 if the grammar has no strings).
  int32_t string_char_rule() const { return string_char_rule_; }
  // For a rule of one JSON string character out of a set (a pattern's
  // character class), the set: a plain character (written as itself, not
  // escaped) is taken exactly when it is in the set. nullptr for others.
  const CodePoints* char_class(int32_t rule) const {
    const size_t r = size_t(rule);
    return r < class_of_.size() && class_of_[r] >= 0 ? &classes_[size_t(class_of_[r])] : nullptr;
  }
  // The bytes a match of the rule can start with, and whether it can match
  // the empty string (computed by GrammarBuilder::build).
  const ByteSet& first(int32_t rule) const { return first_[size_t(rule)]; }
  const ByteSet& first(int32_t rule, int32_t alt) const { return alt_first_[size_t(rule)][size_t(alt)]; }
  bool nullable(int32_t rule) const { return nullable_[size_t(rule)]; }
  // Whether an element may match nothing (zero repetitions, or an empty
  // match of its rule).
  bool skippable(const Element& e) const { return e.min == 0 || (e.kind == Element::Kind::Rule && nullable(e.index)); }

 private:
  friend class GrammarBuilder;
  std::vector<Rule> rules_;
  std::vector<ByteSet> first_;
  std::vector<std::vector<ByteSet>> alt_first_;
  std::vector<bool> nullable_;
  std::vector<ByteSet> sets_;
  int32_t root_ = -1;
  int32_t string_char_rule_ = -1;
  std::vector<int32_t> class_of_;  // per rule: index into classes_, or -1
  std::vector<CodePoints> classes_;
};

// An expression under construction is a rule id.
using Expr = int32_t;

class GrammarBuilder {
 public:
  // A grammar larger than this, counting rules, alternatives and
  // elements, is refused with GrammarError: a schema whose grammar grows
  // past it (an enum of millions, a type list repeated at every level)
  // would hold memory and time no request should.
  static constexpr size_t kMaxSize = size_t(1) << 20;
  // Elements that may match nothing, in a row in one alternative: past
  // this, GrammarError. Each one is a stack the matcher may be in at once,
  // and reaching the last from the first costs a step each (a pattern of
  // thousands of ".?" would cost millions of steps a byte).
  static constexpr size_t kMaxSkippableRun = 64;

  Expr literal(std::string_view bytes);
  // A choice of byte strings, as a trie: strings that start alike share
  // their rules, so the matcher follows one stack, not one per string.
  Expr literals(std::vector<std::string> options);
  Expr sequence(const std::vector<Expr>& parts);
  Expr choice(const std::vector<Expr>& options);
  // `e` repeated between min and max times (max -1: unbounded). `e` must
  // not match the empty string when max > 1 (the matcher would loop).
  Expr repeat(Expr e, int32_t min, int32_t max);
  Expr bytes(const ByteSet& set, int32_t min = 1, int32_t max = 1);

  // A rule to be defined later (recursion, $ref): reserve, then define.
  Expr reserve();
  void define(Expr rule, std::vector<std::vector<Element>> alternatives);
  static Element ref(Expr e, int32_t min = 1, int32_t max = 1) { return {Element::Kind::Rule, e, min, max}; }
  Element byte_element(const ByteSet& set, int32_t min = 1, int32_t max = 1);

  // Memoized shared pieces (json_rules.cpp) use these slots.
  Expr& cached(std::string_view key);
  void set_string_char_rule(Expr e) { grammar_->string_char_rule_ = e; }
  void set_char_class(Expr rule, CodePoints set);

  // Finishes the grammar with `root` as its start; the builder is spent.
  std::shared_ptr<const Grammar> build(Expr root);

 private:
  int32_t set_id(const ByteSet& set);
  void grow(size_t n);  // counts n more toward kMaxSize
  Expr trie(std::span<const std::string> options, size_t depth);
  void refuse_long_skippable_runs() const;  // GrammarError
  void analyze();  // Grammar::first_ and nullable_
  void refuse_left_recursion() const;  // GrammarError
  std::shared_ptr<Grammar> grammar_ = std::make_shared<Grammar>();
  std::unordered_map<std::string, Expr> cache_;
  std::unordered_map<ByteSet, int32_t> set_ids_;  // into grammar_->sets_
  size_t size_ = 0;
};

ByteSet byte_range(unsigned char lo, unsigned char hi);
ByteSet single_byte(unsigned char c);

}  // namespace hearth::grammar
