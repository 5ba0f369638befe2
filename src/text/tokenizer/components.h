// The pieces of a tokenizer.json pipeline: normalizers, pre-tokenizers,
// models, post-processors and decoders. Internal to src/text/tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/regex.h"

namespace hearth::text::detail {

using json = nlohmann::json;

// Token ids go up to this (the id -> token table is as long as the largest
// id): 16 times the largest vocabulary in use (Gemma 3's 262k), and a bound
// on what a malformed file can make the loader allocate.
constexpr int64_t kMaxTokenId = (int64_t{1} << 22) - 1;

// Hash map keyed by std::string that accepts std::string_view lookups.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// ---------------------------------------------------------------- normalizers
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};
std::unique_ptr<Normalizer> make_normalizer(const json& config);  // null for JSON null

// ------------------------------------------------------------- pre-tokenizers
// Takes pre-tokens one at a time, in order. The pipeline hands each piece on
// as it is cut, so a long prompt's pieces never all exist at once.
using PieceSink = std::function<void(std::string_view)>;

// A pre-tokenizer splits a piece of text into smaller pieces (and may
// rewrite them, like ByteLevel). `section_index` is the index of the
// added-token section the text came from (Metaspace's prepend_scheme "first").
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void split(std::string_view piece, int section_index, const PieceSink& out) const = 0;
};
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& config);

// Split pattern behaviours (the Rust `SplitDelimiterBehavior`).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
// Splits `text` at the matches of `re` (or, with invert, at the text between them).
void split_with(const Regex& re, std::string_view text, SplitBehavior behavior, bool invert, const PieceSink& out);

// The GPT-2 byte ↔ unicode-character table.
const std::string& byte_to_unicode(uint8_t b);  // UTF-8 of the mapped character
int unicode_to_byte(char32_t cp);                // -1 if not a mapped character

// --------------------------------------------------------------------- models

// An open-addressing string → id map (the vocabularies are large and looked
// up per character; std::unordered_map's node chasing dominated load time).
class TokenIndex {
 public:
  void reserve(size_t n);
  void set(std::string_view key, int32_t id);  // inserts or overwrites
  int32_t find(std::string_view key) const;    // -1 if absent
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0, length = UINT32_MAX;  // length UINT32_MAX: empty
    int32_t id = -1;
  };
  void grow();
  std::string arena_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// What the loader pulled out of model.vocab / model.merges while parsing
// (streamed, so the big arrays never become JSON DOM nodes).
struct ModelData {
  bool has_vocab_object = false, has_vocab_array = false, has_merges = false;
  std::vector<std::pair<std::string, int64_t>> vocab_object;  // BPE / WordPiece
  std::vector<std::pair<std::string, double>> vocab_array;    // Unigram
  std::vector<std::pair<std::string, std::string>> merges;    // already split in two
};
// Parses tokenizer.json, streaming model.vocab and model.merges into `data`.
json parse_tokenizer_json(std::string_view text, ModelData& data);

class Model {
 public:
  virtual ~Model() = default;
  // Encodes one pre-token, appending its ids.
  virtual void encode_word(std::string_view word, std::vector<int32_t>& ids) const = 0;
  // Called once a section's words are encoded; its ids start at `first`.
  virtual void end_section(std::vector<int32_t>& ids, size_t first) const {
    (void)ids;
    (void)first;
  }
  TokenIndex vocab;                   // token → id (the model's own vocabulary)
  std::vector<std::string> id_to_token;
  std::optional<int32_t> unk_id;
  std::string end_of_word_suffix;     // BPE (decode replaces it by a space)
};
std::unique_ptr<Model> make_model(const json& config, ModelData& data);
// A tiktoken rank model over raw bytes.
std::unique_ptr<Model> make_tiktoken_model(std::vector<std::pair<std::string, int32_t>> ranks);

// ------------------------------------------------------------ post-processors
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
  // Every id it may add (checked against the vocabulary once loaded).
  virtual std::vector<int32_t> added_ids() const = 0;
};
std::unique_ptr<PostProcessor> make_post_processor(const json& config,
                                                   const std::function<std::optional<int32_t>(std::string_view)>& lookup);

// ------------------------------------------------------------------- decoders
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // The exact bytes one (non-added) token stands for in the middle of a
  // text: the per-token steps of decode_chain without the lossy UTF-8 repair
  // and without what only applies at the start (stripping a leading space).
  // Identity unless the decoder maps pieces to other bytes.
  virtual void piece_bytes(std::string& piece) const { (void)piece; }
};
// `added_tokens` are passed through verbatim by the ByteLevel decoder.
std::unique_ptr<Decoder> make_decoder(const json& config,
                                      const std::shared_ptr<const Vocab>& added_tokens);
// Decodes concatenated raw bytes (tiktoken).
std::unique_ptr<Decoder> make_bytes_decoder(const std::shared_ptr<const Vocab>& added_tokens);

// clean_up_tokenization of transformers (" ." → "." and friends).
std::string clean_up_tokenization(std::string_view text);

// Lossy UTF-8: invalid sequences become U+FFFD (TextDecoder semantics).
std::string utf8_lossy(std::string_view bytes);

}  // namespace hearth::text::detail
