#include "text/jinja/unicode.h"

#include "text/jinja/value.h"

#include <utf8proc.h>

namespace hearth::text::jinja::py {

char32_t decode(std::string_view s, size_t& i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 1 || n == 0 || i + n > s.size()) {
    ++i;
    return c;
  }
  char32_t cp = c & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) {
      ++i;
      return c;
    }
    cp = (cp << 6) | (d & 0x3F);
  }
  i += n;
  return cp;
}

void encode(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offs;
  offs.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    offs.push_back(i);
    decode(s, i);
  }
  offs.push_back(s.size());
  return offs;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) decode(s, i);
  return n;
}

static utf8proc_category_t category(char32_t cp) {
  if (cp > 0x10FFFF) return UTF8PROC_CATEGORY_CN;
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

bool isspace(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D:
    case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x20:
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool isprintable(char32_t cp) {
  if (cp == ' ') return true;
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

bool isalpha(char32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
}

bool isdigit(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_ND; }

bool isalnum(char32_t cp) {
  auto c = category(cp);
  return isalpha(cp) || c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL ||
         c == UTF8PROC_CATEGORY_NO;
}

bool isword(char32_t cp) { return cp == '_' || isalnum(cp); }

bool islinebreak(char32_t cp) {
  switch (cp) {
    case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x85: case 0x2028: case 0x2029:
      return true;
    default:
      return false;
  }
}

bool is_identifier_start(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  return isalpha(cp) || category(cp) == UTF8PROC_CATEGORY_NL;
}

bool is_identifier_continue(char32_t cp) {
  if (cp < 0x80) return is_identifier_start(cp) || (cp >= '0' && cp <= '9');
  auto c = category(cp);
  return is_identifier_start(cp) || c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC ||
         c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_PC;
}

char32_t upper(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
}

char32_t lower(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

static char32_t titlecase(char32_t cp) {
  if (cp < 0x80) return upper(cp);
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp)));
}

bool iscased_upper(char32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LT;
}
bool iscased_lower(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_LL; }

template <class F>
static std::string map_cps(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) encode(out, f(decode(s, i)));
  return out;
}

std::string to_upper(std::string_view s) { return map_cps(s, upper); }
std::string to_lower(std::string_view s) { return map_cps(s, lower); }

std::string capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    char32_t cp = decode(s, i);
    encode(out, first ? titlecase(cp) : lower(cp));
    first = false;
  }
  return out;
}

std::string title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (size_t i = 0; i < s.size();) {
    char32_t cp = decode(s, i);
    bool cased = iscased_upper(cp) || iscased_lower(cp);
    encode(out, prev_cased ? lower(cp) : titlecase(cp));
    prev_cased = cased;
  }
  return out;
}

static bool in_chars(char32_t cp, const std::string* chars) {
  if (!chars) return isspace(cp);
  for (size_t i = 0; i < chars->size();)
    if (decode(*chars, i) == cp) return true;
  return false;
}

std::string_view strip(std::string_view s, const std::string* chars, bool left, bool right) {
  auto offs = code_point_offsets(s);
  auto cp_at = [&](size_t k) {
    size_t j = offs[k];
    return decode(s, j);
  };
  size_t b = 0, e = offs.size() - 1;
  if (left)
    while (b < e && in_chars(cp_at(b), chars)) ++b;
  if (right)
    while (e > b && in_chars(cp_at(e - 1), chars)) --e;
  return s.substr(offs[b], offs[e] - offs[b]);
}

// Splits on runs of whitespace (str.split() with no separator).
static std::vector<std::string> split_ws(std::string_view s, long long maxsplit) {
  std::vector<std::string> out;
  size_t i = 0;
  auto skip_ws = [&] {
    while (i < s.size()) {
      size_t j = i;
      if (!isspace(decode(s, j))) break;
      i = j;
    }
  };
  skip_ws();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<long long>(out.size()) == maxsplit) {
      out.emplace_back(s.substr(i));
      return out;
    }
    size_t start = i;
    while (i < s.size()) {
      size_t j = i;
      if (isspace(decode(s, j))) break;
      i = j;
    }
    out.emplace_back(s.substr(start, i - start));
    skip_ws();
  }
  return out;
}

std::vector<std::string> split(std::string_view s, const std::string* sep, long long maxsplit) {
  if (!sep) return split_ws(s, maxsplit);
  std::vector<std::string> out;
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<long long>(out.size()) < maxsplit) {
    size_t f = s.find(*sep, pos);
    if (f == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, f - pos));
    pos = f + sep->size();
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, long long maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    // Mirror of split_ws from the right, over code point indices.
    auto offs = code_point_offsets(s);
    auto ws = [&](size_t k) {
      size_t j = offs[k];
      return isspace(decode(s, j));
    };
    size_t e = offs.size() - 1;
    while (e > 0 && ws(e - 1)) --e;
    while (e > 0) {
      if (maxsplit >= 0 && static_cast<long long>(out.size()) == maxsplit) {
        out.emplace_back(s.substr(0, offs[e]));
        break;
      }
      size_t b = e;
      while (b > 0 && !ws(b - 1)) --b;
      out.emplace_back(s.substr(offs[b], offs[e] - offs[b]));
      e = b;
      while (e > 0 && ws(e - 1)) --e;
    }
  } else {
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<long long>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
    }
    out.emplace_back(s.substr(0, end));
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    size_t j = i;
    char32_t cp = decode(s, j);
    if (islinebreak(cp)) {
      size_t end = j;
      if (cp == '\r' && end < s.size() && s[end] == '\n') ++end;
      out.emplace_back(s.substr(start, (keepends ? end : i) - start));
      start = i = end;
    } else {
      i = j;
    }
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view rep, long long count) {
  std::string out;
  if (old.empty()) {
    auto offs = code_point_offsets(s);
    long long n = 0;
    for (size_t k = 0; k + 1 < offs.size(); ++k) {
      if (count < 0 || n < count) out += rep, ++n;
      out += s.substr(offs[k], offs[k + 1] - offs[k]);
      check_text_size(out.size());
    }
    if (count < 0 || n < count) out += rep;
    return out;
  }
  size_t pos = 0;
  long long n = 0;
  while (count < 0 || n < count) {
    size_t f = s.find(old, pos);
    if (f == std::string_view::npos) break;
    out += s.substr(pos, f - pos);
    out += rep;
    check_text_size(out.size());
    pos = f + old.size();
    ++n;
  }
  out += s.substr(pos);
  return out;
}

}  // namespace hearth::text::jinja::py
