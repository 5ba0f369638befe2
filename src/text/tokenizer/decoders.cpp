// Decoders of tokenizer.json (ids back to text).
#include <array>
#include <cctype>
#include <stdexcept>

#include "text/tokenizer/component_util.h"
#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

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
  void piece_bytes(std::string& piece) const override {
    std::string bytes;
    for (size_t i = 0; i < piece.size();) {
      const int b = unicode_to_byte(u::next(piece, i));
      bytes.push_back(static_cast<char>(b >= 0 ? b : 0));
    }
    piece = std::move(bytes);
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
  void piece_bytes(std::string& piece) const override { piece = replace_all(piece, replacement_, " "); }

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
  void piece_bytes(std::string& piece) const override { piece = pattern_.replace(piece, content_); }

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
  void piece_bytes(std::string& piece) const override {
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return;
    const int hi = hex_value(piece[3]), lo = hex_value(piece[4]);
    if (hi >= 0 && lo >= 0) piece.assign(1, static_cast<char>(hi * 16 + lo));
  }
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> items) : items_(std::move(items)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : items_)
      if (d) d->decode_chain(tokens);
  }
  void piece_bytes(std::string& piece) const override {
    for (const auto& d : items_)
      if (d) d->piece_bytes(piece);
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
