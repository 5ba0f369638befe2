// Normalizers, pre-tokenizers, post-processors and decoders of tokenizer.json.
#include <array>
#include <cctype>
#include <stdexcept>

#include "text/tokenizer_components.h"
#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

namespace {

[[noreturn]] void bad(const std::string& what) { throw std::runtime_error(what); }

std::string type_of(const json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) bad("component without a \"type\": " + j.dump().substr(0, 200));
  return j["type"].get<std::string>();
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

// A tokenizer.json pattern: {"String": "..."} (literal) or {"Regex": "..."}.
struct Pattern {
  std::string literal;
  std::unique_ptr<Regex> regex;

  explicit Pattern(const json& j) {
    if (j.is_object() && j.contains("Regex")) {
      regex = std::make_unique<Regex>(translate_oniguruma(j["Regex"].get<std::string>()));
    } else if (j.is_object() && j.contains("String")) {
      literal = j["String"].get<std::string>();
      regex = std::make_unique<Regex>(regex_escape(literal));
    } else {
      bad("bad pattern: " + j.dump().substr(0, 200));
    }
  }
  std::string replace(std::string_view text, std::string_view content) const {
    if (!literal.empty()) return replace_all(text, literal, content);
    std::string out;
    size_t prev = 0;
    for (auto [s, e] : regex->find_all(text)) {
      out.append(text.substr(prev, s - prev));
      out.append(content);
      prev = e;
    }
    out.append(text.substr(prev));
    return out;
  }
};

// ---------------------------------------------------------------- normalizers

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

// ------------------------------------------------------------- pre-tokenizers

void PreTokenizer::pre_tokenize(std::vector<std::string>& pieces, int section_index) const {
  std::vector<std::string> out;
  out.reserve(pieces.size() * 2);
  for (const auto& p : pieces) split(p, section_index, out);
  pieces = std::move(out);
}

void split_with(const Regex& re, std::string_view text, SplitBehavior behavior, bool invert,
                std::vector<std::string>& out) {
  struct Piece {
    size_t start, end;
    bool match;
  };
  std::vector<Piece> pieces;
  size_t prev = 0;
  for (auto [s, e] : re.find_all(text)) {
    if (s > prev) pieces.push_back({prev, s, false});
    pieces.push_back({s, e, true});
    prev = e;
  }
  if (prev < text.size()) pieces.push_back({prev, text.size(), false});
  if (invert)
    for (auto& p : pieces) p.match = !p.match;

  std::vector<Piece> merged;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const auto& p : pieces)
        if (!p.match) merged.push_back(p);
      break;
    case SplitBehavior::Isolated:
      merged = pieces;
      break;
    case SplitBehavior::MergedWithPrevious: {
      bool previous_match = false;
      for (const auto& p : pieces) {
        if (p.match && !previous_match && !merged.empty())
          merged.back().end = p.end;
        else
          merged.push_back(p);
        previous_match = p.match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool previous_match = false;
      for (size_t k = pieces.size(); k-- > 0;) {
        const auto& p = pieces[k];
        if (p.match && !previous_match && !merged.empty())
          merged.back().start = p.start;
        else
          merged.push_back(p);
        previous_match = p.match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
    case SplitBehavior::Contiguous: {
      bool previous_match = false;
      for (const auto& p : pieces) {
        if (p.match == previous_match && !merged.empty())
          merged.back().end = p.end;
        else
          merged.push_back(p);
        previous_match = p.match;
      }
      break;
    }
  }
  for (const auto& p : merged)
    if (p.end > p.start) out.emplace_back(text.substr(p.start, p.end - p.start));
}

namespace {

SplitBehavior parse_behavior(const json& j, SplitBehavior fallback) {
  if (!j.is_string()) return fallback;
  std::string b = j.get<std::string>();
  for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (b == "removed") return SplitBehavior::Removed;
  if (b == "isolated") return SplitBehavior::Isolated;
  if (b == "mergedwithprevious") return SplitBehavior::MergedWithPrevious;
  if (b == "mergedwithnext") return SplitBehavior::MergedWithNext;
  if (b == "contiguous") return SplitBehavior::Contiguous;
  bad("unknown split behavior \"" + j.get<std::string>() + "\"");
}

const std::array<std::string, 256>& byte_table() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    std::array<bool, 256> direct{};
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
    int n = 0;
    for (int b = 0; b < 256; ++b) t[b] = u::encode(direct[b] ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++));
    return t;
  }();
  return table;
}

const std::string kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPre final : public PreTokenizer {
 public:
  explicit ByteLevelPre(const json& j)
      : add_prefix_space_(get_or<bool>(j, "add_prefix_space", false)), use_regex_(get_or<bool>(j, "use_regex", true)) {
    if (use_regex_) re_ = std::make_unique<Regex>(translate_oniguruma(kGpt2Pattern));
  }
  void split(std::string_view piece, int, std::vector<std::string>& out) const override {
    std::string text;
    if (add_prefix_space_ && (piece.empty() || piece[0] != ' ')) {
      text = " ";
      text += piece;
      piece = text;
    }
    auto& table = byte_table();
    auto map = [&](std::string_view s) {
      std::string m;
      m.reserve(s.size() * 2);
      for (unsigned char b : s) m += table[b];
      out.push_back(std::move(m));
    };
    if (!use_regex_) {
      if (!piece.empty()) map(piece);
      return;
    }
    for (auto [s, e] : re_->find_all(piece))
      if (e > s) map(piece.substr(s, e - s));
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::unique_ptr<Regex> re_;
};

class SplitPre final : public PreTokenizer {
 public:
  explicit SplitPre(const json& j)
      : pattern_(j.at("pattern")),
        behavior_(parse_behavior(j.value("behavior", json()), SplitBehavior::Isolated)),
        invert_(get_or<bool>(j, "invert", false)) {}
  void split(std::string_view piece, int, std::vector<std::string>& out) const override {
    split_with(*pattern_.regex, piece, behavior_, invert_, out);
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// Fixed regex splitters (Whitespace, WhitespaceSplit, Digits, Punctuation, Bert, CharDelimiterSplit).
class RegexSplitPre final : public PreTokenizer {
 public:
  RegexSplitPre(const std::string& pcre, SplitBehavior b, bool invert) : re_(pcre), behavior_(b), invert_(invert) {}
  void split(std::string_view piece, int, std::vector<std::string>& out) const override {
    split_with(re_, piece, behavior_, invert_, out);
  }

 private:
  Regex re_;
  SplitBehavior behavior_;
  bool invert_;
};

const std::string kPunct = R"([\p{P}\x{21}-\x{2F}\x{3A}-\x{40}\x{5B}-\x{60}\x{7B}-\x{7E}])";
const std::string kRustWord = R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}])";
const std::string kRustNonWordNonSpace = R"([^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}\p{White_Space}])";

class BertPre final : public PreTokenizer {
 public:
  BertPre() : space_(R"(\p{White_Space}+)"), punct_(kPunct) {}
  void split(std::string_view piece, int, std::vector<std::string>& out) const override {
    std::vector<std::string> words;
    split_with(space_, piece, SplitBehavior::Removed, false, words);
    for (const auto& w : words) split_with(punct_, w, SplitBehavior::Isolated, false, out);
  }

 private:
  Regex space_, punct_;
};

class MetaspacePre final : public PreTokenizer {
 public:
  explicit MetaspacePre(const json& j)
      : replacement_(get_or<std::string>(j, "replacement", "\xE2\x96\x81")),
        split_(get_or<bool>(j, "split", true)),
        split_re_(regex_escape(replacement_)) {
    std::string scheme = get_or<std::string>(j, "prepend_scheme", "");
    if (scheme.empty()) scheme = get_or<bool>(j, "add_prefix_space", true) ? "always" : "never";
    if (scheme == "always")
      scheme_ = 0;
    else if (scheme == "first")
      scheme_ = 1;
    else if (scheme == "never")
      scheme_ = 2;
    else
      bad("unknown Metaspace prepend_scheme \"" + scheme + "\"");
  }
  void split(std::string_view piece, int section_index, std::vector<std::string>& out) const override {
    std::string text = replace_all(piece, " ", replacement_);
    const bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
    if (!starts && (scheme_ == 0 || (scheme_ == 1 && section_index == 0))) text = replacement_ + text;
    if (!split_) {
      if (!text.empty()) out.push_back(std::move(text));
      return;
    }
    split_with(split_re_, text, SplitBehavior::MergedWithNext, false, out);
  }

 private:
  std::string replacement_;
  bool split_;
  int scheme_ = 0;
  Regex split_re_;
};

class ReplacePre final : public PreTokenizer {
 public:
  explicit ReplacePre(const json& j) : pattern_(j.at("pattern")), content_(get_or<std::string>(j, "content", "")) {}
  void split(std::string_view piece, int, std::vector<std::string>& out) const override {
    out.push_back(pattern_.replace(piece, content_));
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class FixedLengthPre final : public PreTokenizer {
 public:
  explicit FixedLengthPre(size_t n) : n_(n == 0 ? 5 : n) {}
  void split(std::string_view piece, int, std::vector<std::string>& out) const override {
    size_t i = 0;
    while (i < piece.size()) {
      const size_t start = i;
      for (size_t k = 0; k < n_ && i < piece.size(); ++k) u::next(piece, i);
      out.emplace_back(piece.substr(start, i - start));
    }
  }

 private:
  size_t n_;
};

class SequencePre final : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> items) : items_(std::move(items)) {}
  void split(std::string_view piece, int section_index, std::vector<std::string>& out) const override {
    std::vector<std::string> pieces{std::string(piece)};
    for (const auto& p : items_)
      if (p) p->pre_tokenize(pieces, section_index);
    for (auto& p : pieces) out.push_back(std::move(p));
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> items_;
};

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return byte_table()[b]; }

int unicode_to_byte(char32_t cp) {
  static const std::unordered_map<char32_t, int> reverse = [] {
    std::unordered_map<char32_t, int> r;
    for (int b = 0; b < 256; ++b) {
      size_t i = 0;
      r[u::next(byte_table()[b], i)] = b;
    }
    return r;
  }();
  auto it = reverse.find(cp);
  return it == reverse.end() ? -1 : it->second;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j);
  if (t == "ByteLevel") return std::make_unique<ByteLevelPre>(j);
  if (t == "Split") return std::make_unique<SplitPre>(j);
  if (t == "Metaspace") return std::make_unique<MetaspacePre>(j);
  if (t == "Whitespace")
    return std::make_unique<RegexSplitPre>(kRustWord + "+|" + kRustNonWordNonSpace + "+", SplitBehavior::Removed, true);
  if (t == "WhitespaceSplit")
    return std::make_unique<RegexSplitPre>(R"(\p{White_Space}+)", SplitBehavior::Removed, false);
  if (t == "Digits")
    return std::make_unique<RegexSplitPre>(R"(\p{N})", get_or<bool>(j, "individual_digits", false)
                                                           ? SplitBehavior::Isolated
                                                           : SplitBehavior::Contiguous,
                                           false);
  if (t == "Punctuation")
    return std::make_unique<RegexSplitPre>(kPunct, parse_behavior(j.value("behavior", json()), SplitBehavior::Isolated),
                                           false);
  if (t == "BertPreTokenizer") return std::make_unique<BertPre>();
  if (t == "CharDelimiterSplit")
    return std::make_unique<RegexSplitPre>(regex_escape(j.at("delimiter").get<std::string>()), SplitBehavior::Removed,
                                           false);
  if (t == "Replace") return std::make_unique<ReplacePre>(j);
  if (t == "FixedLength") return std::make_unique<FixedLengthPre>(get_or<size_t>(j, "length", 5));
  if (t == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> items;
    for (const auto& p : j.at("pretokenizers")) items.push_back(make_pre_tokenizer(p));
    return std::make_unique<SequencePre>(std::move(items));
  }
  bad("unknown pre_tokenizer type \"" + t + "\"");
}

// ------------------------------------------------------------ post-processors

namespace {

using Lookup = std::function<std::optional<int32_t>(std::string_view)>;

int32_t resolve(const Lookup& lookup, const std::string& token, const char* where) {
  auto id = lookup(token);
  if (!id) bad(std::string(where) + ": token \"" + token + "\" is not in the vocabulary");
  return *id;
}

class TemplatePost final : public PostProcessor {
 public:
  TemplatePost(const json& j, const Lookup& lookup) {
    for (const auto& item : j.at("single")) {
      if (item.contains("SpecialToken")) {
        const std::string name = item["SpecialToken"].at("id").get<std::string>();
        std::vector<int32_t> ids;
        const json& st = j.value("special_tokens", json::object());
        if (st.contains(name) && st[name].contains("ids")) {
          for (const auto& v : st[name]["ids"]) ids.push_back(v.get<int32_t>());
        } else {
          ids.push_back(resolve(lookup, name, "TemplateProcessing"));
        }
        Step s;
        s.ids = std::move(ids);
        steps_.push_back(std::move(s));
      } else if (item.contains("Sequence")) {
        Step s;
        s.sequence = true;
        steps_.push_back(std::move(s));
      }
    }
  }
  void process(std::vector<int32_t>& ids, bool add) const override {
    if (!add) return;
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const auto& s : steps_) {
      if (s.sequence)
        out.insert(out.end(), ids.begin(), ids.end());
      else
        out.insert(out.end(), s.ids.begin(), s.ids.end());
    }
    ids = std::move(out);
  }

 private:
  struct Step {
    bool sequence = false;
    std::vector<int32_t> ids;
  };
  std::vector<Step> steps_;
};

class ClsSepPost final : public PostProcessor {
 public:
  ClsSepPost(const json& j, const Lookup& lookup) {
    auto get = [&](const char* key) {
      const json& v = j.at(key);
      if (v.is_array() && v.size() == 2 && v[1].is_number_integer()) return v[1].get<int32_t>();
      return resolve(lookup, v.is_array() ? v[0].get<std::string>() : v.get<std::string>(), key);
    };
    cls_ = get("cls");
    sep_ = get("sep");
  }
  void process(std::vector<int32_t>& ids, bool add) const override {
    if (!add) return;
    ids.insert(ids.begin(), cls_);
    ids.push_back(sep_);
  }

 private:
  int32_t cls_, sep_;
};

class NoOpPost final : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
};

class SequencePost final : public PostProcessor {
 public:
  explicit SequencePost(std::vector<std::unique_ptr<PostProcessor>> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids, bool add) const override {
    for (const auto& p : items_)
      if (p) p->process(ids, add);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> items_;
};

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& j, const Lookup& lookup) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j);
  if (t == "TemplateProcessing") return std::make_unique<TemplatePost>(j, lookup);
  if (t == "BertProcessing" || t == "RobertaProcessing") return std::make_unique<ClsSepPost>(j, lookup);
  if (t == "ByteLevel") return std::make_unique<NoOpPost>();
  if (t == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> items;
    for (const auto& p : j.at("processors")) items.push_back(make_post_processor(p, lookup));
    return std::make_unique<SequencePost>(std::move(items));
  }
  bad("unknown post_processor type \"" + t + "\"");
}

// ------------------------------------------------------------------- decoders

std::string utf8_lossy(std::string_view bytes) { return u::sanitize(bytes); }

std::string clean_up_tokenization(std::string_view text) {
  static const std::pair<const char*, const char*> rules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  std::string s(text);
  for (const auto& [from, to] : rules) s = replace_all(s, from, to);
  return s;
}

namespace {

using AddedSet = std::shared_ptr<const Vocab>;

class ByteLevelDecoder final : public Decoder {
 public:
  explicit ByteLevelDecoder(AddedSet added) : added_(std::move(added)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    bool pending = false;
    auto flush = [&] {
      if (pending) out.push_back(utf8_lossy(bytes));
      bytes.clear();
      pending = false;
    };
    for (auto& t : tokens) {
      if (added_ && added_->count(t)) {
        flush();
        out.push_back(std::move(t));
        continue;
      }
      pending = true;
      for (size_t i = 0; i < t.size();) {
        const char32_t cp = u::next(t, i);
        const int b = unicode_to_byte(cp);
        if (b >= 0) bytes.push_back(static_cast<char>(b));
        // Characters outside the byte table have no byte; the reference maps
        // them to undefined, which a Uint8Array stores as 0.
        else
          bytes.push_back('\0');
      }
    }
    flush();
    tokens = std::move(out);
  }

 private:
  AddedSet added_;
};

class BytesDecoder final : public Decoder {
 public:
  explicit BytesDecoder(AddedSet added) : added_(std::move(added)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    for (auto& t : tokens) {
      if (added_ && added_->count(t)) {
        if (!bytes.empty()) out.push_back(utf8_lossy(bytes));
        bytes.clear();
        out.push_back(std::move(t));
      } else {
        bytes += t;
      }
    }
    if (!bytes.empty()) out.push_back(utf8_lossy(bytes));
    tokens = std::move(out);
  }

 private:
  AddedSet added_;
};

class WordPieceDecoder final : public Decoder {
 public:
  explicit WordPieceDecoder(const json& j)
      : prefix_(get_or<std::string>(j, "prefix", "##")), cleanup_(get_or<bool>(j, "cleanup", true)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (!prefix_.empty() && t.compare(0, prefix_.size(), prefix_) == 0)
          t.erase(0, prefix_.size());
        else
          t = " " + t;
      }
      if (cleanup_) t = clean_up_tokenization(t);
    }
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  explicit MetaspaceDecoder(const json& j) : replacement_(get_or<std::string>(j, "replacement", "\xE2\x96\x81")) {
    std::string scheme = get_or<std::string>(j, "prepend_scheme", "");
    strip_first_ = scheme.empty() ? get_or<bool>(j, "add_prefix_space", true) : scheme != "never";
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], replacement_, " ");
      if (i == 0 && strip_first_ && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class BPEDecoder final : public Decoder {
 public:
  explicit BPEDecoder(const json& j) : suffix_(get_or<std::string>(j, "suffix", "</w>")) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
  }

 private:
  std::string suffix_;
};

class CTCDecoder final : public Decoder {
 public:
  explicit CTCDecoder(const json& j)
      : pad_(get_or<std::string>(j, "pad_token", "<pad>")),
        delim_(get_or<std::string>(j, "word_delimiter_token", "|")),
        cleanup_(get_or<bool>(j, "cleanup", true)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string text;
    const std::string* last = nullptr;
    for (const auto& t : tokens) {
      if (last && *last == t) continue;
      last = &t;
      if (t != pad_) text += t;
    }
    if (cleanup_) {
      text = replace_all(clean_up_tokenization(text), delim_, " ");
      text = std::string(u::js_trim(text));
    }
    tokens.assign(1, text);
  }

 private:
  std::string pad_, delim_;
  bool cleanup_;
};

class ReplaceDecoder final : public Decoder {
 public:
  explicit ReplaceDecoder(const json& j) : pattern_(j.at("pattern")), content_(get_or<std::string>(j, "content", "")) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) t = pattern_.replace(t, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder final : public Decoder {
 public:
  explicit StripDecoder(const json& j)
      : content_(get_or<std::string>(j, "content", " ")),
        start_(get_or<size_t>(j, "start", 0)),
        stop_(get_or<size_t>(j, "stop", 0)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return;
    for (auto& t : tokens) {
      size_t begin = 0;
      for (size_t k = 0; k < start_ && t.compare(begin, content_.size(), content_) == 0; ++k) begin += content_.size();
      size_t end = t.size();
      for (size_t k = 0; k < stop_ && end >= begin + content_.size() &&
                         t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++k)
        end -= content_.size();
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Bytes of consecutive <0xHH> tokens as text. Like the reference's default
// TextDecoder, a leading byte order mark of each run is dropped.
std::string decode_byte_run(const std::string& bytes) {
  std::string s = utf8_lossy(bytes);
  if (s.compare(0, 3, "\xEF\xBB\xBF") == 0) s.erase(0, 3);
  return s;
}

class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    for (auto& t : tokens) {
      // "<0xHH>" (the reference parses the two characters like parseInt).
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        const int hi = hex_value(t[3]), lo = hex_value(t[4]);
        if (hi >= 0) byte = lo >= 0 ? hi * 16 + lo : hi;
      }
      if (byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
        continue;
      }
      if (!bytes.empty()) {
        out.push_back(decode_byte_run(bytes));
        bytes.clear();
      }
      out.push_back(std::move(t));
    }
    if (!bytes.empty()) out.push_back(decode_byte_run(bytes));
    tokens = std::move(out);
  }
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> items) : items_(std::move(items)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : items_)
      if (d) d->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> items_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& j, const AddedSet& added) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j);
  if (t == "ByteLevel") return std::make_unique<ByteLevelDecoder>(added);
  if (t == "WordPiece") return std::make_unique<WordPieceDecoder>(j);
  if (t == "Metaspace") return std::make_unique<MetaspaceDecoder>(j);
  if (t == "BPEDecoder") return std::make_unique<BPEDecoder>(j);
  if (t == "CTC") return std::make_unique<CTCDecoder>(j);
  if (t == "Replace") return std::make_unique<ReplaceDecoder>(j);
  if (t == "Fuse") return std::make_unique<FuseDecoder>();
  if (t == "Strip") return std::make_unique<StripDecoder>(j);
  if (t == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (t == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> items;
    for (const auto& d : j.at("decoders")) items.push_back(make_decoder(d, added));
    return std::make_unique<SequenceDecoder>(std::move(items));
  }
  bad("unknown decoder type \"" + t + "\"");
}

std::unique_ptr<Decoder> make_bytes_decoder(const AddedSet& added) { return std::make_unique<BytesDecoder>(added); }

}  // namespace hearth::text::detail
