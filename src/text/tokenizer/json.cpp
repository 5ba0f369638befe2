// Fast loading of tokenizer.json: a SAX pass that builds the JSON DOM for the
// small parts and streams model.vocab / model.merges (hundreds of thousands
// of entries) straight into vectors; and the flat token index.
#include <cmath>
#include <stdexcept>

#include "text/tokenizer/components.h"

namespace hearth::text::detail {

// ---------------------------------------------------------------- TokenIndex

void TokenIndex::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;
  if (cap > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    size_ = 0;
    for (const auto& s : old)
      if (s.length != UINT32_MAX) {
        size_t i = s.hash & (slots_.size() - 1);
        while (slots_[i].length != UINT32_MAX) i = (i + 1) & (slots_.size() - 1);
        slots_[i] = s;
        ++size_;
      }
  }
}

void TokenIndex::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

void TokenIndex::set(std::string_view key, int32_t id) {
  if ((size_ + 1) * 10 > slots_.size() * 7) grow();
  const uint64_t h = std::hash<std::string_view>{}(key);
  size_t i = h & (slots_.size() - 1);
  while (slots_[i].length != UINT32_MAX) {
    const Slot& s = slots_[i];
    if (s.hash == h && s.length == key.size() && arena_.compare(s.offset, s.length, key) == 0) {
      slots_[i].id = id;
      return;
    }
    i = (i + 1) & (slots_.size() - 1);
  }
  if (arena_.size() + key.size() > UINT32_MAX) throw std::runtime_error("vocabulary too large");
  slots_[i] = Slot{h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), id};
  arena_.append(key);
  ++size_;
}

int32_t TokenIndex::find(std::string_view key) const {
  if (slots_.empty()) return -1;
  const uint64_t h = std::hash<std::string_view>{}(key);
  size_t i = h & (slots_.size() - 1);
  while (slots_[i].length != UINT32_MAX) {
    const Slot& s = slots_[i];
    if (s.hash == h && s.length == key.size() && std::string_view(arena_).substr(s.offset, s.length) == key) return s.id;
    i = (i + 1) & (slots_.size() - 1);
  }
  return -1;
}

// ------------------------------------------------------------------ SAX load

namespace {

class Loader final : public nlohmann::json_sax<json> {
 public:
  explicit Loader(ModelData& data) : data_(data) {}
  json root;

  bool null() override { return capture_ ? true : value(json()); }
  bool boolean(bool v) override { return capture_ ? true : value(json(v)); }
  bool number_integer(number_integer_t v) override { return capture_ ? number(static_cast<double>(v), v) : value(json(v)); }
  bool number_unsigned(number_unsigned_t v) override {
    return capture_ ? number(static_cast<double>(v), static_cast<int64_t>(v)) : value(json(v));
  }
  bool number_float(number_float_t v, const string_t&) override {
    if (!capture_) return value(json(v));
    // An id written as a float counts if it is a whole number (1.0); any
    // other (1.5, 1e30) fails number()'s check. Converting one out of
    // int64's range would be undefined.
    const bool whole = std::fabs(v) < 9.2e18 && v == std::trunc(v);
    return number(v, whole ? static_cast<int64_t>(v) : 0);
  }
  bool string(string_t& v) override {
    if (!capture_) return value(json(std::move(v)));
    if (capture_ == kMerges && depth_in_capture_ == 1) {
      const size_t sp = v.find(' ', 1);  // "a b" (the reference splits on the first space after index 0)
      if (sp == std::string::npos) throw std::runtime_error("bad merge \"" + v + "\"");
      const size_t sp2 = v.find(' ', sp + 1);
      data_.merges.emplace_back(v.substr(0, sp), v.substr(sp + 1, sp2 == std::string::npos ? std::string::npos : sp2 - sp - 1));
    } else if (depth_in_capture_ == 2) {
      if (entry_.size() < 2) entry_.push_back(std::move(v));
    }
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (capture_) {
      if (capture_ == kVocabObject && depth_in_capture_ == 0) {
        ++depth_in_capture_;
        return true;
      }
      throw std::runtime_error("unexpected object inside model vocab/merges");
    }
    if (path_is("vocab") && parent_is_model()) {
      capture_ = kVocabObject;
      data_.has_vocab_object = true;
      depth_in_capture_ = 1;
      return value(json::object());  // placeholder keeps the key present
    }
    return open(json::object());
  }
  bool key(string_t& k) override {
    if (capture_) {
      key_ = std::move(k);
      return true;
    }
    keys_.back() = std::move(k);
    return true;
  }
  bool end_object() override {
    if (capture_) {
      capture_ = kNone;
      depth_in_capture_ = 0;
      return true;
    }
    return close();
  }
  bool start_array(std::size_t) override {
    if (capture_) {
      if ((capture_ == kVocabArray || capture_ == kMerges) && depth_in_capture_ == 1) {
        depth_in_capture_ = 2;
        entry_.clear();
        number_ = 0;
        return true;
      }
      throw std::runtime_error("unexpected nesting inside model vocab/merges");
    }
    if ((path_is("vocab") || path_is("merges")) && parent_is_model()) {
      const bool merges = path_is("merges");
      capture_ = merges ? kMerges : kVocabArray;
      (merges ? data_.has_merges : data_.has_vocab_array) = true;
      depth_in_capture_ = 1;
      return value(json::array());
    }
    return open(json::array());
  }
  bool end_array() override {
    if (capture_) {
      if (depth_in_capture_ == 2) {
        if (capture_ == kMerges) {
          if (entry_.size() != 2) throw std::runtime_error("bad merge entry");
          data_.merges.emplace_back(std::move(entry_[0]), std::move(entry_[1]));
        } else {
          if (entry_.size() != 1) throw std::runtime_error("bad Unigram vocab entry");
          data_.vocab_array.emplace_back(std::move(entry_[0]), number_);
        }
        depth_in_capture_ = 1;
      } else {
        capture_ = kNone;
        depth_in_capture_ = 0;
      }
      return true;
    }
    return close();
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
    throw std::runtime_error(std::string(e.what()) + " (byte " + std::to_string(pos) + ")");
  }

 private:
  enum Capture { kNone, kVocabObject, kVocabArray, kMerges };

  bool number(double d, int64_t i) {
    if (capture_ == kVocabObject && depth_in_capture_ == 1) {
      if (static_cast<double>(i) != d) throw std::runtime_error("token id for \"" + key_ + "\" is not an integer");
      data_.vocab_object.emplace_back(std::move(key_), i);
    } else if (depth_in_capture_ == 2) {
      number_ = d;
    }
    return true;
  }
  bool path_is(const char* k) const { return stack_.size() == 2 && stack_.back()->is_object() && keys_.back() == k; }
  bool parent_is_model() const { return stack_.size() == 2 && keys_[0] == "model"; }
  bool value(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return true;
    }
    json* top = stack_.back();
    if (top->is_object())
      (*top)[keys_.back()] = std::move(v);
    else
      top->push_back(std::move(v));
    return true;
  }
  bool open(json v) {
    json* node;
    if (stack_.empty()) {
      root = std::move(v);
      node = &root;
    } else {
      json* top = stack_.back();
      if (top->is_object()) {
        node = &((*top)[keys_.back()] = std::move(v));
      } else {
        top->push_back(std::move(v));
        node = &top->back();
      }
    }
    stack_.push_back(node);
    keys_.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }

  ModelData& data_;
  std::vector<json*> stack_;
  std::vector<std::string> keys_;
  Capture capture_ = kNone;
  int depth_in_capture_ = 0;
  std::string key_;
  std::vector<std::string> entry_;
  double number_ = 0;
};

}  // namespace

json parse_tokenizer_json(std::string_view text, ModelData& data) {
  Loader loader(data);
  json::sax_parse(text.begin(), text.end(), &loader);
  return std::move(loader.root);
}

}  // namespace hearth::text::detail
