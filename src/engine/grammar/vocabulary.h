// A tokenizer's vocabulary as the grammar sees it: each token id's exact
// bytes, organized as byte tries so a token mask is one walk that shares
// every common prefix and drops a whole subtree at its first refused byte.
// Built once per tokenizer and shared, immutable, by all requests.
//
// "Plain" tokens are precomputed the way XGrammar precomputes its
// context-independent tokens: UTF-8 characters with no '"', '\' or
// control byte (the last one possibly cut short), which a free JSON string
// at a character boundary accepts whatever the state around it. Inside such a string the mask takes them in bulk (by
// character count, for strings with a maxLength) and walks only the other
// tokens. A pattern's character class has its own plain tokens (those
// whose characters are all in the class), computed on first use and kept.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/grammar/grammar.h"

namespace hearth::text {
class Tokenizer;
}

namespace hearth::grammar {

// Tokens sorted by their bytes, as trie nodes in depth-first order: node i
// is reached by byte[i] from its parent at depth[i] - 1 and its subtree
// ends before end[i]; the tokens whose bytes end at node i are
// tokens[first[i] .. first[i + 1]).
struct TokenTrie {
  std::vector<uint8_t> byte;
  std::vector<int32_t> depth, end, first, tokens;
  int32_t max_depth = 0;
  size_t size() const { return byte.size(); }
};

class Vocabulary {
 public:
  // Plain tokens of more characters than this are walked, not bulk-added
  // (a bitmask per character count costs vocab/8 bytes each: 2.4 MB for
  // Qwen3's 151k tokens; longer plain tokens are rare runs of spaces or
  // punctuation).
  static constexpr int32_t kMaxPlainChars = 128;

  // bytes[id] is token id's byte string; "" marks a token the grammar never
  // allows (special and added tokens, ids the tokenizer does not have).
  explicit Vocabulary(std::vector<std::string> bytes);
  // Special and added tokens (EOS, <tool_call>, ...) are never allowed
  // inside a grammar; a literal such as "<tool_call>" is spelled with
  // ordinary tokens. The engine allows the stop ids itself.
  static std::shared_ptr<const Vocabulary> from_tokenizer(const text::Tokenizer& tokenizer);

  size_t size() const { return bytes_.size(); }
  const std::string& bytes(int32_t id) const { return bytes_[size_t(id)]; }
  size_t mask_words() const { return (size() + 31) / 32; }

  const TokenTrie& all_tokens() const { return all_; }
  const TokenTrie& non_plain_tokens() const { return non_plain_; }
  // Bitmask (mask_words() words) of the plain tokens of at most `chars`
  // characters, chars in [1, kMaxPlainChars].
  std::span<const uint32_t> plain_up_to(int32_t chars) const;

  // The plain tokens of 1..kMaxPlainChars characters that are all in
  // `set` (the last maybe cut short, but the start of one in the set),
  // ascending by character count; and when the class takes most of the
  // vocabulary, the trie of all the other tokens. Computed once per set (a
  // pass over the vocabulary) and kept for the next requests, the most
  // recent sets only.
  struct ClassTokens {
    std::vector<int32_t> ids, chars;
    bool has_others = false;
    TokenTrie others;
  };
  std::shared_ptr<const ClassTokens> class_tokens(const CodePoints& set) const;

 private:
  static constexpr size_t kKeptClasses = 32;
  std::vector<std::string> bytes_;
  TokenTrie all_, non_plain_;
  std::vector<uint32_t> plain_;  // kMaxPlainChars cumulative bitmasks, one after another
  struct ClassCache {
    std::mutex mutex;
    std::vector<std::pair<CodePoints, std::shared_ptr<const ClassTokens>>> sets;  // oldest first
  };
  std::unique_ptr<ClassCache> classes_ = std::make_unique<ClassCache>();
};

// Characters in `bytes` if it is plain JSON-string characters (valid
// UTF-8, no '"', '\' or byte below 0x20), the last of which may be cut
// short (a token that ends inside a character), else -1.
int32_t plain_string_chars(std::string_view bytes);

}  // namespace hearth::grammar
