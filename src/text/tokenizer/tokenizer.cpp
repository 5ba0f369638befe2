// Tokenizer: loading tokenizer.json / tokenizer_config.json / tiktoken files,
// added-token splitting, the encode and decode pipelines, streaming decode.
#include "text/tokenizer/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <array>
#include <stdexcept>
#include <unordered_set>

#include "core/base64.h"
#include "core/read_file.h"
#include "text/tokenizer/byte_trie.h"
#include "text/tokenizer/components.h"
#include "text/unicode.h"

namespace hearth::text {

namespace u = hearth::text::unicode;
using detail::json;

namespace {

std::string token_content(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

bool is_word_char(char32_t cp) { return cp == '_' || u::is_letter(cp) || u::is_number(cp) || u::is_mark(cp); }

}  // namespace

struct Tokenizer::Impl {
  struct Added {
    std::string content;
    int32_t id;
    bool special, lstrip, rstrip, single_word, normalized;
  };

  std::unique_ptr<detail::Normalizer> normalizer;
  std::unique_ptr<detail::PreTokenizer> pre_tokenizer;
  std::unique_ptr<detail::Model> model;
  std::unique_ptr<detail::PostProcessor> post_processor;
  std::unique_ptr<detail::Decoder> decoder;

  std::vector<Added> added;
  std::unordered_map<std::string, size_t, detail::StringHash, std::equal_to<>> added_index;  // content → added[]
  std::shared_ptr<detail::Vocab> added_contents = std::make_shared<detail::Vocab>();
  ByteTrie unnormalized, normalized;  // added tokens, for longest-match splitting

  std::vector<std::string> id_to_token;  // model vocabulary overlaid with added tokens
  std::vector<char> special;             // by id
  std::unordered_set<std::string> special_contents;

  std::string bos, eos, unk, pad;
  bool add_bos = false, add_eos = false;
  bool clean_up = true;

  std::optional<int32_t> lookup(std::string_view token) const {
    if (auto it = added_index.find(token); it != added_index.end()) return added[it->second].id;
    if (const int32_t id = model->vocab.find(token); id >= 0) return id;
    return std::nullopt;
  }

  void add_token(Added a) {
    if (a.id < 0 || a.id > detail::kMaxTokenId)
      throw std::runtime_error("added token \"" + a.content + "\" has the id " + std::to_string(a.id) +
                               ", out of range (0 to " + std::to_string(detail::kMaxTokenId) + ")");
    const size_t idx = added.size();
    added_index[a.content] = idx;
    (*added_contents)[a.content] = a.id;
    if (a.normalized && normalizer) {
      const std::string n = normalizer->normalize(a.content);
      added_index.emplace(n, idx);
      normalized.insert(n, a.id);
    } else {
      unnormalized.insert(a.content, a.id);
    }
    if (static_cast<size_t>(a.id) >= id_to_token.size()) id_to_token.resize(static_cast<size_t>(a.id) + 1);
    id_to_token[static_cast<size_t>(a.id)] = a.content;
    if (a.special) special_contents.insert(a.content);
    added.push_back(std::move(a));
  }

  void finish() {
    special.assign(id_to_token.size(), 0);
    for (const auto& c : special_contents)
      if (auto id = lookup(c); id && static_cast<size_t>(*id) < special.size()) special[static_cast<size_t>(*id)] = 1;
  }

  struct Section {
    std::string_view text;
    int32_t token = -1;  // added token id, or -1 for text
    const Added* info = nullptr;
  };

  // Splits `text` around added tokens (longest match first), then applies
  // lstrip/rstrip to the neighbouring text as the reference does.
  void split_added(std::string_view text, const ByteTrie& sp, std::vector<Section>& out) const {
    const size_t first = out.size();
    size_t start = 0, i = 0;
    if (!sp.empty()) {
      while (i < text.size()) {
        size_t len = sp.longest_prefix(text, i);
        const Added* info = nullptr;
        if (len) {
          info = &added[added_index.find(text.substr(i, len))->second];
          if (info->single_word) {
            bool ok = true;
            if (i > 0) {
              size_t b = i - 1;
              while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
              size_t k = b;
              ok = !is_word_char(u::next(text, k));
            }
            if (ok && i + len < text.size()) {
              size_t k = i + len;
              ok = !is_word_char(u::next(text, k));
            }
            if (!ok) len = 0;
          }
        }
        if (!len) {
          ++i;
          continue;
        }
        if (i > start) out.push_back({text.substr(start, i - start)});
        out.push_back({text.substr(i, len), info->id, info});
        i += len;
        start = i;
      }
    }
    if (start < text.size() || out.size() == first) out.push_back({text.substr(start)});
    for (size_t k = first; k < out.size(); ++k) {
      if (!out[k].info) continue;
      if (out[k].info->lstrip && k > first && !out[k - 1].info) out[k - 1].text = u::js_trim_end(out[k - 1].text);
      if (out[k].info->rstrip && k + 1 < out.size() && !out[k + 1].info)
        out[k + 1].text = u::js_trim_start(out[k + 1].text);
    }
  }

  std::vector<int32_t> encode(std::string_view input, bool add_special) const {
    std::string owned;
    if (!u::is_valid(input)) {
      owned = u::sanitize(input);
      input = owned;
    }
    std::vector<int32_t> ids;
    std::vector<Section> sections;
    split_added(input, unnormalized, sections);
    const detail::PieceSink to_model = [&](std::string_view word) { model->encode_word(word, ids); };
    std::vector<Section> subsections;
    for (size_t si = 0; si < sections.size(); ++si) {
      const Section& sec = sections[si];
      if (sec.text.empty()) continue;
      if (sec.info) {
        ids.push_back(sec.token);
        continue;
      }
      if (auto it = added_index.find(sec.text); it != added_index.end()) {
        ids.push_back(added[it->second].id);
        continue;
      }
      std::string norm = normalizer ? normalizer->normalize(std::string(sec.text)) : std::string(sec.text);
      if (norm.empty()) continue;
      subsections.clear();
      split_added(norm, normalized, subsections);
      for (const Section& sub : subsections) {
        if (sub.text.empty()) continue;
        if (sub.info) {
          ids.push_back(sub.token);
          continue;
        }
        if (auto it = added_index.find(sub.text); it != added_index.end()) {
          ids.push_back(added[it->second].id);
          continue;
        }
        const size_t first = ids.size();
        if (pre_tokenizer)
          pre_tokenizer->split(sub.text, static_cast<int>(si), to_model);
        else
          model->encode_word(sub.text, ids);
        model->end_section(ids, first);
      }
    }
    if (post_processor) {
      post_processor->process(ids, add_special);
    } else if (add_special) {
      if (add_bos)
        if (auto id = lookup(bos)) ids.insert(ids.begin(), *id);
      if (add_eos)
        if (auto id = lookup(eos)) ids.push_back(*id);
    }
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    const std::string* unk = model->unk_id && static_cast<size_t>(*model->unk_id) < id_to_token.size()
                                 ? &id_to_token[static_cast<size_t>(*model->unk_id)]
                                 : nullptr;
    for (int32_t id : ids) {
      const std::string* t = nullptr;
      if (id >= 0 && static_cast<size_t>(id) < id_to_token.size() && !id_to_token[static_cast<size_t>(id)].empty())
        t = &id_to_token[static_cast<size_t>(id)];
      else
        t = unk;
      if (!t) continue;
      if (skip_special && special_contents.count(*t)) continue;
      tokens.push_back(*t);
    }
    std::string text;
    if (decoder) {
      decoder->decode_chain(tokens);
      for (const auto& t : tokens) text += t;
    } else {
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i) text += ' ';
        text += tokens[i];
      }
    }
    if (decoder && !model->end_of_word_suffix.empty()) {
      std::string out;
      const std::string& suf = model->end_of_word_suffix;
      size_t pos = 0;
      for (size_t hit; (hit = text.find(suf, pos)) != std::string::npos; pos = hit + suf.size()) {
        out.append(text, pos, hit - pos);
        out += ' ';
      }
      out.append(text, pos);
      text = skip_special ? std::string(u::js_trim(out)) : out;
    }
    if (clean_up) text = detail::clean_up_tokenization(text);
    return text;
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json,
                                                const std::string& name) {
  auto impl = std::make_unique<Impl>();
  try {
    detail::ModelData data;
    const json j = detail::parse_tokenizer_json(tokenizer_json, data);
    if (!j.is_object() || !j.contains("model")) throw std::runtime_error("no \"model\" object");
    json config = json::object();
    if (!config_json.empty()) {
      try {
        config = json::parse(config_json);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string("tokenizer_config.json: ") + e.what());
      }
      if (!config.is_object()) throw std::runtime_error("tokenizer_config.json is not an object");
    }
    auto field = [&](const char* key) -> const json& {
      static const json null_json;
      auto it = j.find(key);
      return it == j.end() ? null_json : *it;
    };
    impl->normalizer = detail::make_normalizer(field("normalizer"));
    impl->pre_tokenizer = detail::make_pre_tokenizer(field("pre_tokenizer"));
    impl->model = detail::make_model(j.at("model"), data);
    impl->id_to_token = impl->model->id_to_token;
    if (const json& at = field("added_tokens"); at.is_array()) {
      for (const auto& a : at) {
        const bool special = a.value("special", false);
        const json& id_json = a.at("id");
        const int64_t id = id_json.is_number_integer() ? id_json.get<int64_t>() : -1;
        if (id < 0 || id > detail::kMaxTokenId)
          throw std::runtime_error("added token " + a.at("content").dump() + " has the id " + id_json.dump() +
                                   ", not an integer in the range (0 to " + std::to_string(detail::kMaxTokenId) + ")");
        impl->add_token({a.at("content").get<std::string>(), static_cast<int32_t>(id), special,
                         a.value("lstrip", false), a.value("rstrip", false), a.value("single_word", false),
                         a.contains("normalized") && !a["normalized"].is_null() ? a["normalized"].get<bool>() : !special});
      }
    }
    if (auto it = config.find("additional_special_tokens"); it != config.end() && it->is_array())
      for (const auto& t : *it)
        if (auto c = token_content(t); !c.empty()) impl->special_contents.insert(c);
    impl->bos = config.contains("bos_token") ? token_content(config["bos_token"]) : "";
    impl->eos = config.contains("eos_token") ? token_content(config["eos_token"]) : "";
    impl->unk = config.contains("unk_token") ? token_content(config["unk_token"]) : "";
    impl->pad = config.contains("pad_token") ? token_content(config["pad_token"]) : "";
    impl->add_bos = config.value("add_bos_token", false) == true;
    impl->add_eos = config.value("add_eos_token", false) == true;
    if (auto it = config.find("clean_up_tokenization_spaces"); it != config.end() && it->is_boolean())
      impl->clean_up = it->get<bool>();
    const Impl* raw = impl.get();
    impl->post_processor = detail::make_post_processor(field("post_processor"),
                                                       [raw](std::string_view t) { return raw->lookup(t); });
    if (impl->post_processor)
      for (int32_t id : impl->post_processor->added_ids())
        if (id < 0 || static_cast<size_t>(id) >= impl->id_to_token.size())
          throw std::runtime_error("post_processor: token id " + std::to_string(id) + " is not in the vocabulary (" +
                                   std::to_string(impl->id_to_token.size()) + " ids)");
    impl->decoder = detail::make_decoder(field("decoder"), impl->added_contents);
    impl->finish();
  } catch (const std::exception& e) {
    throw std::runtime_error(name + ": " + e.what());
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

std::unique_ptr<Tokenizer> Tokenizer::load(const std::filesystem::path& tokenizer_json) {
  const std::string text = read_file(tokenizer_json);
  std::string config;
  const auto config_path = tokenizer_json.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::exists(config_path, ec)) config = read_file(config_path);
  return from_json(text, config, tokenizer_json.string());
}

std::unique_ptr<Tokenizer> Tokenizer::load_tiktoken(const std::filesystem::path& rank_file, std::string_view pattern,
                                                    const std::vector<std::pair<std::string, int32_t>>& special_tokens) {
  const std::string text = read_file(rank_file);
  std::vector<std::pair<std::string, int32_t>> ranks;
  ranks.reserve(text.size() / 12);  // about 14 bytes a line in GPT-2's files
  std::string bytes;
  size_t lineno = 0;
  // Scanned in place: a stream and a string per line made up most of the load.
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || !base64_decode(line.substr(0, sp), bytes))
      throw std::runtime_error(rank_file.string() + ":" + std::to_string(lineno) + ": expected \"<base64> <rank>\"");
    int32_t rank = -1;
    const char* last = line.data() + line.size();
    if (auto [p, ec] = std::from_chars(line.data() + sp + 1, last, rank); ec != std::errc() || p != last || rank < 0)
      throw std::runtime_error(rank_file.string() + ":" + std::to_string(lineno) + ": bad rank");
    ranks.emplace_back(bytes, rank);
  }
  auto impl = std::make_unique<Impl>();
  try {
    impl->model = detail::make_tiktoken_model(std::move(ranks));
    impl->pre_tokenizer = detail::make_pre_tokenizer(
        json{{"type", "Split"}, {"pattern", {{"Regex", std::string(pattern)}}}, {"behavior", "Isolated"}, {"invert", false}});
    impl->id_to_token = impl->model->id_to_token;
    for (const auto& [content, id] : special_tokens) impl->add_token({content, id, true, false, false, false, false});
    impl->decoder = detail::make_bytes_decoder(impl->added_contents);
    impl->clean_up = false;
    impl->finish();
  } catch (const std::exception& e) {
    throw std::runtime_error(rank_file.string() + ": " + e.what());
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const { return impl_->lookup(token); }

std::string Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_token.size()) return {};
  return impl_->id_to_token[static_cast<size_t>(id)];
}

size_t Tokenizer::vocab_size() const { return impl_->id_to_token.size(); }

std::optional<int32_t> Tokenizer::bos_id() const {
  return impl_->bos.empty() ? std::nullopt : impl_->lookup(impl_->bos);
}
std::optional<int32_t> Tokenizer::eos_id() const {
  return impl_->eos.empty() ? std::nullopt : impl_->lookup(impl_->eos);
}
std::optional<int32_t> Tokenizer::unk_id() const {
  if (!impl_->unk.empty()) return impl_->lookup(impl_->unk);
  return impl_->model->unk_id;
}
std::optional<int32_t> Tokenizer::pad_id() const {
  return impl_->pad.empty() ? std::nullopt : impl_->lookup(impl_->pad);
}
std::string Tokenizer::bos_token() const { return impl_->bos; }
std::string Tokenizer::eos_token() const { return impl_->eos; }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[static_cast<size_t>(id)];
}

bool Tokenizer::is_added(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_token.size()) return false;
  const auto it = impl_->added_index.find(impl_->id_to_token[static_cast<size_t>(id)]);
  return it != impl_->added_index.end() && impl_->added[it->second].id == id;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_token.size()) return {};
  std::string piece = impl_->id_to_token[static_cast<size_t>(id)];
  if (!is_added(id) && impl_->decoder) impl_->decoder->piece_bytes(piece);
  return piece;
}

// ------------------------------------------------------------- StreamDecoder

namespace {

// Bytes at the end of `text` that a later token could still change through
// clean_up_tokenization (" ." → "." and friends): the longest suffix that is
// a proper prefix of a rule's source, including sources that only match after
// an earlier rule (" ' " → "'") has fired.
size_t cleanup_holdback(std::string_view text) {
  static const std::string_view sources[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're",
                                             " n ' t", "  ' s", "  ' m", "  ' ve", "  ' re"};
  const size_t n = text.size();
  for (size_t p = n > 6 ? n - 6 : 0; p < n; ++p) {
    if (text[p] != ' ') continue;
    const std::string_view suffix = text.substr(p);
    for (const auto& src : sources)
      if (src.size() > suffix.size() && src.substr(0, suffix.size()) == suffix) return n - p;
  }
  return 0;
}

// The byte of a "<0xNN>" byte-fallback token, or -1 for any other token.
int fallback_byte(const Tokenizer& tok, int32_t id) {
  const std::string t = tok.id_to_token(id);
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  if (!std::isxdigit(static_cast<unsigned char>(t[3])) || !std::isxdigit(static_cast<unsigned char>(t[4]))) return -1;
  return std::stoi(t.substr(3, 2), nullptr, 16);
}

// Whether decoding may restart at ids[at] without changing the text. Not
// before 0xEF (a run's leading byte order mark is dropped), nor before a
// continuation byte that may finish a character begun before the cut: one
// of the three ids before it (the window's start ends a character) may be
// a lead byte, or a token that hides one (a skipped special token). A lead
// byte, or one never valid in UTF-8, starts afresh.
bool safe_cut(const Tokenizer& tok, std::span<const int32_t> ids, size_t at) {
  const int b = fallback_byte(tok, ids[at]);
  if (b < 0x80 || b >= 0xC0) return b != 0xEF;
  for (size_t k = at; k-- > 0 && at - k <= 3;) {
    const int before = fallback_byte(tok, ids[k]);
    if (before < 0 || before >= 0xC0) return false;
  }
  return true;
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tok_(tokenizer), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  const std::string text = tok_.decode(ids_, skip_special_);
  const bool held_long = ids_.size() - prefix_index_ > kMaxHeld;
  if (text.size() < prefix_.size() || text.compare(0, prefix_.size(), prefix_) != 0) {
    // The decoder changed text already sent: hold on, up to a bound.
    if (held_long) keep_tail({});
    return {};
  }
  // A trailing U+FFFD may be a character still incomplete (the decoding is
  // lossy by maximal subparts, so only the last one can change), and
  // clean-up may still remove a space before punctuation: both are held.
  size_t end = text.size();
  if (end >= 3 && text.compare(end - 3, 3, kReplacement) == 0) end -= 3;
  if (tok_.impl().clean_up) end -= cleanup_holdback(std::string_view(text).substr(0, end));
  std::string out = end > emitted_ ? text.substr(emitted_, end - emitted_) : std::string();
  emitted_ = std::max(emitted_, end);
  prefix_ = text.substr(0, emitted_);
  if (emitted_ == text.size()) {
    // Everything is out: keep only the ids since the last cut as context.
    std::string context;
    const size_t keep_from = last_cut(prefix_index_, context);
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<long>(keep_from));
    prefix_ = keep_from > 0 ? std::move(context) : tok_.decode(ids_, skip_special_);
    emitted_ = prefix_.size();
    prefix_index_ = ids_.size();
  } else if (held_long) {
    // A run that keeps something held (invalid bytes, spaces under
    // clean-up) would make every push decode a longer window.
    keep_tail(std::string_view(text).substr(emitted_));
  }
  return out;
}

// The last cut at or before `from` (0: none) where decoding may restart,
// and what the ids from there decode to. A cut must not split a run of
// byte-fallback tokens where the reference would decode differently (inside
// a character, or before a run's BOM), nor leave a context that decodes to
// nothing: a decoder that strips the text's start (Strip with start 2)
// would strip what comes next too.
size_t StreamDecoder::last_cut(size_t from, std::string& context) const {
  for (; from > 0; --from) {
    if (!safe_cut(tok_, ids_, from)) continue;
    context = tok_.decode(std::span<const int32_t>(ids_).subspan(from), skip_special_);
    if (!context.empty()) return from;
  }
  return 0;
}

// Restarts the window at a cut among its last few ids whose decoding ends
// with `held` (the text not sent yet) after text already sent, so that each
// push decodes a bounded window. Without such a cut the window stays.
void StreamDecoder::keep_tail(std::string_view held) {
  std::string context;
  size_t from = ids_.size() > kTail ? ids_.size() - kTail : 0;
  for (int tries = 0; tries < 8 && (from = last_cut(from, context)) > 0; ++tries, --from) {
    if (context.size() <= held.size() || !context.ends_with(held)) continue;
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<long>(from));
    context.resize(context.size() - held.size());
    prefix_ = std::move(context);
    emitted_ = prefix_.size();
    prefix_index_ = 0;  // the kept ids hold unsent text: none is a cut yet
    return;
  }
}

std::string StreamDecoder::flush() {
  const std::string text = tok_.decode(ids_, skip_special_);
  std::string out;
  if (text.size() >= emitted_ && text.compare(0, prefix_.size(), prefix_) == 0) out = text.substr(emitted_);
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  emitted_ = 0;
  return out;
}

}  // namespace hearth::text
