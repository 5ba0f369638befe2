#include "text/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "text/unicode.h"

namespace hearth::text {

namespace {

// Per-thread match state: match data big enough for the whole-match pair and a
// JIT stack that grows to 4 MiB (long runs of whitespace recurse deeply).
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  MatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    if (context && stack) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code)
    throw std::runtime_error("bad regex /" + pattern + "/ at offset " + std::to_string(offset) + ": " +
                             pcre2_message(error));
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Regex::search(std::string_view text, size_t start, size_t& mstart, size_t& mend) const {
  auto& st = match_state();
  auto* code = static_cast<pcre2_code*>(code_);
  // PCRE2's match limit (10 million by default) counts steps: `\s*[\r\n]+`
  // takes about one per byte of a whitespace run it gives back, so a long
  // enough run of spaces (10 MB) would fail. The limit grows with the text, so it
  // still stops a pattern's runaway backtracking but not a long input.
  const uint64_t limit = 10'000'000 + 16 * uint64_t(text.size() - std::min(start, text.size()));
  pcre2_set_match_limit(st.context, uint32_t(std::min<uint64_t>(limit, UINT32_MAX)));
  int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), start,
                       PCRE2_NO_UTF_CHECK, st.data, st.context);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // retry without JIT (heap-based interpreter)
    rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), start,
                     PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, st.data, st.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) throw std::runtime_error("regex match failed for /" + pattern_ + "/: " + pcre2_message(rc));
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  mstart = ov[0];
  mend = ov[1];
  if (mend < mstart) mend = mstart;  // \K tricks; never negative length
  return true;
}

void Regex::for_each_match(std::string_view text, const std::function<void(size_t, size_t)>& match) const {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t s, e;
    if (!search(text, pos, s, e)) break;
    match(s, e);
    if (e > s) {
      pos = e;
    } else {
      if (e >= text.size()) break;
      size_t i = e;
      unicode::next(text, i);
      pos = i;
    }
  }
}

bool Regex::full_match(std::string_view text) const {
  size_t s, e;
  return search(text, 0, s, e) && s == 0 && e == text.size();
}

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::strchr("\\^$.|?*+()[]{}-/#", c) && c != 0) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Oniguruma → PCRE2 translation (mirrors the reference port's rewrite).

namespace {

const std::string kWordInClass = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
const std::string kWordChars = kWordInClass + "\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}";
const std::string kWordClass = "[" + kWordChars + "]";
const std::string kNonWordClass = "[^" + kWordChars + "]";
const std::string kHex = "0-9A-Fa-f";
const std::string kAny = "[\\s\\S]";
const std::string kSpace = "\\p{White_Space}";

std::string word_boundary(bool negate) {
  const std::string& w = kWordClass;
  if (!negate) return "(?:(?<!" + w + ")(?=" + w + ")|(?<=" + w + ")(?!" + w + "))";
  return "(?:(?<!" + w + ")(?!" + w + ")|(?<=" + w + ")(?=" + w + "))";
}

size_t char_len(std::string_view s, size_t i) {
  const int n = unicode::sequence_length(static_cast<unsigned char>(s[i]));
  return n == 0 ? 1 : std::min<size_t>(n, s.size() - i);
}

bool is_ascii_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_alnum(char c) { return is_ascii_letter(c) || (c >= '0' && c <= '9'); }

std::string fold_letter(char c) {
  const char lo = static_cast<char>(c | 0x20), up = static_cast<char>(c & ~0x20);
  return std::string("[") + lo + up + "]";
}

// \x{HH} of an ASCII letter inside (?i:...) becomes a two-case class.
std::string folded_hex(std::string_view hex) {
  if (hex.empty() || hex.size() > 8) return {};
  unsigned long v = 0;
  for (char c : hex) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return {};
    v = v * 16 + static_cast<unsigned long>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  if (v > 127 || !is_ascii_letter(static_cast<char>(v))) return {};
  return fold_letter(static_cast<char>(v));
}

struct Operand {
  std::string fragment;
  std::vector<std::string> alternatives;
  enum { kNone, kScalar, kSet, kRange, kCompleteRange } tail = kNone;
  bool complex = false;
};

[[noreturn]] void fail(std::string_view pattern, const std::string& what) {
  throw std::runtime_error("unsupported regex /" + std::string(pattern) + "/: " + what);
}

void add_atom(Operand& op, const std::string& atom, std::string_view pattern) {
  if (op.tail == Operand::kRange) fail(pattern, "range with a set-valued endpoint");
  op.alternatives.push_back(atom);
  op.tail = Operand::kSet;
  op.complex = true;
}

void append_fragment(Operand& op, const std::string& frag, bool set_valued, std::string_view pattern) {
  if (set_valued && op.tail == Operand::kRange) fail(pattern, "range with a set-valued endpoint");
  op.fragment += frag;
  if (op.tail == Operand::kRange) {
    op.tail = Operand::kCompleteRange;
    return;
  }
  op.tail = set_valued ? Operand::kSet : Operand::kScalar;
  op.complex = op.complex || set_valued;
}

std::string set_union(const std::vector<std::string>& pieces) {
  if (pieces.size() == 1) return pieces[0];
  std::string alt;
  for (size_t i = 0; i < pieces.size(); ++i) alt += (i ? "|" : "") + pieces[i];
  return "(?:(?=(?:" + alt + "))" + kAny + ")";
}

std::string compile_operand(const Operand& op) {
  std::vector<std::string> pieces;
  if (!op.fragment.empty()) pieces.push_back("[" + op.fragment + "]");
  for (const auto& a : op.alternatives) pieces.push_back(a);
  return set_union(pieces);
}

// Parses a braced escape (\p{..}, \P{..}, \x{..}) at i; returns its length or 0.
size_t braced_escape(std::string_view p, size_t i, char& kind, std::string& body) {
  if (i + 2 >= p.size() || p[i] != '\\') return 0;
  kind = p[i + 1];
  if (kind != 'p' && kind != 'P' && kind != 'x' && kind != 'u') return 0;
  if (p[i + 2] != '{') return 0;
  const size_t close = p.find('}', i + 3);
  if (close == std::string_view::npos) return 0;
  body = std::string(p.substr(i + 3, close - i - 3));
  return close + 1 - i;
}

// Fixed-width escapes \xHH, \uHHHH, \cX: returns (length, PCRE2 text) or 0.
size_t fixed_escape(std::string_view p, size_t i, std::string& out, std::string& hex) {
  auto hexn = [&](size_t at, size_t n) {
    if (at + n > p.size()) return false;
    for (size_t k = 0; k < n; ++k)
      if (!std::isxdigit(static_cast<unsigned char>(p[at + k]))) return false;
    return true;
  };
  if (i + 1 >= p.size() || p[i] != '\\') return 0;
  if (p[i + 1] == 'x' && hexn(i + 2, 2)) {
    hex = std::string(p.substr(i + 2, 2));
    out = "\\x{" + hex + "}";
    return 4;
  }
  if (p[i + 1] == 'u' && hexn(i + 2, 4)) {
    hex = std::string(p.substr(i + 2, 4));
    out = "\\x{" + hex + "}";
    return 6;
  }
  if (p[i + 1] == 'c' && i + 2 < p.size() && is_ascii_letter(p[i + 2])) {
    hex.clear();
    out = std::string(p.substr(i, 3));
    return 3;
  }
  return 0;
}

const char* raw_whitespace_escape(char c) {
  switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\f': return "\\f";
    case '\v': return "\\x{0B}";
    default: return nullptr;
  }
}

const char* posix_fragment(std::string_view name) {
  if (name == "alpha") return "\\p{Alphabetic}";
  if (name == "alnum") return "\\p{Alphabetic}\\p{Nd}";
  if (name == "digit") return "\\p{Nd}";
  if (name == "lower") return "\\p{Lowercase}";
  if (name == "upper") return "\\p{Uppercase}";
  if (name == "space") return "\\p{White_Space}";
  if (name == "blank") return "\\t\\p{Zs}";
  if (name == "punct") return "\\p{P}\\p{S}";
  if (name == "cntrl") return "\\p{Cc}";
  if (name == "word") return "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
  if (name == "xdigit") return "0-9A-Fa-f";
  return nullptr;
}

size_t class_escape(std::string_view p, size_t i, Operand& op) {
  char kind;
  std::string body;
  if (size_t n = braced_escape(p, i, kind, body)) {
    if (kind == 'P' && body == "Word") {
      add_atom(op, "[^" + kWordInClass + "]", p);
    } else if (kind == 'p' && body == "Word") {
      append_fragment(op, kWordInClass, true, p);
    } else if (kind == 'x' || kind == 'u') {
      append_fragment(op, "\\x{" + body + "}", false, p);
    } else {
      append_fragment(op, std::string(p.substr(i, n)), true, p);
    }
    return i + n;
  }
  std::string fixed, hex;
  if (size_t n = fixed_escape(p, i, fixed, hex)) {
    append_fragment(op, fixed, false, p);
    return i + n;
  }
  if (i + 1 >= p.size()) fail(p, "unterminated escape in character class");
  const char c = p[i + 1];
  const size_t after = i + 1 + char_len(p, i + 1);
  if (const char* ws = raw_whitespace_escape(c)) {
    append_fragment(op, ws, false, p);
    return after;
  }
  switch (c) {
    case 'W': add_atom(op, "[^" + kWordInClass + "]", p); return after;
    case 'H': add_atom(op, "[^" + kHex + "]", p); return after;
    case 'h': append_fragment(op, kHex, true, p); return after;
    case 'w': append_fragment(op, kWordInClass, true, p); return after;
    case 'd': append_fragment(op, "\\p{Nd}", true, p); return after;
    case 'D': append_fragment(op, "\\P{Nd}", true, p); return after;
    case 's': append_fragment(op, kSpace, true, p); return after;
    case 'S': append_fragment(op, "\\P{White_Space}", true, p); return after;
    case 'a': append_fragment(op, "\\x{07}", false, p); return after;
    case 'e': append_fragment(op, "\\x{1B}", false, p); return after;
    case 'v': append_fragment(op, "\\x{0B}", false, p); return after;
    default: break;
  }
  if (is_alnum(c)) {
    append_fragment(op, std::string("\\") + c, false, p);
  } else if (static_cast<unsigned char>(c) < 0x80) {
    append_fragment(op, std::string("\\") + c, false, p);
  } else {
    append_fragment(op, std::string(p.substr(i + 1, after - i - 1)), false, p);
  }
  return after;
}

std::string ascii_fold_additions(const std::string& positive_atom) {
  Regex membership("^(?:" + positive_atom + ")$");
  std::string add;
  for (char up = 'A'; up <= 'Z'; ++up) {
    const char lo = static_cast<char>(up + 32);
    const bool has_up = membership.full_match(std::string_view(&up, 1));
    const bool has_lo = membership.full_match(std::string_view(&lo, 1));
    if (has_up != has_lo) add.push_back(has_up ? lo : up);
  }
  return add;
}

struct ClassResult {
  std::string atom;
  size_t end;
  bool negated;
  bool complex;
};

ClassResult parse_class(std::string_view p, size_t start, bool fold, bool apply_fold, int depth) {
  if (depth > 256) fail(p, "character classes nested too deeply");
  size_t i = start + 1;
  const bool negated = i < p.size() && p[i] == '^';
  if (negated) ++i;
  const size_t first = i;
  std::vector<Operand> ops(1);
  while (i < p.size()) {
    Operand& op = ops.back();
    const char c = p[i];
    if (c == '\\') {
      i = class_escape(p, i, op);
      continue;
    }
    if (c == ']') {
      if (i == first) {
        append_fragment(op, "\\]", false, p);
        ++i;
        continue;
      }
      if (op.tail == Operand::kNone) fail(p, "empty character class or intersection operand");
      bool complex = false;
      for (const auto& o : ops) complex = complex || o.complex;
      const std::string first_atom = compile_operand(ops[0]);
      std::string positive = first_atom;
      if (ops.size() > 1) {
        std::string ahead;
        for (size_t j = 1; j < ops.size(); ++j) ahead += "(?=" + compile_operand(ops[j]) + ")";
        positive = "(?:" + ahead + first_atom + ")";
      }
      const bool direct = ops.size() == 1 && op.alternatives.empty();
      std::string fragment = op.fragment;
      if (fold && apply_fold) {
        const std::string add = ascii_fold_additions(positive);
        if (!add.empty()) {
          if (direct) {
            fragment += add;
            positive = "[" + fragment + "]";
          } else {
            positive = set_union({positive, "[" + add + "]"});
          }
        }
      }
      std::string atom;
      if (negated)
        atom = direct ? "[^" + fragment + "]" : "(?:(?!" + positive + ")" + kAny + ")";
      else
        atom = positive;
      return {atom, i + 1, negated, complex};
    }
    if (p.substr(i, 2) == "&&") {
      if (op.tail == Operand::kNone) fail(p, "empty intersection operand");
      ops.emplace_back();
      i += 2;
      continue;
    }
    if (c == '[') {
      if (p.substr(i, 2) == "[:") {
        const size_t close = p.find(":]", i + 2);
        if (close != std::string_view::npos) {
          std::string_view name = p.substr(i + 2, close - i - 2);
          const bool neg = !name.empty() && name[0] == '^';
          if (neg) name.remove_prefix(1);
          const char* frag = posix_fragment(name);
          if (!frag) fail(p, "unsupported POSIX class [:" + std::string(name) + ":]");
          if (neg)
            add_atom(op, std::string("[^") + frag + "]", p);
          else
            append_fragment(op, frag, true, p);
          i = close + 2;
          continue;
        }
      }
      if (p.substr(i, 2) == "[." || p.substr(i, 2) == "[=") fail(p, "POSIX collating elements");
      ClassResult nested = parse_class(p, i, fold, false, depth + 1);
      add_atom(op, nested.atom, p);
      i = nested.end;
      continue;
    }
    if (c == '-') {
      const bool terminal = i + 1 < p.size() && (p[i + 1] == ']' || p.substr(i + 1, 2) == "&&");
      if (op.tail == Operand::kSet && !terminal) fail(p, "range with a set-valued endpoint");
      if (op.tail == Operand::kNone || op.tail == Operand::kRange || op.tail == Operand::kCompleteRange ||
          terminal) {
        append_fragment(op, "\\-", false, p);
      } else {
        op.fragment += "-";
        op.tail = Operand::kRange;
      }
      ++i;
      continue;
    }
    const size_t n = char_len(p, i);
    std::string lit(p.substr(i, n));
    if (lit == "^" && op.fragment.empty()) lit = "\\^";
    if (lit == "[") lit = "\\[";
    append_fragment(op, lit, false, p);
    i += n;
  }
  fail(p, "unterminated character class");
}

}  // namespace

std::string translate_oniguruma(std::string_view p) {
  std::string out;
  long atom_start = -1;
  bool last_quant = false;
  bool fold = false;
  std::vector<std::pair<long, bool>> groups;
  auto emit = [&](const std::string& text) {
    atom_start = static_cast<long>(out.size());
    out += text;
    last_quant = false;
  };
  for (size_t i = 0; i < p.size();) {
    const char c = p[i];
    if (c == '\\') {
      char kind;
      std::string body;
      if (size_t n = braced_escape(p, i, kind, body)) {
        std::string rep(p.substr(i, n));
        if (kind == 'x' || kind == 'u') {
          rep = "\\x{" + body + "}";
          if (fold) {
            if (auto f = folded_hex(body); !f.empty()) rep = f;
          }
        } else if (body == "Word") {
          rep = kind == 'p' ? kWordClass : kNonWordClass;
        }
        emit(rep);
        i += n;
        continue;
      }
      std::string fixed, hex;
      if (size_t n = fixed_escape(p, i, fixed, hex)) {
        if (fold && !hex.empty()) {
          if (auto f = folded_hex(hex); !f.empty()) fixed = f;
        }
        emit(fixed);
        i += n;
        continue;
      }
      if (i + 1 >= p.size()) {
        out += "\\\\";
        break;
      }
      const char e = p[i + 1];
      const size_t after = i + 1 + char_len(p, i + 1);
      const std::string raw(p.substr(i + 1, after - i - 1));
      i = after;
      if (const char* ws = raw_whitespace_escape(e)) {
        emit(ws);
        continue;
      }
      switch (e) {
        case 'A': emit("\\A"); continue;
        case 'z': emit("\\z"); continue;
        case 'Z': emit("(?=\\n?\\z)"); continue;
        case 'G': emit("\\G"); continue;
        case 'h': emit("[" + kHex + "]"); continue;
        case 'H': emit("[^" + kHex + "]"); continue;
        case 'w': emit(kWordClass); continue;
        case 'W': emit(kNonWordClass); continue;
        case 'd': emit("\\p{Nd}"); continue;
        case 'D': emit("\\P{Nd}"); continue;
        case 's': emit(kSpace); continue;
        case 'S': emit("\\P{White_Space}"); continue;
        case 'b': emit(word_boundary(false)); continue;
        case 'B': emit(word_boundary(true)); continue;
        case 'a': emit("\\x{07}"); continue;
        case 'e': emit("\\x{1B}"); continue;
        case 'v': emit("\\x{0B}"); continue;
        default: break;
      }
      if (is_alnum(e) || static_cast<unsigned char>(e) < 0x80)
        emit("\\" + raw);
      else
        emit(raw);
      continue;
    }
    switch (c) {
      case '[': {
        ClassResult r = parse_class(p, i, fold, true, 1);
        emit(r.atom);
        i = r.end;
        continue;
      }
      case ']': emit("\\]"); ++i; continue;
      case '.': emit("[^\\n]"); ++i; continue;
      case '^': emit("(?:\\A|(?<=\\n))"); ++i; continue;
      case '$': emit("(?:(?=\\n)|\\z)"); ++i; continue;
      case '(': {
        std::string_view rest = p.substr(i);
        std::string src = "(", dst = "(";
        const bool ci = rest.substr(0, 4) == "(?i:";
        if (ci) {
          src = "(?i:";
          dst = "(?:";
        } else if (rest.size() > 1 && rest[1] == '?') {
          // Keep the group syntax as is: (?:, (?=, (?!, (?<=, (?<!, (?<name>, (?>.
          size_t k = 2;
          if (k < rest.size() && rest[k] == '<' && k + 1 < rest.size() && (rest[k + 1] == '=' || rest[k + 1] == '!'))
            k += 2;
          else if (k < rest.size() && rest[k] == '<') {
            const size_t close = rest.find('>', k);
            k = close == std::string_view::npos ? k + 1 : close + 1;
          } else if (k < rest.size() && std::strchr(":=!>", rest[k]))
            k += 1;
          src = dst = std::string(rest.substr(0, k));
        }
        groups.emplace_back(static_cast<long>(out.size()), fold);
        if (ci) fold = true;
        out += dst;
        last_quant = false;
        i += src.size();
        continue;
      }
      case ')': {
        out += ')';
        if (!groups.empty()) {
          atom_start = groups.back().first;
          fold = groups.back().second;
          groups.pop_back();
        } else {
          atom_start = -1;
          fold = false;
        }
        last_quant = false;
        ++i;
        continue;
      }
      case '|': out += '|'; atom_start = -1; last_quant = false; ++i; continue;
      case '{': {
        // {n}, {n,}, {n,m}, {,m}
        size_t j = i + 1;
        std::string a, b;
        bool comma = false;
        while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) a += p[j++];
        if (j < p.size() && p[j] == ',') {
          comma = true;
          ++j;
          while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) b += p[j++];
        }
        const bool ok = j < p.size() && p[j] == '}' && (!a.empty() || (comma && !b.empty()));
        if (!ok || atom_start < 0) {
          emit("\\{");
          ++i;
          continue;
        }
        std::string q = "{" + (a.empty() ? std::string("0") : a) + (comma ? "," + b : "") + "}";
        i = j + 1;
        if (i < p.size() && (p[i] == '+' || p[i] == '*')) {
          out = out.substr(0, static_cast<size_t>(atom_start)) + "(?:" + out.substr(static_cast<size_t>(atom_start)) + q + ")" + p[i];
          ++i;
        } else {
          out += q;
        }
        last_quant = true;
        continue;
      }
      case '}': emit("\\}"); ++i; continue;
      case '+':
      case '*':
      case '?':
        out += c;
        last_quant = true;
        ++i;
        continue;
      default: {
        const size_t n = char_len(p, i);
        if (fold && n == 1 && is_ascii_letter(c))
          emit(fold_letter(c));
        else if (c == '/' || c == '#' || c == ' ')
          emit(n == 1 && c != ' ' ? std::string("\\") + c : std::string(p.substr(i, n)));
        else
          emit(std::string(p.substr(i, n)));
        i += n;
        continue;
      }
    }
  }
  (void)last_quant;
  return out;
}

}  // namespace hearth::text
