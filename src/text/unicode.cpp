#include "text/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

namespace hearth::text::unicode {

char32_t next(std::string_view s, size_t& i) {
  const size_t n = s.size();
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int need;
  char32_t cp;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    ++i;
    return 0xFFFD;
  }
  size_t j = i + 1;
  for (int k = 0; k < need; ++k, ++j) {
    if (j >= n) {
      i = j;
      return 0xFFFD;
    }
    const auto b = static_cast<unsigned char>(s[j]);
    if (b < lo || b > hi) {
      i = j;
      return 0xFFFD;
    }
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
  }
  i = j;
  return cp;
}

void append(std::string& out, char32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode(char32_t cp) {
  std::string s;
  append(s, cp);
  return s;
}

int sequence_length(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

bool is_valid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    const size_t start = i;
    const char32_t cp = next(s, i);
    if (cp == 0xFFFD && !(i - start == 3 && s.compare(start, 3, "\xEF\xBF\xBD") == 0)) return false;
  }
  return true;
}

std::string sanitize(std::string_view s) {
  if (is_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) append(out, next(s, i));
  return out;
}

size_t complete_prefix(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence is cut short.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte
    const int len = sequence_length(b);
    if (len > static_cast<int>(back)) {
      // Check that what we have so far is a valid prefix.
      size_t i = n - back;
      const char32_t cp = next(s, i);
      if (cp == 0xFFFD && i == n) return n - back;
    }
    return n;
  }
  return n;
}

size_t count_code_points(std::string_view s) {
  size_t count = 0;
  for (size_t i = 0; i < s.size();) {
    next(s, i);
    ++count;
  }
  return count;
}

namespace {

// Code points that are unchanged by `form` and never compose with a
// neighbour: text made only of them is already normalized.
bool stable(char32_t cp, Form form) {
  const bool compat = form == Form::NFKC || form == Form::NFKD;
  if (cp < (compat ? 0xA0u : 0x300u)) return cp < 0xC0 || form == Form::NFC;
  if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF)) return true;  // CJK ideographs
  if (cp >= 0xAC00 && cp <= 0xD7A3) return form == Form::NFC || form == Form::NFKC;  // Hangul syllables
  return false;
}

}  // namespace

namespace {

// What utf8proc_map does, but for the canonical ordering: utf8proc sorts a
// run of combining marks by swapping neighbours, a square of the run's
// length (2M marks after one letter: hours). Here each character is
// decomposed alone, each run of marks is sorted stably by combining class
// (the same order), and utf8proc composes the result.
std::string normalize_slow(std::string_view s, Form form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case Form::NFC: options |= UTF8PROC_COMPOSE; break;
    case Form::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case Form::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case Form::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  const auto opts = static_cast<utf8proc_option_t>(options);
  auto fail = [](utf8proc_ssize_t code) {
    throw std::runtime_error(std::string("unicode normalization failed: ") + utf8proc_errmsg(code));
  };
  std::vector<utf8proc_int32_t> cps;
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next(s, i);
    utf8proc_int32_t buf[32];  // the longest decomposition is 18 code points
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    const utf8proc_ssize_t n = utf8proc_decompose_char(utf8proc_int32_t(cp), buf, 32, opts, &boundclass);
    if (n < 0 || n > 32) fail(n < 0 ? n : UTF8PROC_ERROR_OVERFLOW);
    cps.insert(cps.end(), buf, buf + n);
  }
  auto ccc = [](utf8proc_int32_t c) { return utf8proc_get_property(c)->combining_class; };
  for (size_t i = 0; i < cps.size();) {
    if (ccc(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < cps.size() && ccc(cps[end]) != 0) ++end;
    std::stable_sort(cps.begin() + ptrdiff_t(i), cps.begin() + ptrdiff_t(end),
                     [&](utf8proc_int32_t a, utf8proc_int32_t b) { return ccc(a) < ccc(b); });
    i = end;
  }
  const utf8proc_ssize_t len = utf8proc_normalize_utf32(cps.data(), utf8proc_ssize_t(cps.size()), opts);
  if (len < 0) fail(len);
  std::string out;
  out.reserve(size_t(len));
  for (utf8proc_ssize_t k = 0; k < len; ++k) {
    utf8proc_uint8_t bytes[4];
    out.append(reinterpret_cast<char*>(bytes), size_t(utf8proc_encode_char(cps[size_t(k)], bytes)));
  }
  return out;
}

}  // namespace

std::string normalize(std::string_view input, Form form) {
  if (input.empty()) return {};
  std::string clean;
  if (!is_valid(input)) {
    clean = sanitize(input);
    input = clean;
  }
  // Runs of stable characters are copied; the rest goes through utf8proc in
  // pieces cut before a stable character that a stable character follows
  // (nothing composes across such a cut).
  std::string out;
  out.reserve(input.size());
  size_t pending = 0;  // start of the not-yet-normalized region
  size_t i = 0;
  bool cur_stable = false;
  size_t cur_start = 0;
  auto read = [&](size_t& pos, bool& st) {
    const auto b = static_cast<unsigned char>(input[pos]);
    if (b < 0x80) {
      ++pos;
      st = true;
    } else {
      st = stable(next(input, pos), form);
    }
  };
  if (i < input.size()) {
    cur_start = i;
    read(i, cur_stable);
  }
  while (cur_start < input.size()) {
    const size_t next_start = i;
    bool next_stable = true;
    if (i < input.size()) read(i, next_stable);
    if (cur_stable && next_stable) {
      if (pending < cur_start) out += normalize_slow(input.substr(pending, cur_start - pending), form);
      out.append(input, cur_start, next_start - cur_start);
      pending = next_start;
    }
    cur_start = next_start;
    cur_stable = next_stable;
  }
  if (pending < input.size()) out += normalize_slow(input.substr(pending), form);
  return out;
}

namespace {

utf8proc_category_t category(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

bool is_cased(char32_t cp) {
  const auto c = category(cp);
  if (c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT) return true;
  const auto i = static_cast<utf8proc_int32_t>(cp);
  return utf8proc_tolower(i) != i || utf8proc_toupper(i) != i;
}

bool is_case_ignorable(char32_t cp) {
  switch (cp) {
    case 0x27: case 0x2E: case 0x3A: case 0x5E: case 0x60: case 0xA8: case 0xAD: case 0xAF:
    case 0xB4: case 0xB7: case 0xB8: case 0x387: case 0x5F4: case 0x2018: case 0x2019:
    case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55: case 0xFF07: case 0xFF0E:
    case 0xFF1A:
      return true;
    default:
      break;
  }
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_ME || c == UTF8PROC_CATEGORY_CF ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_SK;
}

}  // namespace

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::vector<char32_t> cps;
  bool ascii = true;
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  if (ascii) {
    for (char c : s) out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    return out;
  }
  for (size_t i = 0; i < s.size();) cps.push_back(next(s, i));
  for (size_t k = 0; k < cps.size(); ++k) {
    const char32_t cp = cps[k];
    if (cp == 0x130) {  // İ → i + combining dot above
      append(out, 0x69);
      append(out, 0x307);
      continue;
    }
    if (cp == 0x3A3) {  // Σ: final sigma rule
      bool before = false;
      for (size_t j = k; j-- > 0;) {
        if (is_case_ignorable(cps[j])) continue;
        before = is_cased(cps[j]);
        break;
      }
      bool after = false;
      for (size_t j = k + 1; j < cps.size(); ++j) {
        if (is_case_ignorable(cps[j])) continue;
        after = is_cased(cps[j]);
        break;
      }
      append(out, before && !after ? 0x3C2 : 0x3C3);
      continue;
    }
    append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
  }
  return out;
}

bool is_mark(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

std::string remove_marks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next(s, i);
    if (!is_mark(cp)) append(out, cp);
  }
  return out;
}

std::string remove_nonspacing_marks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next(s, i);
    if (category(cp) != UTF8PROC_CATEGORY_MN) append(out, cp);
  }
  return out;
}

bool is_js_space(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_white_space(char32_t cp) {
  if (cp == 0x85) return true;
  if (cp == 0xFEFF) return false;
  return is_js_space(cp);
}

std::string_view js_trim_start(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!is_js_space(next(s, j))) break;
    i = j;
  }
  return s.substr(i);
}

std::string_view js_trim_end(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 && end - start < 4) --start;
    size_t j = start;
    const char32_t cp = next(s, j);
    if (j != end || !is_js_space(cp)) break;
    end = start;
  }
  return s.substr(0, end);
}

std::string_view js_trim(std::string_view s) { return js_trim_end(js_trim_start(s)); }

bool is_letter(char32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool is_number(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(char32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool is_control_like(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO ||
         c == UTF8PROC_CATEGORY_CS;
}

}  // namespace hearth::text::unicode
