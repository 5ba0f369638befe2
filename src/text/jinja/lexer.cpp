#include "text/jinja/lexer.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

[[noreturn]] void syntax_error(const std::string& msg, int line) {
  throw TemplateError(TemplateError::Kind::Syntax, msg, line);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Python's `\s` at s[i]; returns the byte length of the space or 0.
size_t space_at(const std::string& s, size_t i) {
  if (i >= s.size()) return 0;
  size_t j = i;
  char32_t cp = py::decode(s, j);
  return py::isspace(cp) ? j - i : 0;
}

size_t skip_spaces(const std::string& s, size_t i) {
  while (size_t n = space_at(s, i)) i += n;
  return i;
}

// Python str.rstrip() of s[b, e): the new end.
size_t rstrip_end(const std::string& s, size_t b, size_t e) {
  std::string_view v(s.data() + b, e - b);
  auto stripped = py::strip(v, nullptr, false, true);
  return b + stripped.size();
}

bool all_spaces(const std::string& s, size_t b, size_t e) {
  if (b >= e) return false;  // `\s+` needs at least one character
  while (b < e) {
    size_t n = space_at(s, b);
    if (!n) return false;
    b += n;
  }
  return b == e;
}

int count_newlines(const std::string& s, size_t b, size_t e) {
  int n = 0;
  for (size_t i = b; i < e; ++i) n += s[i] == '\n';
  return n;
}

// Python's "unicode-escape" decoding of a string literal's body.
std::string unescape(const std::string& body, int line) {
  std::string out;
  auto hex = [&](size_t& i, int n) -> char32_t {
    char32_t v = 0;
    for (int k = 0; k < n; ++k, ++i) {
      char c = i < body.size() ? body[i] : '\0';
      int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
      if (d < 0) syntax_error("truncated \\xXX / \\uXXXX escape in string literal", line);
      v = v * 16 + d;
    }
    return v;
  };
  for (size_t i = 0; i < body.size();) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      ++i;
      continue;
    }
    char e = body[i + 1];
    i += 2;
    switch (e) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': py::encode(out, hex(i, 2)); break;
      case 'u': py::encode(out, hex(i, 4)); break;
      case 'U': py::encode(out, hex(i, 8)); break;
      default:
        if (e >= '0' && e <= '7') {
          char32_t v = e - '0';
          for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k, ++i)
            v = v * 8 + (body[i] - '0');
          py::encode(out, v);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

const char* const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%",
                                  "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":",
                                  "|", ",", ";"};

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& opt) : s_(std::move(src)), opt_(opt) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) root();
    push(Tok::Eof, "", line_);
    return std::move(out_);
  }

 private:
  void push(Tok t, std::string text, int line) {
    Token tok;
    tok.type = t;
    tok.text = std::move(text);
    tok.line = line;
    out_.push_back(std::move(tok));
  }

  void advance_to(size_t p) {
    line_ += count_newlines(s_, pos_, p);
    pos_ = p;
    line_starting_ = p > 0 && s_[p - 1] == '\n';
  }

  // Emits the text s_[pos_, end) before a tag, applying `-` / lstrip_blocks.
  void emit_text(size_t end, char sign, bool lstrip_allowed) {
    size_t keep = end;
    if (sign == '-') {
      keep = rstrip_end(s_, pos_, end);
    } else if (sign != '+' && opt_.lstrip_blocks && lstrip_allowed) {
      size_t nl = s_.rfind('\n', end == 0 ? 0 : end - 1);
      size_t l_pos = (nl == std::string::npos || nl < pos_) ? pos_ : nl + 1;
      if ((l_pos > pos_ || line_starting_) && all_spaces(s_, l_pos, end)) keep = l_pos;
    }
    if (keep > pos_) push(Tok::Data, s_.substr(pos_, keep - pos_), line_);
  }

  // Matches `\{%(-|\+|)\s*raw\s*(?:-%}\s*|%})` at p; returns its end or npos.
  size_t match_raw_begin(size_t p) {
    size_t i = p + 2;
    if (i < s_.size() && (s_[i] == '-' || s_[i] == '+')) ++i;
    i = skip_spaces(s_, i);
    if (s_.compare(i, 3, "raw") != 0) return std::string::npos;
    i = skip_spaces(s_, i + 3);
    if (s_.compare(i, 3, "-%}") == 0) return skip_spaces(s_, i + 3);
    if (s_.compare(i, 2, "%}") == 0) return i + 2;
    return std::string::npos;
  }

  void root() {
    size_t p = pos_;
    while (true) {
      p = s_.find('{', p);
      if (p == std::string::npos || p + 1 >= s_.size()) {
        push(Tok::Data, s_.substr(pos_), line_);
        advance_to(s_.size());
        return;
      }
      char k = s_[p + 1];
      if (k == '{' || k == '%' || k == '#') break;
      ++p;
    }
    char kind = s_[p + 1];
    char sign = (p + 2 < s_.size() && (s_[p + 2] == '-' || s_[p + 2] == '+')) ? s_[p + 2] : 0;
    size_t tag_end = p + 2 + (sign ? 1 : 0);
    if (kind == '%') {
      size_t raw_end = match_raw_begin(p);
      if (raw_end != std::string::npos) {
        emit_text(p, sign, true);
        advance_to(raw_end);
        raw();
        return;
      }
    }
    emit_text(p, sign, kind != '{');
    int tag_line = line_ + count_newlines(s_, pos_, p);
    advance_to(tag_end);
    if (kind == '#') {
      comment(tag_line);
    } else if (kind == '%') {
      push(Tok::BlockBegin, "", tag_line);
      tag(true);
    } else {
      push(Tok::VarBegin, "", tag_line);
      tag(false);
    }
  }

  void comment(int start_line) {
    size_t q = s_.find("#}", pos_);
    if (q == std::string::npos) syntax_error("Missing end of comment tag", start_line);
    size_t end;
    if (q > pos_ && s_[q - 1] == '-') {
      end = skip_spaces(s_, q + 2);
    } else if (q > pos_ && s_[q - 1] == '+') {
      end = q + 2;
    } else {
      end = q + 2;
      if (opt_.trim_blocks && end < s_.size() && s_[end] == '\n') ++end;
    }
    advance_to(end);
  }

  void raw() {
    // (.*?)((?:\{%(-|\+|))\s*endraw\s*(?:\+%}|-%}\s*|%}\n?))
    size_t p = pos_;
    while (true) {
      p = s_.find("{%", p);
      if (p == std::string::npos) syntax_error("Missing end of raw directive", line_);
      size_t i = p + 2;
      char sign = 0;
      if (i < s_.size() && (s_[i] == '-' || s_[i] == '+')) sign = s_[i++];
      i = skip_spaces(s_, i);
      if (s_.compare(i, 6, "endraw") != 0) {
        ++p;
        continue;
      }
      i = skip_spaces(s_, i + 6);
      size_t end;
      if (s_.compare(i, 3, "+%}") == 0) {
        end = i + 3;
      } else if (s_.compare(i, 3, "-%}") == 0) {
        end = skip_spaces(s_, i + 3);
      } else if (s_.compare(i, 2, "%}") == 0) {
        end = i + 2;
        if (opt_.trim_blocks && end < s_.size() && s_[end] == '\n') ++end;
      } else {
        ++p;
        continue;
      }
      emit_text(p, sign, true);
      advance_to(end);
      return;
    }
  }

  // Tries the end of a block / variable tag at pos_; returns true if found.
  bool tag_end(bool block) {
    const char* close = block ? "%}" : "}}";
    if (s_.compare(pos_, 2, close) == 0) {
      size_t end = pos_ + 2;
      if (block && opt_.trim_blocks && end < s_.size() && s_[end] == '\n') ++end;
      advance_to(end);
      return true;
    }
    if (s_[pos_] == '-' && s_.compare(pos_ + 1, 2, close) == 0) {
      advance_to(skip_spaces(s_, pos_ + 3));
      return true;
    }
    if (block && s_[pos_] == '+' && s_.compare(pos_ + 1, 2, close) == 0) {
      advance_to(pos_ + 3);
      return true;
    }
    return false;
  }

  void tag(bool block) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= s_.size()) syntax_error("unexpected end of template, expected end of tag", line_);
      int tok_line = line_;
      if (balance.empty() && tag_end(block)) {
        push(block ? Tok::BlockEnd : Tok::VarEnd, "", tok_line);
        return;
      }
      if (size_t n = space_at(s_, pos_)) {
        advance_to(skip_spaces(s_, pos_ + n));
        continue;
      }
      if (lex_number(tok_line) || lex_name(tok_line) || lex_string(tok_line)) continue;
      const char* op = nullptr;
      for (const char* o : kOperators)
        if (s_.compare(pos_, std::strlen(o), o) == 0) {
          op = o;
          break;
        }
      if (!op) {
        size_t end = pos_;
        py::decode(s_, end);
        syntax_error("unexpected char '" + s_.substr(pos_, end - pos_) + "'", tok_line);
      }
      char c = op[0];
      if (!op[1] && (c == '(' || c == '[' || c == '{')) {
        balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      } else if (!op[1] && (c == ')' || c == ']' || c == '}')) {
        if (balance.empty()) syntax_error(std::string("unexpected '") + c + "'", tok_line);
        if (balance.back() != c)
          syntax_error(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", tok_line);
        balance.pop_back();
      }
      push(Tok::Op, op, tok_line);
      advance_to(pos_ + std::strlen(op));
    }
  }

  // Digits with single underscores between them, at i; returns the end or i.
  size_t digits(size_t i) const {
    size_t j = i;
    while (j < s_.size() && is_digit(s_[j])) {
      ++j;
      if (j + 1 < s_.size() && s_[j] == '_' && is_digit(s_[j + 1])) ++j;
    }
    return j;
  }

  bool lex_number(int line) {
    if (!is_digit(s_[pos_])) return false;
    // float: (?<!\.)digits((\.digits)?e[+-]?digits|\.digits)
    if (pos_ == 0 || s_[pos_ - 1] != '.') {
      size_t ip = digits(pos_);
      size_t fend = std::string::npos;
      auto exponent = [&](size_t i) -> size_t {
        if (i < s_.size() && (s_[i] == 'e' || s_[i] == 'E')) {
          size_t j = i + 1;
          if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
          size_t d = digits(j);
          if (d > j) return d;
        }
        return std::string::npos;
      };
      size_t frac = std::string::npos;
      if (ip < s_.size() && s_[ip] == '.') {
        size_t d = digits(ip + 1);
        if (d > ip + 1) frac = d;
      }
      if (frac != std::string::npos) fend = exponent(frac);
      if (fend == std::string::npos) fend = exponent(ip);
      if (fend == std::string::npos) fend = frac;
      if (fend != std::string::npos) {
        std::string text;
        for (size_t i = pos_; i < fend; ++i)
          if (s_[i] != '_') text += s_[i];
        Token t;
        t.type = Tok::Float;
        t.text = text;
        t.fval = std::strtod(text.c_str(), nullptr);
        t.line = line;
        out_.push_back(t);
        advance_to(fend);
        return true;
      }
    }
    // integer: 0b / 0o / 0x prefixes, decimal, or zeros.
    size_t i = pos_;
    int base = 10;
    std::string text;
    if (s_[i] == '0' && i + 2 < s_.size() &&
        (s_[i + 1] == 'b' || s_[i + 1] == 'B' || s_[i + 1] == 'o' || s_[i + 1] == 'O' ||
         s_[i + 1] == 'x' || s_[i + 1] == 'X')) {
      char p = static_cast<char>(s_[i + 1] | 0x20);
      base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
      auto ok = [&](char c) {
        if (base == 2) return c == '0' || c == '1';
        if (base == 8) return c >= '0' && c <= '7';
        return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
      };
      size_t j = i + 2;
      while (j < s_.size()) {
        if (s_[j] == '_' && j + 1 < s_.size() && ok(s_[j + 1])) ++j;
        if (!ok(s_[j])) break;
        text += s_[j++];
      }
      if (!text.empty()) i = j;
      else base = 10;
    }
    if (base == 10) {
      text.clear();
      if (s_[i] == '0') {
        // 0(_?0)*
        size_t j = i + 1;
        while (j < s_.size() && (s_[j] == '0' || (s_[j] == '_' && j + 1 < s_.size() && s_[j + 1] == '0'))) ++j;
        text = "0";
        i = j;
      } else {
        size_t j = digits(i);
        for (size_t k = i; k < j; ++k)
          if (s_[k] != '_') text += s_[k];
        i = j;
      }
    }
    Token t;
    t.type = Tok::Int;
    t.text = text;
    t.line = line;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), nullptr, base);
    // Python ints are unbounded; hearth's are 64-bit, so larger literals are
    // clamped (which keeps them right as slice bounds and in comparisons).
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) v = INT64_MAX;
    t.ival = static_cast<int64_t>(v);
    out_.push_back(t);
    advance_to(i);
    return true;
  }

  bool lex_name(int line) {
    size_t j = pos_;
    if (!py::is_identifier_start(py::decode(s_, j))) return false;
    while (j < s_.size()) {
      size_t k = j;
      if (!py::is_identifier_continue(py::decode(s_, k))) break;
      j = k;
    }
    push(Tok::Name, s_.substr(pos_, j - pos_), line);
    advance_to(j);
    return true;
  }

  bool lex_string(int line) {
    char q = s_[pos_];
    if (q != '\'' && q != '"') return false;
    size_t j = pos_ + 1;
    while (j < s_.size() && s_[j] != q) j += s_[j] == '\\' ? 2 : 1;
    if (j >= s_.size()) syntax_error("unterminated string literal", line);
    push(Tok::String, unescape(s_.substr(pos_ + 1, j - pos_ - 1), line), line);
    advance_to(j + 1);
    return true;
  }

  std::string s_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> out_;
};

// Newlines normalized to "\n" and one trailing newline dropped, as jinja2 does.
std::string normalize_source(const std::string& src, bool keep_trailing_newline) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexOptions& opt) {
  return Lexer(normalize_source(source, opt.keep_trailing_newline), opt).run();
}

}  // namespace hearth::text::jinja
