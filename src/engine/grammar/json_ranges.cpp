#include "engine/grammar/json_ranges.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace hearth::grammar::json_ranges {

namespace {

using json = nlohmann::ordered_json;

constexpr int kFreeDigits = 16;  // integer digits of an unbounded side (json_rules.h)
constexpr int kFraction = 16;    // fraction digits of a bounded number
constexpr int kMaxDigits = 20;   // bounds up to 1e20 are exact: the 64-bit integers fit

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw GrammarError(what + " at " + (path.empty() ? "/" : path));
}

// A decimal: sign, integer digits without leading zeros ("0" for zero),
// fraction digits without trailing zeros. Zero is never negative.
struct Dec {
  bool neg = false;
  std::string i = "0", f;
};

void normalize(Dec& d) {
  const size_t nz = d.i.find_first_not_of('0');
  d.i = nz == std::string::npos ? "0" : d.i.substr(nz);
  while (!d.f.empty() && d.f.back() == '0') d.f.pop_back();
  if (d.i == "0" && d.f.empty()) d.neg = false;
}

Dec parse_plain(std::string_view s) {  // "-12.50", no exponent
  Dec d;
  if (!s.empty() && s[0] == '-') d.neg = true, s.remove_prefix(1);
  const size_t dot = s.find('.');
  d.i = std::string(s.substr(0, dot));
  if (dot != std::string_view::npos) d.f = std::string(s.substr(dot + 1));
  normalize(d);
  return d;
}

Dec from_double(double v) {  // the shortest spelling that reads back as v
  char buf[400];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return parse_plain(std::string_view(buf, size_t(r.ptr - buf)));
}

Dec from_json(const json& v) {
  if (v.is_number_unsigned()) return parse_plain(std::to_string(v.get<uint64_t>()));
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();  // -x overflows for INT64_MIN: spell the magnitude unsigned
    Dec d = parse_plain(std::to_string(x < 0 ? uint64_t(0) - uint64_t(x) : uint64_t(x)));
    d.neg = x < 0;
    return d;
  }
  return from_double(v.get<double>());
}

// Magnitudes: integer digits by length then lexicographically, fractions
// lexicographically (a shorter one is padded with zeros).
int compare_magnitude(const Dec& a, const Dec& b) {
  if (a.i.size() != b.i.size()) return a.i.size() < b.i.size() ? -1 : 1;
  if (int c = a.i.compare(b.i)) return c < 0 ? -1 : 1;
  const size_t n = std::max(a.f.size(), b.f.size());
  const std::string fa = a.f + std::string(n - a.f.size(), '0'), fb = b.f + std::string(n - b.f.size(), '0');
  if (int c = fa.compare(fb)) return c < 0 ? -1 : 1;
  return 0;
}

int compare(const Dec& a, const Dec& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  const int c = compare_magnitude(a, b);
  return a.neg ? -c : c;
}

// Digit strings without leading zeros, plus or minus one.
std::string plus_one(std::string s) {
  for (size_t k = s.size(); k-- > 0;) {
    if (s[k] != '9') {
      ++s[k];
      return s;
    }
    s[k] = '0';
  }
  return "1" + s;
}

std::string minus_one(std::string s) {  // s >= 1
  for (size_t k = s.size(); k-- > 0;) {
    if (s[k] != '0') {
      --s[k];
      break;
    }
    s[k] = '9';
  }
  const size_t nz = s.find_first_not_of('0');
  return nz == std::string::npos ? "0" : s.substr(nz);
}

// d plus or minus 10^-n, d having at most n fraction digits: as an integer
// scaled by 10^n.
Dec add_ulp(Dec d, int n, int sign) {
  std::string scaled = d.i + d.f + std::string(size_t(n) - d.f.size(), '0');
  const bool zero = d.i == "0" && d.f.empty();
  bool neg = d.neg;
  if (zero) {
    scaled = "1";
    neg = sign < 0;
  } else if ((sign > 0) != d.neg) {
    scaled = plus_one(scaled);  // away from zero
  } else {
    scaled = minus_one(scaled);  // toward zero
  }
  if (scaled.size() <= size_t(n)) scaled = std::string(size_t(n) + 1 - scaled.size(), '0') + scaled;
  Dec r{neg, scaled.substr(0, scaled.size() - size_t(n)), scaled.substr(scaled.size() - size_t(n))};
  normalize(r);
  return r;
}

// d rounded to n fraction digits, up (toward +inf) or down.
Dec round_at(Dec d, int n, bool up) {
  if (d.f.size() <= size_t(n)) return d;
  d.f.resize(size_t(n));  // toward zero; the dropped digits were not all zero
  const bool away = up != d.neg;
  normalize(d);
  return away ? add_ulp(d, n, up ? 1 : -1) : d;
}

Dec all_nines(int digits, int fraction, bool neg) {
  Dec d{neg, std::string(size_t(digits), '9'), std::string(size_t(fraction), '9')};
  return d;
}

// The grammar pieces. Magnitudes are spelled [integer digits] then, for
// numbers, an optional "." and 1..n fraction digits.
class Digits {
 public:
  explicit Digits(GrammarBuilder& b) : b_(b) {}

  // Exactly the numbers (integer type: n = 0) in [lo, hi], spelled without
  // sign; lo and hi are non-negative with at most n fraction digits.
  Expr magnitudes(const Dec& lo, const Dec& hi, int n) {
    if (lo.i == hi.i) return seq(lit(lo.i), fraction_between(lo.f, hi.f, n));
    std::vector<std::vector<Element>> alts;
    std::string first = lo.i, last = hi.i;
    if (!lo.f.empty()) {
      alts.push_back({ref(lit(lo.i)), ref(fraction_at_least(lo.f, n))});
      first = plus_one(lo.i);
    }
    if (hi.f != std::string(size_t(n), '9')) {  // else any fraction goes with hi.i
      alts.push_back({ref(lit(hi.i)), ref(fraction_at_most(hi.f, n))});
      last = minus_one(hi.i);
    }
    if (first.size() < last.size() || (first.size() == last.size() && first <= last))
      alts.push_back({ref(integers(first, last)), ref(any_fraction(n))});
    return rule(std::move(alts));
  }

 private:
  // Integers in [lo, hi], no leading zeros: one range per digit count.
  Expr integers(const std::string& lo, const std::string& hi) {
    std::vector<std::vector<Element>> alts;
    for (size_t len = lo.size(); len <= hi.size(); ++len) {
      const std::string from = len == lo.size() ? lo : "1" + std::string(len - 1, '0');
      const std::string to = len == hi.size() ? hi : std::string(len, '9');
      alts.push_back({ref(same_length(from, to))});
    }
    return rule(std::move(alts));
  }

  // Digit strings of one length between lo and hi: split on the first
  // digit into lo's first digit, the ones strictly between, hi's.
  Expr same_length(const std::string& lo, const std::string& hi) {
    const size_t len = lo.size();
    if (len == 0) return empty();
    const auto all = [](const std::string& s, size_t from, char c) {
      return s.find_first_not_of(c, from) == std::string::npos;
    };
    if (all(lo, 0, '0') && all(hi, 0, '9')) return rule({{digit(int32_t(len), int32_t(len))}});
    if (lo[0] == hi[0]) return rule({{byte(lo[0]), ref(same_length(lo.substr(1), hi.substr(1)))}});
    std::vector<std::vector<Element>> alts;
    char mid_lo = lo[0], mid_hi = hi[0];
    if (!all(lo, 1, '0')) {
      alts.push_back({byte(lo[0]), ref(same_length(lo.substr(1), std::string(len - 1, '9')))});
      ++mid_lo;
    }
    if (!all(hi, 1, '9')) {
      alts.push_back({byte(hi[0]), ref(same_length(std::string(len - 1, '0'), hi.substr(1)))});
      --mid_hi;
    }
    if (mid_lo <= mid_hi)
      alts.push_back({b_.byte_element(byte_range(uint8_t(mid_lo), uint8_t(mid_hi))), digit(int32_t(len - 1), int32_t(len - 1))});
    return rule(std::move(alts));
  }

  // Fractions: the digits after ".", compared as numbers 0.ddd (so "5" is
  // "50"), at most n of them.

  // Nothing, or "." and 1..n digits.
  Expr any_fraction(int n) {
    if (n == 0) return empty();
    return rule({{}, {byte('.'), digit(1, n)}});
  }
  // A fraction >= 0.s (s without trailing zeros; empty: any).
  Expr fraction_at_least(const std::string& s, int n) {
    if (s.empty()) return any_fraction(n);
    return rule({{byte('.'), ref(digits_at_least(s, n))}});
  }
  // A fraction <= 0.s (empty s: only zeros), or none.
  Expr fraction_at_most(const std::string& s, int n) {
    if (n == 0) return empty();
    return rule({{}, {byte('.'), ref(rule(digits_at_most(s, n)))}});
  }
  Expr fraction_between(const std::string& lo, const std::string& hi, int n) {
    if (lo.empty()) return fraction_at_most(hi, n);
    return rule({{byte('.'), ref(digits_between(lo, hi, n))}});
  }

  // 1..n digits >= 0.s, s non-empty (so no all-zero string qualifies).
  Expr digits_at_least(const std::string& s, int n) {
    std::vector<std::vector<Element>> alts;
    if (s[0] < '9') alts.push_back({b_.byte_element(byte_range(uint8_t(s[0] + 1), '9')), digit(0, n - 1)});
    alts.push_back({byte(s[0]), s.size() == 1 ? digit(0, n - 1) : ref(digits_at_least(s.substr(1), n - 1))});
    return rule(std::move(alts));
  }
  // The alternatives of 1..n digits <= 0.s.
  std::vector<std::vector<Element>> digits_at_most(const std::string& s, int n) {
    if (s.empty()) return {{digit_set('0', '0', 1, n)}};
    std::vector<std::vector<Element>> alts;
    if (s[0] > '0') alts.push_back({digit_set('0', char(s[0] - 1), 1, 1), digit(0, n - 1)});
    std::vector<Element> same{byte(s[0])};
    if (n > 1) {
      auto rest = digits_at_most(s.substr(1), n - 1);
      rest.insert(rest.begin(), std::vector<Element>{});  // or nothing more
      same.push_back(ref(rule(std::move(rest))));
    }
    alts.push_back(std::move(same));
    return alts;
  }
  // 1..n digits in [0.lo, 0.hi], lo non-empty.
  Expr digits_between(const std::string& lo, const std::string& hi, int n) {
    const char a = lo[0], z = hi.empty() ? '0' : hi[0];
    const std::string lo_rest = lo.substr(1), hi_rest = hi.empty() ? "" : hi.substr(1);
    const auto at_most_rest = [&] {
      std::vector<std::vector<Element>> rest{{}};
      if (n > 1)
        for (auto& alt : digits_at_most(hi_rest, n - 1)) rest.push_back(std::move(alt));
      return ref(rule(std::move(rest)));
    };
    if (a == z) {
      if (lo_rest.empty()) return rule({{byte(a), at_most_rest()}});
      return rule({{byte(a), ref(digits_between(lo_rest, hi_rest, n - 1))}});
    }
    std::vector<std::vector<Element>> alts;
    alts.push_back({byte(a), lo_rest.empty() ? digit(0, n - 1) : ref(digits_at_least(lo_rest, n - 1))});
    if (a + 1 <= z - 1) alts.push_back({digit_set(char(a + 1), char(z - 1), 1, 1), digit(0, n - 1)});
    alts.push_back({byte(z), at_most_rest()});
    return rule(std::move(alts));
  }

  Expr rule(std::vector<std::vector<Element>> alts) {
    const Expr r = b_.reserve();
    b_.define(r, std::move(alts));
    return r;
  }
  Expr empty() { return rule({{}}); }
  Expr lit(const std::string& s) { return b_.literal(s); }
  Expr seq(Expr a, Expr c) { return rule({{ref(a), ref(c)}}); }
  static Element ref(Expr e) { return GrammarBuilder::ref(e); }
  Element byte(char c) { return b_.byte_element(single_byte(uint8_t(c))); }
  Element digit(int32_t min, int32_t max) { return digit_set('0', '9', min, max); }
  Element digit_set(char lo, char hi, int32_t min, int32_t max) {
    return b_.byte_element(byte_range(uint8_t(lo), uint8_t(hi)), min, max);
  }

  GrammarBuilder& b_;
};

// The bounds a schema sets, inclusive, rounded inward to `fraction`
// digits; nullopt where a side is free.
struct Range {
  std::optional<Dec> lo, hi;
};

Range read_bounds(const json& s, const std::string& path, bool integer, int fraction) {
  Range r;
  auto number_at = [&](const char* key) -> const json* {
    auto it = s.find(key);
    if (it == s.end()) return nullptr;
    if (!it->is_number()) fail(path + "/" + key, std::string(key) + " must be a number");
    return &*it;
  };
  // An exclusive bound, as the first value past it: for integers the next
  // integer, for numbers the next double (a parser reading x + 1e-16 as a
  // double may land on x itself).
  auto past = [&](const json& v, bool upward) {
    if (integer) {
      const Dec d = round_at(from_json(v), 0, !upward);
      return add_ulp(d, 0, upward ? 1 : -1);
    }
    const double inf = std::numeric_limits<double>::infinity();
    return from_double(std::nextafter(v.get<double>(), upward ? inf : -inf));
  };
  auto tighten = [&](std::optional<Dec>& side, Dec d, bool lower) {
    d = round_at(d, fraction, lower);
    if (!side || (compare(d, *side) > 0) == lower) side = d;
  };
  for (const bool lower : {true, false}) {
    const char* bound = lower ? "minimum" : "maximum";
    const char* exclusive = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    std::optional<Dec>& side = lower ? r.lo : r.hi;
    const json* plain = number_at(bound);
    bool draft4_exclusive = false;
    if (auto it = s.find(exclusive); it != s.end() && it->is_boolean()) {
      draft4_exclusive = it->get<bool>();  // draft 4: a flag on minimum / maximum
      if (draft4_exclusive && !plain)
        fail(path + "/" + exclusive, std::string(exclusive) + ": true without " + bound);
    } else if (const json* v = number_at(exclusive)) {
      tighten(side, past(*v, lower), lower);
    }
    if (plain) tighten(side, draft4_exclusive ? past(*plain, lower) : from_json(*plain), lower);
    // Beyond 1e20: on the outer side no bound at all, on the inner side out of reach.
    if (side && side->i.size() > size_t(kMaxDigits)) {
      if (side->neg == lower) side.reset();
      else fail(path + "/" + bound, std::string(lower ? "a lower" : "an upper") + " bound beyond 1e20 is not supported");
    }
  }
  return r;
}

void check_multiple_of(const json& s, const std::string& path) {
  auto it = s.find("multipleOf");
  if (it == s.end()) return;
  if (!it->is_number() || !(it->get<double>() > 0)) fail(path + "/multipleOf", "multipleOf must be a number above 0");
  if (it->get<double>() != 1)
    fail(path + "/multipleOf", "multipleOf other than 1 is not supported (" + it->dump() + ")");
}

Expr bounded(GrammarBuilder& b, const json& s, const std::string& path, bool integer) {
  const int n = integer ? 0 : kFraction;
  Range r = read_bounds(s, path, integer, n);
  // A free side reaches as many digits as a free integer, or as the other
  // bound if that has more.
  size_t digits = kFreeDigits;
  for (const auto& side : {r.lo, r.hi})
    if (side) digits = std::max(digits, side->i.size());
  const Dec lo = r.lo ? *r.lo : all_nines(int(digits), n, true);
  const Dec hi = r.hi ? *r.hi : all_nines(int(digits), n, false);
  if (compare(lo, hi) > 0)
    fail(path, std::string("no ") + (integer ? "integer" : "number with at most 16 fraction digits") +
                   " satisfies the bounds (minimum / maximum / exclusive*)");
  Digits d(b);
  std::vector<std::vector<Element>> alts;
  if (lo.neg) {
    // "-" and a magnitude, never zero: from |hi| (or the smallest step) to |lo|.
    Dec smallest = hi.neg ? hi : add_ulp(Dec{}, n, 1);
    smallest.neg = false;
    Dec top = lo;
    top.neg = false;
    alts.push_back({b.byte_element(single_byte('-')), GrammarBuilder::ref(d.magnitudes(smallest, top, n))});
  }
  if (!hi.neg) alts.push_back({GrammarBuilder::ref(d.magnitudes(lo.neg ? Dec{} : lo, hi, n))});
  const Expr e = b.reserve();
  b.define(e, std::move(alts));
  return e;
}

}  // namespace

bool has_bounds(const json& s) {
  for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
    if (s.contains(key)) return true;
  return false;
}

Expr integer(GrammarBuilder& b, const json& s, const std::string& path) {
  check_multiple_of(s, path);
  return bounded(b, s, path, true);
}

Expr number(GrammarBuilder& b, const json& s, const std::string& path) {
  check_multiple_of(s, path);
  return bounded(b, s, path, s.contains("multipleOf"));  // multipleOf 1: integers
}

}  // namespace hearth::grammar::json_ranges
