// Tokenizers: Hugging Face tokenizer.json (BPE — byte-level and
// SentencePiece-style —, WordPiece, Unigram, with their normalizers,
// pre-tokenizers, post-processors and decoders), tokenizer_config.json, and
// tiktoken rank files. Encoding follows the reference port
// @huggingface/tokenizers token for token; see docs/tokenizers.md.
//
// A Tokenizer is immutable after loading and safe to use from many threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearth::text {

class StreamDecoder;

class Tokenizer {
 public:
  // Loads tokenizer.json; if tokenizer_config.json sits beside it, reads it
  // too. Throws std::runtime_error naming the file on bad input.
  static std::unique_ptr<Tokenizer> load(const std::filesystem::path& tokenizer_json);
  // Parses tokenizer.json (and optionally tokenizer_config.json) text.
  // `name` is used in error messages.
  static std::unique_ptr<Tokenizer> from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                                              const std::string& name = "tokenizer.json");
  // A tiktoken rank file (one "base64-token rank" per line), the
  // pre-tokenizer regex (Oniguruma/PCRE syntax) and the special tokens with
  // their ids. Throws std::runtime_error naming the file on bad input.
  static std::unique_ptr<Tokenizer> load_tiktoken(const std::filesystem::path& rank_file, std::string_view pattern,
                                                  const std::vector<std::pair<std::string, int32_t>>& special_tokens);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Invalid UTF-8 in `text` is replaced by U+FFFD first (as a JavaScript
  // TextDecoder would), so any byte string can be encoded.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::string id_to_token(int32_t id) const;  // "" if out of range
  size_t vocab_size() const;                  // including added tokens
  std::optional<int32_t> bos_id() const;      // from tokenizer_config.json
  std::optional<int32_t> eos_id() const;
  std::string bos_token() const;
  std::string eos_token() const;
  std::optional<int32_t> unk_id() const;  // tokenizer_config.json's unk_token, else the model's
  std::optional<int32_t> pad_id() const;  // tokenizer_config.json's pad_token

  // True for added tokens marked special (and additional_special_tokens).
  bool is_special(int32_t id) const;
  // True for tokens of added_tokens (special or not) and tiktoken's specials.
  bool is_added(int32_t id) const;
  // The exact bytes a model-vocabulary token adds to a text in the middle of
  // a sequence: a byte-level piece mapped back to its bytes, SentencePiece's
  // "\u2581" as a space, "<0xNN>" as that byte; partial UTF-8 is kept as is.
  // For an added token, its content. "" if out of range.
  std::string token_bytes(int32_t id) const;

  struct Impl;

 private:
  friend class StreamDecoder;
  const Impl& impl() const { return *impl_; }
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Fed one id at a time; returns only complete UTF-8 text; the concatenation
// of push()es and flush() equals decode(all ids).
class StreamDecoder {
 public:
  static constexpr size_t kMaxHeld = 32;  // ids after the last cut before the window restarts

  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  std::string push(int32_t id);
  std::string flush();
  // The ids each push decodes again: what a held run costs per id.
  size_t window() const { return ids_.size(); }

 private:
  static constexpr size_t kTail = 4;      // ids a restart keeps: a held character's bytes and one more
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  size_t last_cut(size_t from, std::string& context) const;
  void keep_tail(std::string_view held);

  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;  // the window being re-decoded
  std::string prefix_;        // decode(ids_[0, prefix_index_)) as emitted
  size_t prefix_index_ = 0;
  size_t emitted_ = 0;        // bytes of decode(ids_) already returned
};

}  // namespace hearth::text
