// One request's position in a grammar, advanced token by token, and the
// mask of the tokens that may come next.
//
// The position is a set of parse stacks (several at once where the grammar
// is ambiguous so far, e.g. an optional space or a choice whose options
// start alike). A stack is a chain of frames, each "at element pos of
// alternative alt of rule, repeated count times so far"; its top waits on
// a byte set or on a rule. A rule is entered only when a byte comes that
// it can start with (Grammar::first), and then only the alternatives that
// byte fits, so a string's eleven kinds of character cost one stack, not
// eleven. Frames live in an arena and point to their parent, so stacks
// share their common bottom and advancing one byte only adds frames. The
// arena is compacted when it has grown well past what the stacks still use.
// A grammar that keeps more than kMaxStacks stacks at once (a very
// ambiguous schema: anyOf of thousands of alike options, nested bounded
// counts) throws GrammarError: each token's mask costs in proportion to them.
// So does a mask or token that takes more than kMaxWork steps (stacks
// entered or left): the engine steps every request together, and one
// request's mask must not hold the others for seconds.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/vocabulary.h"

namespace hearth::grammar {

class Matcher {
 public:
  static constexpr size_t kMaxStacks = 4096;
  static constexpr int64_t kMaxWork = int64_t(1) << 26;

  // vocabulary may be null for byte-level use (accept_bytes only).
  // max_work: the steps a mask or token may take (tests set less).
  explicit Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary = nullptr,
                   int64_t max_work = kMaxWork);

  // Advances over the token's bytes; false (and no change) if the grammar
  // refuses them. Tokens outside the vocabulary or without bytes are refused.
  bool accept(int32_t token);
  // The same for a byte string: all of it or nothing.
  bool accept_bytes(std::string_view bytes);

  // The output so far is a whole sentence of the grammar (it may end here).
  bool is_complete() const { return complete_; }
  // Nothing can follow: the output must end here.
  bool must_end() const { return complete_ && tops_.empty(); }

  // Sets bit id (word id / 32, bit id % 32) for every token that may come
  // next and clears the others; `mask` has vocabulary().mask_words() words.
  // End-of-sequence is not the vocabulary's: allow it when is_complete().
  void fill_mask(std::span<uint32_t> mask);

  const Vocabulary& vocabulary() const { return *vocab_; }

 private:
  struct Frame {
    int32_t rule, alt, pos, count, parent;
  };
  // A set of stacks (their top frames) and whether the root may end there.
  struct Stacks {
    std::vector<int32_t> tops;
    bool complete = false;
  };
  // The tops of the Stacks being built (`of`) by stack hash, once there
  // are many: a lookup in place of a comparison with every top. Scratch,
  // so a copy of the matcher (one per token in tests) starts without it.
  struct TopIndex {
    std::unordered_multimap<uint64_t, int32_t> by_hash;
    const Stacks* of = nullptr;
    TopIndex() = default;
    TopIndex(const TopIndex&) {}
    TopIndex& operator=(const TopIndex&) {
      of = nullptr;
      return *this;
    }
  };

  const Element& element(const Frame& f) const {
    return grammar_->rule(f.rule).alternatives[size_t(f.alt)][size_t(f.pos)];
  }
  // Adds to `out` every stack reachable from frame f without reading a
  // byte: leaving finished rules, skipping optional parts.
  void expand(Frame f, Stacks& out);
  // Reads `byte` at frame f (at index self in the arena, or -1 if it is
  // not there yet), entering rules that can start with it; entering: f was
  // just entered, so its optional elements may still be skipped.
  void take(Frame f, int32_t self, uint8_t byte, Stacks& out, bool entering);
  void add_top(Frame f, Stacks& out);
  void count_step();  // GrammarError past kMaxWork
  uint64_t stack_hash(int32_t top) const;  // of its frames' fields, down to the root
  bool same_stack(int32_t a, int32_t b) const;
  // The stacks after reading `byte` from each of `from`.
  void advance(const std::vector<int32_t>& from, uint8_t byte, Stacks& out);
  bool step(uint8_t byte);  // advance the matcher itself; false if refused
  void compact();

  // The mask pieces (matcher_mask.cpp). A run of string characters that
  // takes plain tokens in bulk: its rule (the JSON string character, or a
  // pattern's character class) and its room in characters; room 0: none.
  struct Bulk {
    int32_t rule = -1, room = 0;
    const TokenTrie* rest = nullptr;  // the tokens left to walk
  };
  Bulk bulk_run();
  // A class rule's plain tokens (Vocabulary::class_tokens), looked up once.
  const Vocabulary::ClassTokens& class_tokens(int32_t rule);
  void walk(const TokenTrie& trie, std::span<uint32_t> mask);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocab_;
  std::vector<Frame> frames_;
  std::vector<int32_t> tops_;
  bool complete_ = false;
  size_t compacted_size_ = 0;   // frames_.size() after the last compact()
  int64_t work_ = 0, max_work_;  // steps since the mask or token began, and the most allowed
  Stacks next_;                 // scratch for step()
  TopIndex top_index_;          // scratch for add_top()
  std::vector<Stacks> levels_;  // scratch for walk(): the stacks at each trie depth
  std::vector<size_t> marks_;   // frames_.size() after each level was made
  std::vector<std::pair<int32_t, std::shared_ptr<const Vocabulary::ClassTokens>>> class_tokens_;  // by rule
};

}  // namespace hearth::grammar
