// Pre-tokenizers of tokenizer.json, and the GPT-2 byte-to-unicode table.
#include <array>
#include <cctype>
#include <optional>
#include <stdexcept>

#include "text/tokenizer/component_util.h"
#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

void split_with(const Regex& re, std::string_view text, SplitBehavior behavior, bool invert, const PieceSink& out) {
  struct Piece {
    size_t start, end;
    bool match;
  };
  auto emit = [&](const Piece& p) {
    if (p.end > p.start) out(text.substr(p.start, p.end - p.start));
  };
  // The last piece, while the next one may still join it.
  std::optional<Piece> held;
  auto take = [&](Piece p) {
    p.match = p.match != invert;
    bool join = false;
    switch (behavior) {
      case SplitBehavior::Removed:
        if (!p.match) emit(p);
        return;
      case SplitBehavior::Isolated:
        emit(p);
        return;
      case SplitBehavior::MergedWithPrevious:  // a match joins the non-match before it
        join = held && !held->match && p.match;
        break;
      case SplitBehavior::MergedWithNext:  // a match joins the non-match after it
        join = held && held->match && !p.match;
        break;
      case SplitBehavior::Contiguous:  // a run of matches, or of non-matches, is one piece
        join = held && held->match == p.match;
        break;
    }
    if (join) {
      held->end = p.end;
      held->match = p.match;  // a joined pair joins nothing more (Contiguous: unchanged)
      return;
    }
    if (held) emit(*held);
    held = p;
  };
  size_t prev = 0;
  re.for_each_match(text, [&](size_t s, size_t e) {
    if (s > prev) take({prev, s, false});
    take({s, e, true});
    prev = e;
  });
  if (prev < text.size()) take({prev, text.size(), false});
  if (held) emit(*held);
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
  void split(std::string_view piece, int, const PieceSink& out) const override {
    std::string text;
    if (add_prefix_space_ && (piece.empty() || piece[0] != ' ')) {
      text = " ";
      text += piece;
      piece = text;
    }
    auto& table = byte_table();
    std::string mapped;
    auto map = [&](std::string_view s) {
      mapped.clear();
      for (unsigned char b : s) mapped += table[b];
      out(mapped);
    };
    if (!use_regex_) {
      if (!piece.empty()) map(piece);
      return;
    }
    re_->for_each_match(piece, [&](size_t s, size_t e) {
      if (e > s) map(piece.substr(s, e - s));
    });
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
  void split(std::string_view piece, int, const PieceSink& out) const override {
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
  void split(std::string_view piece, int, const PieceSink& out) const override {
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
  void split(std::string_view piece, int, const PieceSink& out) const override {
    split_with(space_, piece, SplitBehavior::Removed, false,
               [&](std::string_view word) { split_with(punct_, word, SplitBehavior::Isolated, false, out); });
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
  void split(std::string_view piece, int section_index, const PieceSink& out) const override {
    std::string text = replace_all(piece, " ", replacement_);
    const bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
    if (!starts && (scheme_ == 0 || (scheme_ == 1 && section_index == 0))) text = replacement_ + text;
    if (!split_) {
      if (!text.empty()) out(text);
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
  void split(std::string_view piece, int, const PieceSink& out) const override {
    out(pattern_.replace(piece, content_));
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class FixedLengthPre final : public PreTokenizer {
 public:
  explicit FixedLengthPre(size_t n) : n_(n == 0 ? 5 : n) {}
  void split(std::string_view piece, int, const PieceSink& out) const override {
    size_t i = 0;
    while (i < piece.size()) {
      const size_t start = i;
      for (size_t k = 0; k < n_ && i < piece.size(); ++k) u::next(piece, i);
      out(piece.substr(start, i - start));
    }
  }

 private:
  size_t n_;
};

class SequencePre final : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> items) : items_(std::move(items)) {}
  void split(std::string_view piece, int section_index, const PieceSink& out) const override {
    split_from(0, piece, section_index, out);
  }

 private:
  // Each piece goes through the rest of the sequence before the next is cut.
  void split_from(size_t k, std::string_view piece, int section_index, const PieceSink& out) const {
    while (k < items_.size() && !items_[k]) ++k;
    if (k == items_.size()) {
      out(piece);
      return;
    }
    items_[k]->split(piece, section_index,
                     [&](std::string_view p) { split_from(k + 1, p, section_index, out); });
  }

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
