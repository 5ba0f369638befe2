// Tool calls written as Python calls: NAME(key=value, ..), one per line or
// as a list [a(..), b(..)], optionally wrapped in print(..) — what Gemma 3
// writes in a ```tool_code block when prompted as Google's function-calling
// guide does (and vLLM's "pythonic" parser reads for Llama 3.2/4). Values
// are Python literals: strings, numbers, True/False/None, lists, tuples, dicts.
#include <cctype>

#include <nlohmann/json.hpp>

#include "text/tools/tool_syntax.h"
#include "text/unicode.h"

namespace hearth::text::tools {

namespace {

using json = nlohmann::ordered_json;

// A digit may lead: tool names may start with one.
bool is_name_char(char c, bool first, bool tool_name) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (tool_name && (c == '-' || (!first && c == '.')));
}

class PythonReader {
 public:
  explicit PythonReader(std::string_view s) : s_(s) {}

  // The whole text as calls; nullopt on anything else.
  std::optional<Calls> calls() {
    Calls out;
    skip();
    bool list = eat('[');
    for (;;) {
      skip();
      if (pos_ == s_.size() || (list && peek() == ']')) break;
      if (!call(out)) return std::nullopt;
      skip();
      bool separated = eat(',') || had_newline_;
      if (!separated && !(list ? peek() == ']' : pos_ == s_.size())) return std::nullopt;
    }
    if (list && !eat(']')) return std::nullopt;
    skip();
    if (pos_ != s_.size() || out.empty()) return std::nullopt;
    return out;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void skip() {
    had_newline_ = false;
    while (pos_ < s_.size() && is_space(s_[pos_])) had_newline_ |= s_[pos_++] == '\n';
  }
  // A keyword argument's name, or with `tool_name` a call's: a tool's name
  // may also hold '-' and (not first) '.' (OpenAI's names are no Python's).
  std::string identifier(bool tool_name) {
    size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_], pos_ == start, tool_name)) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  bool call(Calls& out) {
    std::string name = identifier(true);
    if (name.empty() || !eat('(')) return false;
    if (name == "print") {  // print(f(..)): the call inside
      skip();
      if (depth_ == kMaxDepth) return false;
      ++depth_;
      const bool inner = call(out);
      --depth_;
      if (!inner) return false;
      skip();
      return eat(')');
    }
    json args = json::object();
    for (skip(); !eat(')'); skip()) {
      std::string key = identifier(false);
      skip();
      if (key.empty() || !eat('=')) return false;
      skip();
      auto v = value();
      if (!v) return false;
      args[key] = std::move(*v);
      skip();
      if (peek() != ')' && !eat(',')) return false;
    }
    out.push_back(ToolCall{"", std::move(name), dump_text(args)});
    return true;
  }

  std::optional<json> value() {
    char c = peek();
    if (c == '"' || c == '\'') return string();
    if (c == '[' || c == '(' || c == '{') {
      // As deep as a request body may nest: the reader recurses, and so do
      // the dumps of what it builds.
      if (depth_ == kMaxDepth) return std::nullopt;
      ++depth_;
      auto v = c == '{' ? dict() : sequence(c == '[' ? ']' : ')');
      --depth_;
      return v;
    }
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) return number();
    std::string word = identifier(false);
    if (word == "True") return json(true);
    if (word == "False") return json(false);
    if (word == "None") return json(nullptr);
    return std::nullopt;
  }

  std::optional<json> string() {
    char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      char c = s_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ == s_.size() || !escape(out)) return std::nullopt;
    }
    if (!eat(quote)) return std::nullopt;
    return json(std::move(out));
  }

  // One escape after its backslash, as Python reads it in a str literal;
  // false for one that names no character (\N{..} is not read).
  bool escape(std::string& out) {
    const char e = s_[pos_++];
    auto hex = [&](int digits) -> bool {
      if (s_.size() - pos_ < size_t(digits)) return false;
      char32_t cp = 0;
      for (int i = 0; i < digits; ++i) {
        const char h = s_[pos_++];
        if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
        cp = cp * 16 + char32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;  // no UTF-8 for it
      unicode::append(out, cp);
      return true;
    };
    switch (e) {
      case '\n': return true;  // a line continuation
      case 'a': out += '\a'; return true;
      case 'b': out += '\b'; return true;
      case 'f': out += '\f'; return true;
      case 'n': out += '\n'; return true;
      case 'r': out += '\r'; return true;
      case 't': out += '\t'; return true;
      case 'v': out += '\v'; return true;
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      case 'N': return false;
      case '\\': case '\'': case '"': out += e; return true;
      default: break;
    }
    if (e >= '0' && e <= '7') {  // up to three octal digits
      char32_t cp = char32_t(e - '0');
      for (int i = 0; i < 2 && pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '7'; ++i)
        cp = cp * 8 + char32_t(s_[pos_++] - '0');
      unicode::append(out, cp);
      return true;
    }
    out += '\\';  // Python keeps an unknown escape as written
    out += e;
    return true;
  }

  std::optional<json> sequence(char close) {
    ++pos_;
    json arr = json::array();
    for (skip(); !eat(close); skip()) {
      auto v = value();
      if (!v) return std::nullopt;
      arr.push_back(std::move(*v));
      skip();
      if (peek() != close && !eat(',')) return std::nullopt;
    }
    return arr;
  }

  std::optional<json> dict() {
    ++pos_;
    json obj = json::object();
    for (skip(); !eat('}'); skip()) {
      auto key = value();
      skip();
      if (!key || !key->is_string() || !eat(':')) return std::nullopt;
      skip();
      auto v = value();
      if (!v) return std::nullopt;
      obj[key->get<std::string>()] = std::move(*v);
      skip();
      if (peek() != '}' && !eat(',')) return std::nullopt;
    }
    return obj;
  }

  std::optional<json> number() {
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || std::string_view("+-._").find(s_[pos_]) != std::string_view::npos))
      ++pos_;
    std::string text(s_.substr(start, pos_ - start));
    if (!text.empty() && text[0] == '+') text.erase(0, 1);
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_number()) return std::nullopt;
    return j;
  }

  static constexpr int kMaxDepth = 64;
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;  // brackets and print( open
  bool had_newline_ = false;
};

// A JSON value as a Python literal.
std::string python_literal(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  std::string out;
  if (v.is_array()) {
    for (const auto& item : v) out += (out.empty() ? "" : ", ") + python_literal(item);
    return "[" + out + "]";
  }
  if (v.is_object()) {
    for (const auto& [k, item] : v.items()) out += (out.empty() ? "" : ", ") + json(k).dump() + ": " + python_literal(item);
    return "{" + out + "}";
  }
  return v.dump();  // numbers; strings (a JSON string literal is a valid Python one)
}

}  // namespace

std::optional<Calls> parse_pythonic(std::string_view body) { return PythonReader(body).calls(); }

bool may_be_python_calls(std::string_view body) {
  auto is_name = [](char c, bool first) { return is_name_char(c, first, true); };
  body = body.substr(0, kMaxBodyStart + 1);
  size_t i = 1;  // past the "["
  while (i < body.size() && is_space(body[i])) ++i;
  if (i == body.size()) return true;
  if (!is_name(body[i], true)) return false;
  while (i < body.size() && is_name(body[i], false)) ++i;
  while (i < body.size() && is_space(body[i])) ++i;
  if (i > kMaxBodyStart) return false;
  return i == body.size() || body[i] == '(';
}

std::string python_keyword_arguments(std::string_view arguments_json) {
  json args = json::parse(arguments_json.begin(), arguments_json.end(), nullptr, false);
  std::string out;
  if (!args.is_object()) return out;
  for (const auto& [k, v] : args.items()) out += (out.empty() ? "" : ", ") + k + "=" + python_literal(v);
  return out;
}

}  // namespace hearth::text::tools
