// What the tokenizer.json component readers share (normalizers,
// pre-tokenizers, post-processors, decoders): JSON accessors and the
// String/Regex pattern.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "text/tokenizer/components.h"

namespace hearth::text::detail {


[[noreturn]] inline void bad(const std::string& what) { throw std::runtime_error(what); }

inline std::string type_of(const json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) bad("component without a \"type\": " + j.dump().substr(0, 200));
  return j["type"].get<std::string>();
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // A float or an out-of-range integer would not convert to T faithfully.
    const bool fits = it->is_number_unsigned()  ? std::in_range<T>(it->template get<uint64_t>())
                      : it->is_number_integer() ? std::in_range<T>(it->template get<int64_t>())
                                                : false;
    if (!fits) bad(std::string("\"") + key + "\" must be an integer in range, not " + it->dump());
  }
  return it->template get<T>();
}

inline std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
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
    regex->for_each_match(text, [&](size_t s, size_t e) {
      out.append(text.substr(prev, s - prev));
      out.append(content);
      prev = e;
    });
    out.append(text.substr(prev));
    return out;
  }
};

}  // namespace hearth::text::detail
