// Tool-call arguments as they stream: finding where a JSON call's arguments
// begin, and following the arguments object to its end (tool_syntax.h).
#include <cctype>
#include <cstring>

#include "text/tools/tool_syntax.h"

namespace hearth::text::tools {

namespace {

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A JSON string at s[pos] ('"' there): its end (after the closing quote), or
// npos when it has not ended yet.
size_t string_end(std::string_view s, size_t pos) {
  for (size_t i = pos + 1; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == '"') return i + 1;
  }
  return std::string_view::npos;
}

}  // namespace

CallHeader json_call_header(std::string_view body) {
  using State = CallHeader::State;
  CallHeader h;
  size_t i = 0;
  auto skip = [&] {
    while (i < body.size() && is_json_space(body[i])) ++i;
    return i < body.size();
  };
  auto expect = [&](char c) -> std::optional<State> {  // nullopt: found
    if (!skip()) return State::Incomplete;
    if (body[i] != c) return State::NoMatch;
    ++i;
    return std::nullopt;
  };
  auto fail = [&](State s) {
    h.state = s;
    return h;
  };
  if (!skip()) return h;
  if (body[i] == '[') ++i;
  if (auto s = expect('{')) return fail(*s);
  for (;;) {
    if (!skip()) return h;
    if (body[i] != '"') return fail(State::NoMatch);
    const size_t key_end = string_end(body, i);
    if (key_end == std::string_view::npos) return h;
    const std::string_view key = body.substr(i + 1, key_end - i - 2);
    i = key_end;
    if (auto s = expect(':')) return fail(*s);
    if (!skip()) return h;
    if (key == "arguments" || key == "parameters") {
      // Only an object streams; a string holding one is read whole at the end.
      if (h.name.empty() || body[i] != '{') return fail(State::NoMatch);
      h.state = State::Match;
      h.arguments = i;
      return h;
    }
    if (body[i] != '"') return fail(State::NoMatch);  // other keys: string values only
    const size_t value_end = string_end(body, i);
    if (value_end == std::string_view::npos) return h;
    if (key == "name" || key == "tool_name") {
      const std::string_view name = body.substr(i + 1, value_end - i - 2);
      if (name.find('\\') != std::string_view::npos) return fail(State::NoMatch);
      h.name = std::string(name);
    }
    i = value_end;
    if (auto s = expect(',')) return fail(*s);
  }
}

size_t JsonObjectScan::feed(std::string_view text, size_t from, size_t to) {
  size_t i = from;
  for (; i < to && !complete_ && !failed_; ++i) {
    const char c = text[i];
    if (in_string_) {
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == '"') in_string_ = false;
      else if (static_cast<unsigned char>(c) < 0x20) failed_ = true;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) complete_ = true;
    } else if (depth_ == 0 || c == '\0' || !(is_json_space(c) || std::strchr(",:-+.0123456789eEtrufalsn", c))) {
      failed_ = true;  // before the object opened, or a byte no JSON value has outside strings
    }
    if (failed_) return i;
  }
  return i;
}

}  // namespace hearth::text::tools
