// Whisper's tokenizer, as openai-whisper's whisper/tokenizer.py defines it:
// GPT-2 byte-level BPE over the text tokens, then the special tokens in
// openai-whisper's fixed order (<|endoftext|>, <|startoftranscript|>, one
// <|xx|> per language, the task and control tokens, 1501 timestamps
// <|0.00|> … <|30.00|>), whose ids the model was trained on. The text
// tokens come from a .tiktoken rank file (what openai-whisper ships) or a
// Hugging Face checkpoint's tokenizer.json; either way the results are
// openai-whisper's: encode() is tiktoken's encode_ordinary, so special-token
// strings in the text are plain text.
//
// A WhisperTokenizer is immutable after loading and safe to use from many
// threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::text {

class Tokenizer;

// The code of a language openai-whisper knows, by code or name, any case
// ("de", "German", "castilian" -> "es"); empty if none. Whether a model has
// it is WhisperTokenizer::language_token's to say.
std::string_view whisper_language_code(std::string_view language);

class WhisperTokenizer {
 public:
  // `model_vocab_size` is the checkpoint's n_vocab: 51864 for English-only
  // models (gpt2.tiktoken), 51865 for multilingual ones with 99 languages,
  // 51866 for large-v3 and turbo with 100 (multilingual.tiktoken). The number
  // of language tokens follows from it as in openai-whisper's model.py, and
  // the rank file plus the specials must add up to it. Both loaders throw
  // std::runtime_error naming the file on bad input.
  static WhisperTokenizer load_tiktoken(const std::filesystem::path& rank_file,
                                        int32_t model_vocab_size);
  // tokenizer.json of a Hugging Face Whisper checkpoint. Its added tokens
  // must sit at openai-whisper's ids; the timestamps may be missing (older
  // files), they are implied after <|notimestamps|>.
  static WhisperTokenizer load_hf(const std::filesystem::path& tokenizer_json,
                                  int32_t model_vocab_size);
  // A checkpoint directory's vocabulary: its .tiktoken file if it has one
  // (as `hearth mkmodel --arch whisper` writes), else its tokenizer.json.
  static WhisperTokenizer load_dir(const std::filesystem::path& model_dir,
                                   int32_t model_vocab_size);

  WhisperTokenizer(WhisperTokenizer&&) noexcept;
  WhisperTokenizer& operator=(WhisperTokenizer&&) noexcept;
  ~WhisperTokenizer();

  // Invalid UTF-8 is replaced by U+FFFD first.
  std::vector<int32_t> encode(std::string_view text) const;
  // Tokenizer.decode: timestamps are dropped, other specials kept as their
  // text ("<|en|>"); invalid UTF-8 in the joined bytes becomes U+FFFD.
  // Throws std::out_of_range for an id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids) const;
  // Tokenizer.decode_with_timestamps: timestamps too, as "<|1.08|>".
  std::string decode_with_timestamps(std::span<const int32_t> ids) const;
  // The raw bytes of a text token (possibly partial UTF-8) or a special's
  // text; "" if out of range.
  std::string token_bytes(int32_t id) const;

  int32_t eot() const { return eot_; }
  int32_t sot() const { return eot_ + 1; }
  int32_t translate() const { return sot() + 1 + num_languages_; }
  int32_t transcribe() const { return translate() + 1; }
  int32_t sot_lm() const { return translate() + 2; }
  int32_t sot_prev() const { return translate() + 3; }
  int32_t no_speech() const { return translate() + 4; }
  int32_t no_timestamps() const { return translate() + 5; }
  int32_t timestamp_begin() const { return translate() + 6; }
  int32_t vocab_size() const { return timestamp_begin() + kTimestamps; }
  bool multilingual() const { return multilingual_; }
  int num_languages() const { return num_languages_; }

  // The <|xx|> token for a language code or name ("en", "English",
  // "castilian": openai-whisper's LANGUAGES and TO_LANGUAGE_CODE, any case),
  // or -1 if the model has no such language.
  int32_t language_token(std::string_view language) const;
  // "en" for <|en|>'s id; "" for any other id.
  std::string_view language_code(int32_t token) const;
  // Tokenizer.sot_sequence as get_tokenizer() sets it up: [sot] for an
  // English-only model; else [sot, language, task] with "en" and "transcribe"
  // when empty. Throws std::invalid_argument for an unknown language or a
  // task other than "transcribe" / "translate".
  std::vector<int32_t> sot_sequence(std::string_view language = {},
                                    std::string_view task = {}) const;
  // Tokenizer.non_speech_tokens: what to suppress so that speaker tags and
  // annotations ("♪♪", "[DAVID]", "( SPEAKING … )") are not sampled. Sorted.
  const std::vector<int32_t>& non_speech_tokens() const { return non_speech_; }

  static constexpr int32_t kTimestamps = 1501;  // 0.00 … 30.00 s in 0.02 s steps

 private:
  WhisperTokenizer(std::unique_ptr<const Tokenizer> text, int32_t model_vocab_size,
                   const std::string& name);

  std::unique_ptr<const Tokenizer> text_;  // the text tokens only, no specials
  int32_t eot_ = 0;                        // also the number of text tokens
  int num_languages_ = 0;
  bool multilingual_ = false;
  std::vector<int32_t> non_speech_;
};

}  // namespace hearth::text
