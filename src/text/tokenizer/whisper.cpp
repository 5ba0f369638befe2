// WhisperTokenizer: openai-whisper's special-token layout and its Tokenizer
// helpers over a text-only hearth::text::Tokenizer (tiktoken ranks or a
// tokenizer.json stripped of its added tokens, so that neither can turn
// "<|en|>" in a text into a special).
#include "text/tokenizer/whisper.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/read_file.h"
#include "text/tokenizer/tokenizer.h"
#include "text/unicode.h"

namespace hearth::text {

namespace {

// openai-whisper's LANGUAGES, in its order: the <|xx|> tokens follow it.
struct Language {
  const char* code;
  const char* name;
};
constexpr std::array<Language, 100> kLanguages{{
    {"en", "english"},        {"zh", "chinese"},     {"de", "german"},        {"es", "spanish"},
    {"ru", "russian"},        {"ko", "korean"},      {"fr", "french"},        {"ja", "japanese"},
    {"pt", "portuguese"},     {"tr", "turkish"},     {"pl", "polish"},        {"ca", "catalan"},
    {"nl", "dutch"},          {"ar", "arabic"},      {"sv", "swedish"},       {"it", "italian"},
    {"id", "indonesian"},     {"hi", "hindi"},       {"fi", "finnish"},       {"vi", "vietnamese"},
    {"he", "hebrew"},         {"uk", "ukrainian"},   {"el", "greek"},         {"ms", "malay"},
    {"cs", "czech"},          {"ro", "romanian"},    {"da", "danish"},        {"hu", "hungarian"},
    {"ta", "tamil"},          {"no", "norwegian"},   {"th", "thai"},          {"ur", "urdu"},
    {"hr", "croatian"},       {"bg", "bulgarian"},   {"lt", "lithuanian"},    {"la", "latin"},
    {"mi", "maori"},          {"ml", "malayalam"},   {"cy", "welsh"},         {"sk", "slovak"},
    {"te", "telugu"},         {"fa", "persian"},     {"lv", "latvian"},       {"bn", "bengali"},
    {"sr", "serbian"},        {"az", "azerbaijani"}, {"sl", "slovenian"},     {"kn", "kannada"},
    {"et", "estonian"},       {"mk", "macedonian"},  {"br", "breton"},        {"eu", "basque"},
    {"is", "icelandic"},      {"hy", "armenian"},    {"ne", "nepali"},        {"mn", "mongolian"},
    {"bs", "bosnian"},        {"kk", "kazakh"},      {"sq", "albanian"},      {"sw", "swahili"},
    {"gl", "galician"},       {"mr", "marathi"},     {"pa", "punjabi"},       {"si", "sinhala"},
    {"km", "khmer"},          {"sn", "shona"},       {"yo", "yoruba"},        {"so", "somali"},
    {"af", "afrikaans"},      {"oc", "occitan"},     {"ka", "georgian"},      {"be", "belarusian"},
    {"tg", "tajik"},          {"sd", "sindhi"},      {"gu", "gujarati"},      {"am", "amharic"},
    {"yi", "yiddish"},        {"lo", "lao"},         {"uz", "uzbek"},         {"fo", "faroese"},
    {"ht", "haitian creole"}, {"ps", "pashto"},      {"tk", "turkmen"},       {"nn", "nynorsk"},
    {"mt", "maltese"},        {"sa", "sanskrit"},    {"lb", "luxembourgish"}, {"my", "myanmar"},
    {"bo", "tibetan"},        {"tl", "tagalog"},     {"mg", "malagasy"},      {"as", "assamese"},
    {"tt", "tatar"},          {"haw", "hawaiian"},   {"ln", "lingala"},       {"ha", "hausa"},
    {"ba", "bashkir"},        {"jw", "javanese"},    {"su", "sundanese"},     {"yue", "cantonese"},
}};

// TO_LANGUAGE_CODE's aliases beyond the names above.
constexpr std::array<Language, 12> kAliases{{
    {"my", "burmese"},
    {"ca", "valencian"},
    {"nl", "flemish"},
    {"ht", "haitian"},
    {"lb", "letzeburgesch"},
    {"ps", "pushto"},
    {"pa", "panjabi"},
    {"ro", "moldavian"},
    {"ro", "moldovan"},
    {"si", "sinhalese"},
    {"es", "castilian"},
    {"zh", "mandarin"},
}};

// The specials between <|startoftranscript|>'s languages and the timestamps.
constexpr std::array<const char*, 6> kControl{"<|translate|>", "<|transcribe|>",
                                              "<|startoflm|>", "<|startofprev|>",
                                              "<|nospeech|>",  "<|notimestamps|>"};

// Index into kLanguages of a code or name (ASCII case-insensitive), or -1.
int language_index(std::string_view language) {
  std::string lower(language);
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  for (size_t i = 0; i < kLanguages.size(); ++i)
    if (lower == kLanguages[i].code) return static_cast<int>(i);
  for (size_t i = 0; i < kLanguages.size(); ++i)
    if (lower == kLanguages[i].name) return static_cast<int>(i);
  for (const auto& a : kAliases)
    if (lower == a.name) return language_index(a.code);
  return -1;
}

// The GPT-2 pre-tokenizer pattern openai-whisper gives tiktoken.
constexpr const char* kPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace

WhisperTokenizer::WhisperTokenizer(std::unique_ptr<const Tokenizer> text, int32_t model_vocab_size,
                                   const std::string& name)
    : text_(std::move(text)) {
  // openai-whisper's model.py: is_multilingual = n_vocab >= 51865,
  // num_languages = n_vocab - 51765 - int(is_multilingual).
  multilingual_ = model_vocab_size >= 51865;
  num_languages_ = model_vocab_size - 51765 - (multilingual_ ? 1 : 0);
  if (num_languages_ < 0 || num_languages_ > static_cast<int>(kLanguages.size()))
    throw std::runtime_error(name + ": " + std::to_string(model_vocab_size) +
                             " is not a Whisper vocabulary size");
  eot_ = static_cast<int32_t>(text_->vocab_size());
  if (vocab_size() != model_vocab_size)
    throw std::runtime_error(name + ": " + std::to_string(eot_) + " text tokens and " +
                             std::to_string(num_languages_) + " languages make " +
                             std::to_string(vocab_size()) + " tokens, not the model's " +
                             std::to_string(model_vocab_size) + " (wrong vocabulary file?)");

  // Tokenizer.non_speech_tokens, symbol for symbol.
  const std::vector<std::string> symbols{
      "\"",  "#",  "(",  ")",   "*",   "+",   "/",   ":",  ";",   "<",  "=",  ">",
      "@",   "[",  "\\", "]",   "^",   "_",   "`",   "{",  "|",   "}",  "~",  "「",
      "」",  "『", "』", "<<",  ">>",  "<<<", ">>>", "--", "---", "-(", "-[", "('",
      "(\"", "((", "))", "(((", ")))", "[[",  "]]",  "{{", "}}",  "♪♪", "♪♪♪"};
  // U+2640-U+267F: suppressing the first token is safe even when it is split.
  const std::vector<std::string> miscellaneous{"♩", "♪", "♫", "♬", "♭", "♮", "♯"};
  std::set<int32_t> result{encode(" -")[0], encode(" '")[0]};
  for (const auto& s : symbols)
    for (const auto& tokens : {encode(s), encode(" " + s)})
      if (tokens.size() == 1) result.insert(tokens[0]);
  for (const auto& s : miscellaneous)
    for (const auto& tokens : {encode(s), encode(" " + s)}) result.insert(tokens[0]);
  non_speech_.assign(result.begin(), result.end());
}

WhisperTokenizer::WhisperTokenizer(WhisperTokenizer&&) noexcept = default;
WhisperTokenizer& WhisperTokenizer::operator=(WhisperTokenizer&&) noexcept = default;
WhisperTokenizer::~WhisperTokenizer() = default;

WhisperTokenizer WhisperTokenizer::load_tiktoken(const std::filesystem::path& rank_file,
                                                 int32_t model_vocab_size) {
  return WhisperTokenizer(Tokenizer::load_tiktoken(rank_file, kPattern, {}), model_vocab_size,
                          rank_file.string());
}

WhisperTokenizer WhisperTokenizer::load_dir(const std::filesystem::path& model_dir,
                                            int32_t model_vocab_size) {
  for (const auto& entry : std::filesystem::directory_iterator(model_dir))
    if (entry.path().extension() == ".tiktoken") return load_tiktoken(entry.path(), model_vocab_size);
  if (std::filesystem::exists(model_dir / "tokenizer.json"))
    return load_hf(model_dir / "tokenizer.json", model_vocab_size);
  throw std::runtime_error(model_dir.string() +
                           " has no Whisper vocabulary (a .tiktoken file or tokenizer.json)");
}

WhisperTokenizer WhisperTokenizer::load_hf(const std::filesystem::path& tokenizer_json,
                                           int32_t model_vocab_size) {
  const std::string name = tokenizer_json.string();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(tokenizer_json));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(name + ": " + e.what());
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object() ||
      !j["model"].contains("vocab"))
    throw std::runtime_error(name + ": not a tokenizer.json (no model.vocab)");
  // The text tokens are the vocabulary below <|endoftext|>; the specials are
  // checked against openai-whisper's layout, then dropped from both the
  // vocabulary and the added tokens.
  std::vector<std::pair<std::string, int64_t>> added;
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const auto& a : j["added_tokens"])
      if (a.is_object() && a.contains("content") && a["content"].is_string() && a.contains("id") &&
          a["id"].is_number_integer())
        added.emplace_back(a["content"].get<std::string>(), a["id"].get<int64_t>());
  int64_t eot = -1;
  for (const auto& [content, id] : added)
    if (content == "<|endoftext|>") eot = id;
  auto& vocab = j["model"]["vocab"];
  if (eot < 0 && vocab.is_object() && vocab.contains("<|endoftext|>") &&
      vocab["<|endoftext|>"].is_number_integer())
    eot = vocab["<|endoftext|>"].get<int64_t>();
  if (eot < 0) throw std::runtime_error(name + ": no <|endoftext|> token");
  if (vocab.is_object()) {
    for (auto it = vocab.begin(); it != vocab.end();)
      it = it->is_number_integer() && it->get<int64_t>() >= eot ? vocab.erase(it) : std::next(it);
  }
  j["added_tokens"] = nlohmann::json::array();
  j["post_processor"] = nullptr;  // it would add <|startoftranscript|> … itself
  std::unique_ptr<const Tokenizer> text = Tokenizer::from_json(j.dump(), {}, name);
  if (static_cast<int64_t>(text->vocab_size()) != eot)
    throw std::runtime_error(name + ": the vocabulary below <|endoftext|> has gaps");
  WhisperTokenizer tok(std::move(text), model_vocab_size, name);
  for (const auto& [content, id] : added) {
    if (id < eot) continue;
    if (id >= tok.vocab_size() || tok.token_bytes(static_cast<int32_t>(id)) != content)
      throw std::runtime_error(name + ": added token " + content + " has the id " +
                               std::to_string(id) + ", not openai-whisper's");
  }
  return tok;
}

std::vector<int32_t> WhisperTokenizer::encode(std::string_view text) const {
  return text_->encode(text, false);
}

std::string WhisperTokenizer::decode(std::span<const int32_t> ids) const {
  std::vector<int32_t> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids)
    if (id < timestamp_begin()) kept.push_back(id);
  return decode_with_timestamps(kept);
}

std::string WhisperTokenizer::decode_with_timestamps(std::span<const int32_t> ids) const {
  // Like tiktoken: join every token's bytes, then decode them as UTF-8 once.
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw std::out_of_range("token id " + std::to_string(id) + " is not in the vocabulary");
    bytes += token_bytes(id);
  }
  return unicode::sanitize(bytes);
}

std::string WhisperTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  if (id < eot_) return text_->token_bytes(id);
  if (id == eot_) return "<|endoftext|>";
  if (id == sot()) return "<|startoftranscript|>";
  if (id < translate()) return std::string("<|") + kLanguages[id - sot() - 1].code + "|>";
  if (id < timestamp_begin()) return kControl[id - translate()];
  // f"<|{i * 0.02:.2f}|>" in whole hundredths, which is exact.
  const int hundredths = (id - timestamp_begin()) * 2;
  char buf[16];
  std::snprintf(buf, sizeof buf, "<|%d.%02d|>", hundredths / 100, hundredths % 100);
  return buf;
}

std::string_view whisper_language_code(std::string_view language) {
  const int i = language_index(language);
  return i < 0 ? std::string_view() : std::string_view(kLanguages[size_t(i)].code);
}

int32_t WhisperTokenizer::language_token(std::string_view language) const {
  const int i = language_index(language);
  return i >= 0 && i < num_languages_ ? sot() + 1 + i : -1;
}

std::string_view WhisperTokenizer::language_code(int32_t token) const {
  if (token <= sot() || token >= translate()) return {};
  return kLanguages[token - sot() - 1].code;
}

std::vector<int32_t> WhisperTokenizer::sot_sequence(std::string_view language,
                                                    std::string_view task) const {
  if (!multilingual_) return {sot()};  // get_tokenizer() drops language and task
  const int32_t lang = language_token(language.empty() ? "en" : language);
  if (lang < 0)
    throw std::invalid_argument("unsupported language \"" + std::string(language) + "\"");
  if (task.empty() || task == "transcribe") return {sot(), lang, transcribe()};
  if (task == "translate") return {sot(), lang, translate()};
  throw std::invalid_argument("task must be \"transcribe\" or \"translate\", not \"" +
                              std::string(task) + "\"");
}

}  // namespace hearth::text
