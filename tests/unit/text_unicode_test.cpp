// unicode::normalize against utf8proc_map, the reference it replaces for
// text with combining marks: the same bytes in every form, and linear time
// on a run of marks that utf8proc's neighbour-swapping sort takes the square
// of (a hostile prompt of 2M marks after one letter was hours of CPU).
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>
#include <random>
#include <string>

#include "text/unicode.h"

namespace hearth::text::unicode {
namespace {

std::string reference(const std::string& s, Form form) {
  int options = UTF8PROC_STABLE;
  if (form == Form::NFC || form == Form::NFKC) options |= UTF8PROC_COMPOSE;
  if (form == Form::NFD || form == Form::NFKD) options |= UTF8PROC_DECOMPOSE;
  if (form == Form::NFKC || form == Form::NFKD) options |= UTF8PROC_COMPAT;
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()),
                              &out, utf8proc_option_t(options));
  EXPECT_GE(n, 0);
  std::string r(reinterpret_cast<char*>(out), size_t(n));
  std::free(out);
  return r;
}

TEST(Normalize, AgreesWithUtf8procOnMarksHangulAndCompatibilityCharacters) {
  // Letters, marks of several classes, precomposed letters, Hangul syllables
  // and jamo, and compatibility characters (ligatures, U+FDFA's 18).
  const char32_t pool[] = {U'a', U'e', U'A', U'\u0301', U'\u0316', U'\u0327', U'\u0308', U'\u0345',
                           U'\u1E09', U'\u00E9', U'\uAC00', U'\u1100', U'\u1161', U'\u11A8', U'\uFB01',
                           U'\uFDFA', U'\u2460', U'\u0F73', U'\u05B0', U'\u05BC', U'\u3099', U'\u304B'};
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    const int n = 1 + int(rng() % 12);
    for (int i = 0; i < n; ++i) append(s, pool[rng() % std::size(pool)]);
    for (Form form : {Form::NFC, Form::NFD, Form::NFKC, Form::NFKD})
      ASSERT_EQ(normalize(s, form), reference(s, form)) << "round " << round << " form " << int(form);
  }
}

TEST(Normalize, ALongRunOfMarksIsSortedInLinearTime) {
  // 'a', then 200k marks of classes 230 and 220 alternating: in order, the
  // 220s first; the first 230 composes with the a (U+00E1).
  std::string s = "a";
  for (int i = 0; i < 100000; ++i) s += "\u0301\u0316";
  const std::string nfc = normalize(s, Form::NFC);
  std::string expect = "\u00E1";
  for (int i = 0; i < 100000; ++i) expect += "\u0316";
  for (int i = 1; i < 100000; ++i) expect += "\u0301";
  EXPECT_EQ(nfc, expect);
}

}  // namespace
}  // namespace hearth::text::unicode
