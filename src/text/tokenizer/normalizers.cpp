// Normalizers of tokenizer.json.
#include <array>
#include <cctype>
#include <stdexcept>

#include "text/tokenizer/component_util.h"
#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(u::Form f) : form_(f) {}
  std::string normalize(std::string text) const override { return u::normalize(text, form_); }

 private:
  u::Form form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  std::string normalize(std::string text) const override { return u::to_lower(text); }
};

class StripAccentsNormalizer final : public Normalizer {
 public:
  std::string normalize(std::string text) const override { return u::remove_marks(text); }
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string p) : prepend_(std::move(p)) {}
  std::string normalize(std::string text) const override {
    if (text.empty()) return text;  // Rust and the reference both leave "" alone
    return prepend_ + text;
  }

 private:
  std::string prepend_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  explicit ReplaceNormalizer(const json& j) : pattern_(j.at("pattern")), content_(get_or<std::string>(j, "content", "")) {}
  std::string normalize(std::string text) const override { return pattern_.replace(text, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

std::string_view trim_white(std::string_view s, bool left, bool right) {
  if (left) {
    size_t i = 0;
    while (i < s.size()) {
      size_t j = i;
      if (!u::is_js_space(u::next(s, j))) break;
      i = j;
    }
    s = s.substr(i);
  }
  if (right) s = u::js_trim_end(s);
  return s;
}

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool l, bool r) : left_(l), right_(r) {}
  std::string normalize(std::string text) const override { return std::string(trim_white(text, left_, right_)); }

 private:
  bool left_, right_;
};

bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

class BertNormalizer final : public Normalizer {
 public:
  explicit BertNormalizer(const json& j)
      : clean_text_(get_or<bool>(j, "clean_text", true)),
        chinese_(get_or<bool>(j, "handle_chinese_chars", true)),
        lowercase_(get_or<bool>(j, "lowercase", true)) {
    if (j.contains("strip_accents") && !j["strip_accents"].is_null())
      strip_accents_ = j["strip_accents"].get<bool>();
    else
      strip_accents_ = lowercase_;
  }
  std::string normalize(std::string text) const override {
    if (clean_text_) {
      std::string out;
      for (size_t i = 0; i < text.size();) {
        const char32_t cp = u::next(text, i);
        if (cp == 0 || cp == 0xFFFD) continue;
        if (cp != '\t' && cp != '\n' && cp != '\r' && u::is_control_like(cp)) continue;
        if (u::is_js_space(cp))
          out.push_back(' ');
        else
          u::append(out, cp);
      }
      text = std::move(out);
    }
    if (chinese_) {
      std::string out;
      for (size_t i = 0; i < text.size();) {
        const char32_t cp = u::next(text, i);
        if (cp < 0x10000 && is_chinese_char(cp)) {
          out.push_back(' ');
          u::append(out, cp);
          out.push_back(' ');
        } else {
          u::append(out, cp);
        }
      }
      text = std::move(out);
    }
    if (lowercase_) text = u::to_lower(text);
    if (strip_accents_) text = u::remove_nonspacing_marks(u::normalize(text, u::Form::NFD));
    return text;
  }

 private:
  bool clean_text_, chinese_, lowercase_, strip_accents_;
};

// The reference approximates SentencePiece's precompiled charsmap by
// whitespace/control cleanup and NFKC; we do the same.
class PrecompiledNormalizer final : public Normalizer {
 public:
  std::string normalize(std::string text) const override {
    std::string out;
    for (size_t i = 0; i < text.size();) {
      const char32_t cp = u::next(text, i);
      if ((cp >= 1 && cp <= 8) || cp == 0x0B || (cp >= 0x0E && cp <= 0x1F) || cp == 0x7F || cp == 0x8F || cp == 0x9F)
        continue;
      const bool space = cp == 0x09 || cp == 0x0A || cp == 0x0C || cp == 0x0D || cp == 0xA0 || cp == 0x1680 ||
                         (cp >= 0x2000 && cp <= 0x200F) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
                         cp == 0x205F || cp == 0x2581 || cp == 0x3000 || cp == 0xFEFF || cp == 0xFFFD;
      if (space)
        out.push_back(' ');
      else
        u::append(out, cp);
    }
    // NFKC, but "～" (U+FF5E) is kept as is.
    const std::string tilde = "\xEF\xBD\x9E";
    std::string result;
    size_t pos = 0;
    while (true) {
      const size_t hit = out.find(tilde, pos);
      result += u::normalize(std::string_view(out).substr(pos, hit == std::string::npos ? std::string::npos : hit - pos),
                             u::Form::NFKC);
      if (hit == std::string::npos) break;
      result += tilde;
      pos = hit + tilde.size();
    }
    return result;
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> n) : items_(std::move(n)) {}
  std::string normalize(std::string text) const override {
    for (const auto& n : items_)
      if (n) text = n->normalize(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> items_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j);
  if (t == "NFC") return std::make_unique<UnicodeNormalizer>(u::Form::NFC);
  if (t == "NFD") return std::make_unique<UnicodeNormalizer>(u::Form::NFD);
  if (t == "NFKC") return std::make_unique<UnicodeNormalizer>(u::Form::NFKC);
  if (t == "NFKD") return std::make_unique<UnicodeNormalizer>(u::Form::NFKD);
  if (t == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (t == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (t == "Prepend") return std::make_unique<PrependNormalizer>(j.at("prepend").get<std::string>());
  if (t == "Replace") return std::make_unique<ReplaceNormalizer>(j);
  if (t == "Strip") return std::make_unique<StripNormalizer>(get_or<bool>(j, "left", get_or<bool>(j, "strip_left", false)),
                                                             get_or<bool>(j, "right", get_or<bool>(j, "strip_right", false)));
  if (t == "BertNormalizer") return std::make_unique<BertNormalizer>(j);
  if (t == "Precompiled") return std::make_unique<PrecompiledNormalizer>();
  if (t == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> items;
    for (const auto& n : j.at("normalizers")) items.push_back(make_normalizer(n));
    return std::make_unique<SequenceNormalizer>(std::move(items));
  }
  bad("unknown normalizer type \"" + t + "\"");
}

}  // namespace hearth::text::detail
