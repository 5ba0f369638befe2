// Pre-tokenizers of tokenizer.json, and the GPT-2 byte-to-unicode table.
#include <array>
#include <cctype>
#include <stdexcept>

#include "text/tokenizer/component_util.h"
#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

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

}  // namespace hearth::text::detail
