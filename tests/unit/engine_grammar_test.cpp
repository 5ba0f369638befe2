// The JSON Schema compiler and the matcher on byte strings: each supported
// feature takes valid documents and refuses invalid ones at the right
// byte; unsupported features are GrammarErrors naming their path.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <regex>

#include "engine_grammar_test_support.h"
#include "engine/grammar/json_rules.h"

namespace hearth::grammar {
namespace {

using test::ojson;

// The index of the first byte the grammar refuses; -1 if it takes all of
// `doc` and may end there, -2 if it takes all but may not end.
long refused_at(const std::shared_ptr<const Grammar>& g, std::string_view doc) {
  Matcher m(g);
  for (size_t i = 0; i < doc.size(); ++i)
    if (!m.accept_bytes(doc.substr(i, 1))) return long(i);
  return m.is_complete() ? -1 : -2;
}

long refused_at(const char* schema, std::string_view doc) {
  return refused_at(compile_json_schema(ojson::parse(schema)), doc);
}

TEST(GrammarSchema, Strings) {
  const char* s = R"({"type": "string"})";
  EXPECT_EQ(refused_at(s, R"("abc")"), -1);
  EXPECT_EQ(refused_at(s, R"("a\"b\\c\n\u00e9\uFFFF")"), -1);
  EXPECT_EQ(refused_at(s, "\"h\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80\""), -1);
  EXPECT_EQ(refused_at(s, R"("\ud800")"), 4);        // a surrogate escape: at its second digit
  EXPECT_EQ(refused_at(s, R"("\x")"), 2);
  EXPECT_EQ(refused_at(s, "\"a\nb\""), 2);           // a raw control byte
  EXPECT_EQ(refused_at(s, "\"\xC0\x80\""), 1);       // an overlong form
  EXPECT_EQ(refused_at(s, "\"\xED\xA0\x80\""), 2);   // a UTF-8 surrogate
  EXPECT_EQ(refused_at(s, R"("abc)"), -2);
  EXPECT_EQ(refused_at(s, R"(abc)"), 0);
}

TEST(GrammarSchema, StringLengthsCountCharacters) {
  const char* s = R"({"type": "string", "minLength": 2, "maxLength": 3})";
  EXPECT_EQ(refused_at(s, R"("ab")"), -1);
  EXPECT_EQ(refused_at(s, "\"\xC3\xA9\\n\xE6\x97\xA5\""), -1);
  EXPECT_EQ(refused_at(s, R"("a")"), 2);
  EXPECT_EQ(refused_at(s, R"("abcd")"), 4);
  EXPECT_EQ(refused_at(R"({"type": "string", "maxLength": 0})", R"("")"), -1);
}

TEST(GrammarSchema, Numbers) {
  const char* i = R"({"type": "integer"})";
  EXPECT_EQ(refused_at(i, "-120"), -1);
  EXPECT_EQ(refused_at(i, "0"), -1);
  EXPECT_EQ(refused_at(i, "012"), 1);
  EXPECT_EQ(refused_at(i, "1.5"), 1);
  EXPECT_EQ(refused_at(i, "1234567890123456"), -1);
  EXPECT_EQ(refused_at(i, "12345678901234567"), 16);  // 16 digits at most
  EXPECT_EQ(refused_at(i, "-"), -2);
  const char* n = R"({"type": "number"})";
  EXPECT_EQ(refused_at(n, "-1.5e-3"), -1);
  EXPECT_EQ(refused_at(n, "2E+10"), -1);
  EXPECT_EQ(refused_at(n, "1."), -2);
  EXPECT_EQ(refused_at(n, ".5"), 0);
  EXPECT_EQ(refused_at(n, "1e123"), 4);
}

TEST(GrammarSchema, LiteralsEnumConstAndTypeLists) {
  EXPECT_EQ(refused_at(R"({"type": "boolean"})", "false"), -1);
  EXPECT_EQ(refused_at(R"({"type": "boolean"})", "tru"), -2);
  EXPECT_EQ(refused_at(R"({"type": "null"})", "nil"), 1);
  const char* e = R"({"enum": ["red", 1, null, {"a": [true]}]})";
  EXPECT_EQ(refused_at(e, R"("red")"), -1);
  EXPECT_EQ(refused_at(e, "1"), -1);
  EXPECT_EQ(refused_at(e, R"({"a":[true]})"), -1);
  EXPECT_EQ(refused_at(e, R"("reed")"), 3);
  EXPECT_EQ(refused_at(e, "12"), 1);
  EXPECT_EQ(refused_at(R"({"const": "x"})", R"("y")"), 1);
  const char* t = R"({"type": ["integer", "null"]})";
  EXPECT_EQ(refused_at(t, "7"), -1);
  EXPECT_EQ(refused_at(t, "null"), -1);
  EXPECT_EQ(refused_at(t, R"("7")"), 0);
}

TEST(GrammarSchema, AnyOfAndOneOf) {
  const char* s = R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})";
  EXPECT_EQ(refused_at(s, "42"), -1);
  EXPECT_EQ(refused_at(s, R"("a")"), -1);
  EXPECT_EQ(refused_at(s, R"("ab")"), 2);
  EXPECT_EQ(refused_at(s, "true"), 0);
  EXPECT_EQ(refused_at(R"({"oneOf": [{"const": 1}, {"const": 2}]})", "2"), -1);
}

TEST(GrammarSchema, ObjectsInSchemaOrderWithRequiredAndOptional) {
  const char* s = R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"},
                      "c": {"type": "boolean"}}, "required": ["a"]})";
  EXPECT_EQ(refused_at(s, R"({"a":"x"})"), -1);
  EXPECT_EQ(refused_at(s, R"({"b":1,"a":"x","c":true})"), -1);
  EXPECT_EQ(refused_at(s, R"({"b": 1, "a": "x"})"), -1);  // one space after ':' and ','
  EXPECT_EQ(refused_at(s, R"({"a":"x","b":1})"), 10);      // out of schema order
  EXPECT_EQ(refused_at(s, R"({"b":1})"), 6);               // "a" is required
  EXPECT_EQ(refused_at(s, R"({"a":"x","d":1})"), 10);      // closed: no other properties
  EXPECT_EQ(refused_at(s, R"({"a":  "x"})"), 6);           // no second space
  EXPECT_EQ(refused_at(s, R"({ "a":"x"})"), 1);
  EXPECT_EQ(refused_at(s, R"({"a":"x"},)"), 9);
  EXPECT_EQ(refused_at(R"({"type": "object", "properties": {"a": {}}})", "{}"), -1);
  // Without a type, the one the keywords are about.
  EXPECT_EQ(refused_at(R"({"maxLength": 2})", "\"abc\""), 3);
  EXPECT_EQ(refused_at(R"({"maxItems": 1})", "[1,2]"), 2);
  EXPECT_EQ(refused_at(R"({"enum": ["a", "b"], "type": "string", "title": "T"})", "\"b\""), -1);
}

TEST(GrammarSchema, ObjectsWithoutPropertiesAndMaps) {
  EXPECT_EQ(refused_at(R"({"type": "object"})", R"({"x": [1, {"y": null}], "z": "w"})"), -1);
  const char* m = R"({"type": "object", "additionalProperties": {"type": "integer"}})";
  EXPECT_EQ(refused_at(m, R"({"x":1,"y":2})"), -1);
  EXPECT_EQ(refused_at(m, R"({"x":"1"})"), 5);
  EXPECT_EQ(refused_at(R"({"type": "object", "additionalProperties": false})", "{}"), -1);
}

TEST(GrammarSchema, ArraysWithItemCounts) {
  const char* s = R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2})";
  EXPECT_EQ(refused_at(s, "[1]"), -1);
  EXPECT_EQ(refused_at(s, "[1, 2]"), -1);
  EXPECT_EQ(refused_at(s, "[]"), 1);
  EXPECT_EQ(refused_at(s, "[1,2,3]"), 4);
  EXPECT_EQ(refused_at(s, "[\"a\"]"), 1);
  EXPECT_EQ(refused_at(R"({"type": "array"})", R"([1, "a", [], {}])"), -1);
  EXPECT_EQ(refused_at(R"({"type": "array", "maxItems": 0})", "[1]"), 1);
}

TEST(GrammarSchema, NestedObjectsAndRefs) {
  const char* s = R"({"type": "object", "properties": {"home": {"$ref": "#/$defs/place"},
      "work": {"$ref": "#/definitions/place"}}, "required": ["home"],
      "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
      "definitions": {"place": {"$ref": "#/$defs/place"}}})";
  EXPECT_EQ(refused_at(s, R"({"home":{"city":"Oslo"},"work":{"city":"Bergen"}})"), -1);
  EXPECT_EQ(refused_at(s, R"({"home":{}})"), 9);
  const char* tree = R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v"]}}})";
  EXPECT_EQ(refused_at(tree, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"), -1);
  EXPECT_EQ(refused_at(tree, R"({"v":1,"kids":[{"kids":[]}]})"), 17);
}

TEST(GrammarSchema, JsonObjectModeAndEnds) {
  const auto any = compile_json_object();
  EXPECT_EQ(refused_at(any, R"({"a":[1,{"b":null}],"c":"d"})"), -1);
  EXPECT_EQ(refused_at(any, "[1]"), 0);
  Matcher closed(compile_json_schema(ojson::parse(R"({"type":"object","properties":{"a":{"type":"integer"}}})")));
  EXPECT_FALSE(closed.is_complete());
  ASSERT_TRUE(closed.accept_bytes(R"({"a":1})"));
  EXPECT_TRUE(closed.must_end());
  Matcher number(compile_json_schema(ojson::parse(R"({"type":"integer"})")));
  ASSERT_TRUE(number.accept_bytes("12"));
  EXPECT_TRUE(number.is_complete());
  EXPECT_FALSE(number.must_end());  // more digits may follow
}

TEST(GrammarSchema, AcceptBytesIsAllOrNothingAndSplitsCharacters) {
  Matcher m(compile_json_schema(ojson::parse(R"({"type":"string","maxLength":2})")));
  ASSERT_TRUE(m.accept_bytes("\"\xC3"));  // half of é
  EXPECT_FALSE(m.accept_bytes("\xA9xy"));  // é, x, then y is one too many
  ASSERT_TRUE(m.accept_bytes("\xA9"));
  ASSERT_TRUE(m.accept_bytes("x\""));
  EXPECT_TRUE(m.must_end());
}

TEST(GrammarSchema, LongOutputsSurviveArenaCompaction) {
  // Each byte adds frames; the arena is compacted many times over 100 kB.
  std::string doc = "{\"items\": [";
  for (int i = 0; i < 3000; ++i) doc += (i ? ", " : "") + std::string(R"({"k": "value \u00e9", "n": [1, 2.5]})");
  Matcher m(compile_json_object());
  for (size_t i = 0; i < doc.size(); ++i) ASSERT_TRUE(m.accept_bytes(doc.substr(i, 1))) << i;
  EXPECT_FALSE(m.accept_bytes("}"));  // the array is still open
  EXPECT_TRUE(m.accept_bytes("]}"));
  EXPECT_TRUE(m.must_end());
}

TEST(GrammarRanges, IntegerBoundsAtEveryEdge) {
  const char* s = R"({"type": "integer", "minimum": 1, "maximum": 10})";
  for (const char* ok : {"1", "5", "9", "10"}) EXPECT_EQ(refused_at(s, ok), -1) << ok;
  EXPECT_EQ(refused_at(s, "0"), 0);    // min - 1
  EXPECT_EQ(refused_at(s, "11"), 1);   // max + 1
  EXPECT_EQ(refused_at(s, "01"), 0);   // no leading zeros
  EXPECT_EQ(refused_at(s, "-1"), 0);
  EXPECT_EQ(refused_at(s, "1.0"), 1);
  EXPECT_EQ(refused_at(s, "1e1"), 1);
  const char* ex = R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100})";
  EXPECT_EQ(refused_at(ex, "1"), -1);
  EXPECT_EQ(refused_at(ex, "99"), -1);
  EXPECT_EQ(refused_at(ex, "0"), 0);
  EXPECT_EQ(refused_at(ex, "100"), 2);
  const char* neg = R"({"type": "integer", "minimum": -15, "maximum": -3})";
  for (const char* ok : {"-3", "-9", "-10", "-15"}) EXPECT_EQ(refused_at(neg, ok), -1) << ok;
  EXPECT_EQ(refused_at(neg, "-2"), 1);
  EXPECT_EQ(refused_at(neg, "-16"), 2);
  EXPECT_EQ(refused_at(neg, "-0"), 1);
  EXPECT_EQ(refused_at(neg, "-03"), 1);
  EXPECT_EQ(refused_at(neg, "3"), 0);
  const char* around = R"({"type": "integer", "minimum": -5, "maximum": 5})";
  for (const char* ok : {"-5", "-1", "0", "5"}) EXPECT_EQ(refused_at(around, ok), -1) << ok;
  EXPECT_EQ(refused_at(around, "-0"), 1);  // no negative zero
  EXPECT_EQ(refused_at(around, "-6"), 1);
  EXPECT_EQ(refused_at(around, "6"), 0);
  EXPECT_EQ(refused_at(around, "00"), 1);
}

TEST(GrammarRanges, OneSidedLargeFractionalAndDraft4Bounds) {
  const char* min = R"({"type": "integer", "minimum": 100})";
  EXPECT_EQ(refused_at(min, "100"), -1);
  EXPECT_EQ(refused_at(min, "99"), -2);  // only as the start of 990 and up
  EXPECT_EQ(refused_at(min, "-1"), 0);
  EXPECT_EQ(refused_at(min, "9999999999999999"), -1);  // a free side: 16 digits, as unbounded integers
  EXPECT_EQ(refused_at(min, "10000000000000000"), 16);
  const char* max = R"({"type": "integer", "maximum": -100})";
  EXPECT_EQ(refused_at(max, "-100"), -1);
  EXPECT_EQ(refused_at(max, "-99"), -2);
  EXPECT_EQ(refused_at(max, "-9999999999999999"), -1);
  EXPECT_EQ(refused_at(max, "0"), 0);
  const char* i64 = R"({"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807})";
  EXPECT_EQ(refused_at(i64, "9223372036854775807"), -1);
  EXPECT_EQ(refused_at(i64, "9223372036854775808"), 18);
  EXPECT_EQ(refused_at(i64, "-9223372036854775808"), -1);
  EXPECT_EQ(refused_at(i64, "-9223372036854775809"), 19);
  EXPECT_EQ(refused_at(i64, "0"), -1);
  const char* u64 = R"({"type": "integer", "minimum": 18446744073709551615})";
  EXPECT_EQ(refused_at(u64, "18446744073709551615"), -1);
  EXPECT_EQ(refused_at(u64, "18446744073709551614"), 19);
  EXPECT_EQ(refused_at(u64, "99999999999999999999"), -1);  // the free side reaches the bound's 20 digits
  const char* huge = R"({"type": "integer", "minimum": 0, "maximum": 1e30})";  // beyond 1e20: no bound
  EXPECT_EQ(refused_at(huge, "9999999999999999"), -1);
  EXPECT_EQ(refused_at(huge, "10000000000000000"), 16);
  const char* frac = R"({"type": "integer", "minimum": 1.5, "maximum": 4.5})";
  EXPECT_EQ(refused_at(frac, "2"), -1);
  EXPECT_EQ(refused_at(frac, "4"), -1);
  EXPECT_EQ(refused_at(frac, "1"), 0);
  EXPECT_EQ(refused_at(frac, "5"), 0);
  EXPECT_EQ(refused_at(R"({"type": "integer", "minimum": -2.5, "exclusiveMaximum": 0.5})", "-2"), -1);
  EXPECT_EQ(refused_at(R"({"type": "integer", "minimum": -2.5, "exclusiveMaximum": 0.5})", "-3"), 1);
  EXPECT_EQ(refused_at(R"({"type": "integer", "minimum": -2.5, "exclusiveMaximum": 0.5})", "1"), 0);
  const char* d4 = R"({"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": true})";
  EXPECT_EQ(refused_at(d4, "0"), 0);
  EXPECT_EQ(refused_at(d4, "1"), -1);
  EXPECT_EQ(refused_at(d4, "9"), -1);
  EXPECT_EQ(refused_at(d4, "10"), 1);
  EXPECT_EQ(refused_at(R"({"type": "integer", "minimum": 3, "exclusiveMinimum": false})", "3"), -1);
  // Both forms of a bound: the tighter one holds.
  EXPECT_EQ(refused_at(R"({"type": "integer", "minimum": 3, "exclusiveMinimum": 5})", "5"), -2);  // only as 50...
  EXPECT_EQ(refused_at(R"({"type": "integer", "minimum": 3, "exclusiveMinimum": 5})", "6"), -1);
  // multipleOf 1, and no type: a number.
  EXPECT_EQ(refused_at(R"({"type": "integer", "multipleOf": 1, "maximum": 3})", "3"), -1);
  EXPECT_EQ(refused_at(R"({"type": "number", "multipleOf": 1, "maximum": 3})", "2.5"), 1);
  EXPECT_EQ(refused_at(R"({"minimum": 0})", "0.5"), -1);
  EXPECT_EQ(refused_at(R"({"minimum": 0})", "-1"), 0);
  EXPECT_EQ(refused_at(R"({"type": ["integer", "null"], "minimum": 2})", "null"), -1);
  EXPECT_EQ(refused_at(R"({"type": ["integer", "null"], "minimum": 2})", "1"), -2);
  EXPECT_EQ(refused_at(R"({"type": ["integer", "null"], "minimum": 2})", "-"), 0);
}

// Every integer in a window, for many ranges: accepted exactly when in range.
TEST(GrammarRanges, IntegerRangesAgreeWithArithmetic) {
  const std::vector<long> edges = {-1000, -101, -100, -99, -10, -9, -1, 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345};
  for (long lo : edges)
    for (long hi : edges) {
      if (lo > hi) continue;
      const auto g = compile_json_schema(ojson{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}});
      for (long x = -1100; x <= 1100; ++x)
        ASSERT_EQ(refused_at(g, std::to_string(x)) == -1, lo <= x && x <= hi) << lo << ".." << hi << ": " << x;
      ASSERT_EQ(refused_at(g, "12345") == -1, lo <= 12345 && 12345 <= hi);
    }
  for (long b : edges) {
    const auto above = compile_json_schema(ojson{{"type", "integer"}, {"exclusiveMinimum", b}});
    const auto below = compile_json_schema(ojson{{"type", "integer"}, {"maximum", b}});
    for (long x = -1100; x <= 1100; ++x) {
      ASSERT_EQ(refused_at(above, std::to_string(x)) == -1, x > b) << "> " << b << ": " << x;
      ASSERT_EQ(refused_at(below, std::to_string(x)) == -1, x <= b) << "<= " << b << ": " << x;
    }
  }
}

TEST(GrammarRanges, NumberBounds) {
  const char* unit = R"({"type": "number", "minimum": 0, "maximum": 1})";
  for (const char* ok : {"0", "1", "0.5", "1.0", "1.000", "0.0000000000000001", "0.9999999999999999"})
    EXPECT_EQ(refused_at(unit, ok), -1) << ok;
  EXPECT_EQ(refused_at(unit, "-0"), 0);  // minimum 0: no minus at all
  EXPECT_EQ(refused_at(unit, "1.5"), 2);
  EXPECT_EQ(refused_at(unit, "1.01"), 3);
  EXPECT_EQ(refused_at(unit, "2"), 0);
  EXPECT_EQ(refused_at(unit, "1e0"), 1);  // no exponent in a bounded number
  EXPECT_EQ(refused_at(unit, "0.12345678901234567"), 18);  // 16 fraction digits at most
  // exclusiveMinimum 0 (zod's positive()): the smallest is 1e-16.
  const char* pos = R"({"type": "number", "exclusiveMinimum": 0})";
  EXPECT_EQ(refused_at(pos, "0"), -2);
  EXPECT_EQ(refused_at(pos, "0.0000000000000000"), 17);
  EXPECT_EQ(refused_at(pos, "0.0000000000000001"), -1);
  EXPECT_EQ(refused_at(pos, "5"), -1);
  EXPECT_EQ(refused_at(pos, "-1"), 0);
  // An exclusive bound is the next double: 1.0000000000000001 reads as 1.
  const char* above_one = R"({"type": "number", "exclusiveMinimum": 1})";
  EXPECT_EQ(refused_at(above_one, "1.0000000000000001"), 17);
  EXPECT_EQ(refused_at(above_one, "1.0000000000000002"), -1);
  EXPECT_EQ(refused_at(above_one, "1"), -2);
  const char* below_one = R"({"type": "number", "minimum": 0, "exclusiveMaximum": 1})";
  EXPECT_EQ(refused_at(below_one, "0.9999999999999999"), -1);
  EXPECT_EQ(refused_at(below_one, "1"), 0);
  const char* mixed = R"({"type": "number", "minimum": -1.5, "maximum": 2.25})";
  for (const char* ok : {"-1.5", "-1.50", "-0.1", "0", "2.25", "2.2", "-0.0000000000000001"})
    EXPECT_EQ(refused_at(mixed, ok), -1) << ok;
  EXPECT_EQ(refused_at(mixed, "-0"), -2);  // only as the start of -0.1 and the like
  EXPECT_EQ(refused_at(mixed, "-0.0000000000000000"), 18);
  EXPECT_EQ(refused_at(mixed, "2.26"), 3);
  EXPECT_EQ(refused_at(mixed, "-1.51"), 4);
  const char* negative = R"({"type": "number", "minimum": -2.5, "maximum": -0.5})";
  EXPECT_EQ(refused_at(negative, "-0.5"), -1);
  EXPECT_EQ(refused_at(negative, "-0.49"), 3);
  EXPECT_EQ(refused_at(negative, "-2.6"), 3);
  // A bound with more than 16 fraction digits is rounded inward.
  const char* tight = R"({"type": "number", "minimum": 0.1, "maximum": 0.30000000000000004})";
  EXPECT_EQ(refused_at(tight, "0.3"), -1);
  EXPECT_EQ(refused_at(tight, "0.3000000000000001"), 17);
  EXPECT_EQ(refused_at(tight, "0.1"), -1);
  EXPECT_EQ(refused_at(tight, "0.0999"), 2);
}

// Multiples of 1/8 around many bounds: accepted exactly when in range
// (these values are exact as doubles, so the double rules change nothing).
TEST(GrammarRanges, NumberRangesAgreeWithArithmetic) {
  const std::vector<double> edges = {-2.5, -1, -0.75, -0.5, 0, 0.25, 0.5, 1, 1.5, 10, 12.375};
  auto spell = [](double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", x);
    std::string s = buf;  // "-0.750", then also without the trailing zeros
    return s;
  };
  for (double lo : edges)
    for (double hi : edges) {
      if (lo > hi) continue;
      for (const bool exclusive : {false, true}) {
        ojson schema{{"type", "number"}};
        schema[exclusive ? "exclusiveMinimum" : "minimum"] = lo;
        schema[exclusive ? "exclusiveMaximum" : "maximum"] = hi;
        if (exclusive && lo == hi) continue;
        const auto g = compile_json_schema(schema);
        for (int k = -40; k <= 120; ++k) {
          const double x = k / 8.0;
          const bool in = exclusive ? lo < x && x < hi : lo <= x && x <= hi;
          std::string s = spell(x);
          ASSERT_EQ(refused_at(g, s) == -1, in) << schema.dump() << ": " << s;
          while (s.back() == '0') s.pop_back();
          if (s.back() == '.') s.pop_back();
          if (s == "-0") continue;  // never written, in range or not
          ASSERT_EQ(refused_at(g, s) == -1, in) << schema.dump() << ": " << s;
        }
      }
    }
}

TEST(GrammarPattern, AnchoredAndUnanchored) {
  const char* az = R"({"type": "string", "pattern": "^[a-z]+$"})";
  EXPECT_EQ(refused_at(az, R"("abc")"), -1);
  EXPECT_EQ(refused_at(az, R"("")"), 1);
  EXPECT_EQ(refused_at(az, R"("aBc")"), 2);
  // JSON Schema patterns match anywhere unless anchored.
  const char* abc = R"({"type": "string", "pattern": "abc"})";
  EXPECT_EQ(refused_at(abc, R"("xxabcyy")"), -1);
  EXPECT_EQ(refused_at(abc, R"("abc")"), -1);
  EXPECT_EQ(refused_at(abc, R"("ab")"), 3);
  EXPECT_EQ(refused_at(abc, R"("xabx")"), 5);
  EXPECT_EQ(refused_at(R"({"pattern": "^ab"})", R"("abzz")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^ab"})", R"("zab")"), 1);
  EXPECT_EQ(refused_at(R"({"pattern": "c$"})", R"("abc")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "c$"})", R"("cab")"), 4);
  EXPECT_EQ(refused_at(R"({"pattern": "^x|y$"})", R"("xa")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^x|y$"})", R"("ay")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^x|y$"})", R"("ya")"), 3);
  EXPECT_EQ(refused_at(R"({"pattern": ""})", R"("anything")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^$"})", R"("")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^$"})", R"("a")"), 1);
}

TEST(GrammarPattern, GroupsQuantifiersAndEscapes) {
  const char* s = R"({"pattern": "^(foo|ba[rz])(-\\d{2,3})?$"})";
  for (const char* ok : {R"("foo")", R"("baz-12")", R"("bar-123")"}) EXPECT_EQ(refused_at(s, ok), -1) << ok;
  EXPECT_EQ(refused_at(s, R"("bar-1")"), 6);
  EXPECT_EQ(refused_at(s, R"("bar-1234")"), 8);
  EXPECT_EQ(refused_at(s, R"("bax")"), 3);
  EXPECT_EQ(refused_at(R"({"pattern": "^a\\.b$"})", R"("a.b")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^a\\.b$"})", R"("axb")"), 2);
  EXPECT_EQ(refused_at(R"({"pattern": "^(?:ab){2}$"})", R"("abab")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^(?<x>a)+?b{0}$"})", R"("aa")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^a{2,}$"})", R"("a")"), 2);
  EXPECT_EQ(refused_at(R"({"pattern": "^a{2,}$"})", R"("aaaa")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^a{,2}}$"})", R"("a{,2}}")"), -1);  // Annex B: a lone { } is a literal
  EXPECT_EQ(refused_at(R"({"pattern": "^[\\w-]+@[^\\s@]+$"})", R"("a-b_1@x.y")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^[\\w-]+@[^\\s@]+$"})", R"("a@b c")"), 4);
  // Repeated parts that can match nothing.
  EXPECT_EQ(refused_at(R"({"pattern": "^(a?)*b$"})", R"("aab")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^(a?)*b$"})", R"("b")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^(a|)+$"})", R"("")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^(a|)+$"})", R"("aa")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^(a*b*)*c$"})", R"("abbac")"), -1);
}

TEST(GrammarPattern, CharactersAsJsonWritesThem) {
  // " and \ escaped, control characters as \n-style or \u00XX escapes.
  const char* quotes = R"({"pattern": "^[\"\\\\]+$"})";
  EXPECT_EQ(refused_at(quotes, R"("\"\\")"), -1);
  EXPECT_EQ(refused_at(quotes, R"("a")"), 1);
  const char* controls = R"({"pattern": "^\\n\\x01$"})";
  EXPECT_EQ(refused_at(controls, R"("\n\u0001")"), -1);
  EXPECT_EQ(refused_at(controls, R"("\n\u0002")"), 8);
  EXPECT_EQ(refused_at(controls, "\"\n"), 1);  // a raw control byte
  EXPECT_EQ(refused_at(R"({"pattern": "^a\\/b$"})", R"("a/b")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^a\\/b$"})", R"("a\/b")"), -1);
  // UTF-8, by code point.
  EXPECT_EQ(refused_at(R"({"pattern": "^[é-ë]{2}$"})", "\"\xC3\xA9\xC3\xAB\""), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^[é-ë]{2}$"})", "\"\xC3\xA9" "e\""), 3);
  EXPECT_EQ(refused_at(R"({"pattern": "^\\u00e9\\uD83D\\uDE00$"})", "\"\xC3\xA9\xF0\x9F\x98\x80\""), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^\\w$"})", "\"\xC3\xA9\""), 1);
  const char* other = R"({"pattern": "^[^a]$"})";
  for (const char* ok : {R"("b")", R"("\"")", R"("\n")", "\"\xF0\x9F\x98\x80\"", "\"\xE6\x97\xA5\""})
    EXPECT_EQ(refused_at(other, ok), -1) << ok;
  EXPECT_EQ(refused_at(other, R"("a")"), 1);
  EXPECT_EQ(refused_at(other, "\"\xED\xA0\x80\""), 2);  // still no UTF-8 surrogates
  const char* dot = R"({"pattern": "^.$"})";
  EXPECT_EQ(refused_at(dot, R"("\n")"), 2);  // . is no line terminator
  EXPECT_EQ(refused_at(dot, R"("\t")"), -1);
  EXPECT_EQ(refused_at(dot, "\"\xE2\x80\xA8\""), 3);  // U+2028
  EXPECT_EQ(refused_at(dot, "\"\xE2\x80\xA7\""), -1);
}

TEST(GrammarPattern, WithMinAndMaxLength) {
  const char* az = R"({"pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3})";
  EXPECT_EQ(refused_at(az, R"("ab")"), -1);
  EXPECT_EQ(refused_at(az, R"("abc")"), -1);
  EXPECT_EQ(refused_at(az, R"("abcd")"), 4);
  EXPECT_EQ(refused_at(az, R"("a")"), 2);
  const char* id = R"({"pattern": "^id-\\d+$", "maxLength": 5})";
  EXPECT_EQ(refused_at(id, R"("id-12")"), -1);
  EXPECT_EQ(refused_at(id, R"("id-123")"), 6);
  EXPECT_EQ(refused_at(R"({"pattern": "^(ab)*$", "maxLength": 5})", R"("abab")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^(ab)*$", "maxLength": 5})", R"("ababa")"), 5);
  // Implied by the pattern: nothing to narrow.
  EXPECT_EQ(refused_at(R"({"pattern": "^(a|bc){1,2}$", "maxLength": 4})", R"("bcbc")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "x+", "minLength": 1})", R"("axb")"), -1);
  // A branch that cannot fit is dropped.
  EXPECT_EQ(refused_at(R"({"pattern": "^a{5}$|^b$", "maxLength": 3})", R"("b")"), -1);
  EXPECT_EQ(refused_at(R"({"pattern": "^a{5}$|^b$", "maxLength": 3})", R"("a")"), 1);
}

// An unanchored pattern is a free prefix, the pattern, a free suffix; the
// places the match could start or end must not each keep a stack (the
// matcher holds an unbounded repetition's count at its minimum, so they
// are one stack): 20,000 characters stay quick.
TEST(GrammarPattern, LongStringsAroundAnUnanchoredMatch) {
  Matcher m(compile_json_schema(ojson::parse(R"({"pattern": "\\d+x*"})")));
  ASSERT_TRUE(m.accept_bytes("\""));
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(m.accept_bytes(i % 3 ? "1" : "x")) << i;
  EXPECT_TRUE(m.accept_bytes("\""));
  EXPECT_TRUE(m.must_end());
}

// Random strings over a small alphabet: the grammar takes exactly those
// std::regex finds the pattern in.
TEST(GrammarPattern, AgreesWithStdRegexOnRandomStrings) {
  const char* patterns[] = {"^(ab|a)*c?$", "a.c", "^\\d{2,4}-[A-F]+$", "x|^y|z$", "^[^a-c]*$", "(1|0[1-9])",
                            "^a+b*a?$", "^(?:[a-c]{2}|x)+$", "b{2}", "^.?1$", "^[\\d\\-x]{1,3}$", "^$|^a"};
  const std::string alphabet = "abcxyz-019AF";
  std::mt19937 rng(7);
  for (const char* p : patterns) {
    const auto g = compile_json_schema(ojson{{"type", "string"}, {"pattern", p}});
    const std::regex re(p, std::regex::ECMAScript);
    for (int i = 0; i < 3000; ++i) {
      std::string s(rng() % 7, ' ');
      for (char& c : s) c = alphabet[rng() % alphabet.size()];
      ASSERT_EQ(refused_at(g, "\"" + s + "\"") == -1, std::regex_search(s, re)) << p << " on \"" << s << "\"";
    }
  }
}

TEST(GrammarSchema, PropertyNamesThatEveryKeySatisfies) {
  // zod's z.record(z.string(), z.number())
  const char* record = R"({"type":"object","propertyNames":{"type":"string"},"additionalProperties":{"type":"number"}})";
  EXPECT_EQ(refused_at(record, R"({"x":1,"y":2.5})"), -1);
  EXPECT_EQ(refused_at(record, R"({"x":"1"})"), 5);
  EXPECT_EQ(refused_at(R"({"propertyNames":true,"additionalProperties":{"type":"null"}})", R"({"a":null})"), -1);
  EXPECT_EQ(refused_at(R"({"propertyNames":{"type":"string","description":"k"}})", R"({"a":[1]})"), -1);
}

void expect_error(const char* schema, const std::string& feature, const std::string& path) {
  try {
    compile_json_schema(ojson::parse(schema));
    ADD_FAILURE() << "no GrammarError for " << schema;
  } catch (const GrammarError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(feature), std::string::npos) << what;
    EXPECT_NE(what.find(path), std::string::npos) << what;
  }
}

TEST(GrammarSchema, UnsupportedFeaturesNameTheirPath) {
  expect_error(R"({"type":"object","properties":{"x":{"type":"string","pattern":"(?=a)b"}}})", "lookahead",
               "/properties/x/pattern");
  expect_error(R"({"type":"integer","multipleOf":5})", "multipleOf", "/multipleOf");
  expect_error(R"({"type":"object","propertyNames":{"enum":["a"]}})", "propertyNames", "/propertyNames");
  expect_error(R"({"type":"object","propertyNames":{"type":"string","maxLength":3}})", "propertyNames", "/propertyNames");
  expect_error(R"({"type":"array","items":[{"type":"integer"}]})", "items", "/items");
  expect_error(R"({"type":"array","uniqueItems":true})", "uniqueItems", "/uniqueItems");
  expect_error(R"({"$ref":"#/$defs/missing"})", "does not resolve", "/$ref");
  expect_error(R"({"$ref":"https://example.com/s.json"})", "$ref", "/$ref");
  expect_error(R"({"type":"object","properties":{"a":{}},"additionalProperties":true})", "additionalProperties",
               "/additionalProperties");
  expect_error(R"({"type":"object","properties":{"a":{}},"required":["b"]})", "required", "/required");
  expect_error(R"({"type":"strin"})", "strin", "/type");
  expect_error(R"({"anyOf":[{"type":"string"},{"not":{}}]})", "not", "/anyOf/1/not");
  expect_error(R"({"type":"string","minLength":3,"maxLength":2})", "maxLength", "/maxLength");
  expect_error(R"(false)", "false", "/");
  expect_error(R"({"type":"string","anyOf":[{"maxLength":3},{"minLength":9}]})", "type", "/type");
  expect_error(R"({"$ref":"#/$defs/a","maxLength":2,"$defs":{"a":{}}})", "maxLength", "/maxLength");
  expect_error(R"({"type":"object","required":["a"]})", "required", "/required");
}

// A chain of $refs through an array nests the compile, not the JSON (which
// the request body's depth limit bounds): long chains are an error, not a
// stack overflow; a chain of a few dozen compiles.
TEST(GrammarSchema, AChainOfRefsDeeperThanTheLimitIsRefused) {
  auto chain = [](int links) {
    std::string defs;
    for (int i = 0; i < links; ++i)
      defs += (i ? "," : "") + std::string(R"({"$ref":"#/$defs/a/)") + std::to_string(i + 1) + "\"}";
    return R"({"$ref":"#/$defs/a/0","$defs":{"a":[)" + defs + R"(,{"type":"integer"}]}})";
  };
  EXPECT_EQ(refused_at(chain(40).c_str(), "12"), -1);
  expect_error(chain(100000).c_str(), "nests deeper than 128 levels", "/$defs/a/");
}

// What a hostile schema could do to the server: recurse forever, overflow a
// stack, or grow the grammar or the parse stacks past any memory or time.
TEST(GrammarSchema, ASchemaThatStartsWithItselfIsRefused) {
  expect_error(R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})", "refers back to itself", "");
  expect_error(R"({"$ref":"#/$defs/a","$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}}})", "refers back to itself", "");
  // Recursion after a first character is fine: a tree.
  const char* tree = R"({"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}}})";
  EXPECT_EQ(refused_at(tree, R"({"kids":[{"kids":[]},{}]})"), -1);
}

TEST(GrammarPattern, PatternsAreBoundedInSizeAndNesting) {
  auto schema = [](const std::string& pattern) {
    return ojson{{"type", "string"}, {"pattern", pattern}}.dump();
  };
  expect_error(schema(std::string(100000, '(')).c_str(), "longer than 8192 bytes", "/pattern");
  expect_error(schema(std::string(65, '(') + "a" + std::string(65, ')')).c_str(), "deeper than 64", "/pattern");
  EXPECT_EQ(refused_at(schema(std::string(64, '(') + "a" + std::string(64, ')')).c_str(), R"("a")"), -1);
}

TEST(GrammarPattern, OptionalPartsUnderAStarGrowTheGrammarLinearly) {
  // (?:a?a?...a?)* without its empty string was one rule per suffix of the
  // sequence: a square of the parts (4000 of them: 8M elements). More than
  // kMaxSkippableRun in a row are refused now (see below).
  auto pattern = [](int parts) {
    std::string p = "^(?:";
    for (int i = 0; i < parts; ++i) p += "a?";
    return p + ")*b$";
  };
  const size_t most = GrammarBuilder::kMaxSkippableRun;
  EXPECT_LT(compile_json_schema(ojson{{"type", "string"}, {"pattern", pattern(int(most))}})->rule_count(), 20 * most);
  // Matching it keeps a stack for each pair of parts two a's may be (the
  // stacks cap refuses 4000 parts at the second 'a'): fewer parts.
  const auto g = compile_json_schema(ojson{{"type", "string"}, {"pattern", pattern(40)}});
  EXPECT_EQ(refused_at(g, R"("aaaaab")"), -1);
  EXPECT_EQ(refused_at(g, R"("b")"), -1);
  EXPECT_EQ(refused_at(g, R"("ac")"), 2);
}

TEST(GrammarSchema, TooManyParseStacksAtOnceIsAnErrorNotAStall) {
  // 5000 options alike: each is its own stack from the start.
  ojson many = ojson::array();
  for (int i = 0; i < 5000; ++i) many.push_back({{"type", "string"}, {"maxLength", 10 + i}});
  expect_error(ojson{{"anyOf", many}}.dump().c_str(), "too ambiguous", "");
  // 100 of them are fine.
  many.erase(many.begin() + 100, many.end());
  Matcher fine(compile_json_schema(ojson{{"anyOf", many}}));
  EXPECT_TRUE(fine.accept_bytes("\"abc\""));
  EXPECT_TRUE(fine.is_complete());
}

// A type list repeated at every level compiled the level below once per
// entry: 2^59 compiles for a 2 KB body. A list names each type once, and
// a grammar past GrammarBuilder::kMaxSize (an enum of millions) is
// refused while it is built.
TEST(GrammarSchema, SchemasThatGrowWithoutBoundAreRefusedWhileBuilt) {
  ojson nested = {{"type", "null"}};
  for (int i = 0; i < 59; ++i) nested = {{"type", {"array", "array"}}, {"items", nested}};
  expect_error(nested.dump().c_str(), "type lists \"array\" twice", "/type");
  ojson huge = ojson::array();
  for (int i = 0; i < 2'000'000; ++i) huge.push_back(i);
  expect_error(ojson{{"type", "array"}, {"items", {{"enum", huge}}}}.dump().c_str(), "larger than", "");
}

// An enum is a trie: 5000 values alike (each its own stack once they
// were alternatives: "too ambiguous" at the 4097th, mid-generation) cost
// one stack.
TEST(GrammarSchema, EnumsOfManyValuesAlikeAreOneStack) {
  ojson codes = ojson::array();
  for (int i = 0; i < 5000; ++i) codes.push_back("code_" + std::to_string(i));
  codes.push_back("code_1");  // a repeat
  codes.push_back("code");    // a prefix of the others
  const ojson schema = {{"type", "object"},
                        {"properties", {{"c", {{"enum", codes}}}}},
                        {"required", {"c"}},
                        {"additionalProperties", false}};
  const auto g = compile_json_schema(schema);
  EXPECT_EQ(refused_at(g, R"({"c":"code_4999"})"), -1);
  EXPECT_EQ(refused_at(g, R"({"c":"code"})"), -1);
  EXPECT_EQ(refused_at(g, R"({"c":"code_"})"), 11);
  EXPECT_EQ(refused_at(g, R"({"c":"code_5000"})"), 14);
  EXPECT_EQ(refused_at(g, R"({"c":"cod"})"), 9);
}

// const and enum beside a type: values of another type are no output of
// the schema (the model could write 1 for {"type":"string","enum":["a",1]}).
TEST(GrammarSchema, EnumAndConstKeepToTheirType) {
  const char* e = R"({"type": "string", "enum": ["a", 1, null]})";
  EXPECT_EQ(refused_at(e, R"("a")"), -1);
  EXPECT_EQ(refused_at(e, "1"), 0);
  EXPECT_EQ(refused_at(e, "null"), 0);
  const char* n = R"({"type": ["integer", "null"], "enum": [2.0, 2.5, null, "x"]})";
  EXPECT_EQ(refused_at(n, "2.0"), -1);
  EXPECT_EQ(refused_at(n, "null"), -1);
  EXPECT_EQ(refused_at(n, "2.5"), 2);
  expect_error(R"({"type": "integer", "const": "x"})", "const is not of the schema's type", "/const");
  expect_error(R"({"type": "boolean", "enum": [1, "true"]})", "no value of enum", "/enum");
}

// A pattern of thousands of ".?" cost millions of steps a byte; more than
// kMaxSkippableRun optional parts in a row are refused up front.
TEST(GrammarPattern, LongRunsOfOptionalPartsAreRefused) {
  const size_t most = GrammarBuilder::kMaxSkippableRun;
  auto dots = [](size_t n) {
    std::string p = "^";
    for (size_t i = 0; i < n; ++i) p += ".?";
    return ojson{{"type", "string"}, {"pattern", p + "$"}}.dump();
  };
  expect_error(dots(4000).c_str(), "optional parts in a row", "");
  expect_error(dots(most + 1).c_str(), "optional parts in a row", "");
  EXPECT_EQ(refused_at(dots(most).c_str(), R"("abc")"), -1);
}

TEST(GrammarSchema, UnsupportedRangesAndPatternsNameTheirPath) {
  expect_error(R"({"type":"integer","minimum":5,"maximum":4})", "no integer", "at /");
  expect_error(R"({"properties":{"n":{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2}}})", "no integer",
               "/properties/n");
  expect_error(R"({"type":"number","minimum":1e-20,"maximum":2e-20})", "16 fraction digits", "at /");
  expect_error(R"({"type":"integer","minimum":1e30})", "1e20", "/minimum");
  expect_error(R"({"type":"integer","minimum":"1"})", "number", "/minimum");
  expect_error(R"({"type":"integer","exclusiveMinimum":true})", "without minimum", "/exclusiveMinimum");
  expect_error(R"({"type":"number","multipleOf":0.01})", "multipleOf", "/multipleOf");
  expect_error(R"({"type":"number","multipleOf":0})", "above 0", "/multipleOf");
  expect_error(R"({"type":"string","pattern":3})", "string", "/pattern");
  expect_error(R"({"items":{"pattern":"(a)\\1"}})", "backreference", "/items/pattern");
  expect_error(R"({"pattern":"(?<!a)b"})", "lookbehind", "/pattern");
  expect_error(R"({"pattern":"\\bword"})", "word boundar", "/pattern");
  expect_error(R"({"pattern":"\\p{L}"})", "property", "/pattern");
  expect_error(R"j({"pattern":"a(^b)"})j", "^ and $", "/pattern");
  expect_error(R"({"pattern":"a**"})", "nothing to repeat", "/pattern");
  expect_error(R"({"pattern":"(ab"})", "unterminated group", "/pattern");
  expect_error(R"j({"pattern":"ab)"})j", "unmatched", "/pattern");
  expect_error(R"({"pattern":"[b-a]"})", "out of order", "/pattern");
  expect_error(R"({"pattern":"x{3,2}"})", "out of order", "/pattern");
  expect_error(R"({"pattern":"[]"})", "matches no string", "/pattern");
  expect_error(R"({"pattern":"abc","maxLength":5})", "anchored", "/pattern");
  expect_error(R"({"pattern":"^a{5}$","maxLength":3})", "no string matches", "/pattern");
}

// a* a*: after n bytes the split point could be anywhere, but the stacks
// differ only in counts past the minimum, which the matcher holds there,
// so they are one stack and 20,000 bytes stay quick (quadratic otherwise).
TEST(GrammarCompose, UnboundedRepetitionsSideBySideStayOneStack) {
  GrammarBuilder b;
  const Expr as = b.bytes(single_byte('a'), 0, -1);
  Matcher m(b.build(b.sequence({as, as, b.literal(".")})));
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(m.accept_bytes("a")) << i;
  EXPECT_TRUE(m.accept_bytes("."));
  EXPECT_TRUE(m.must_end());
}

TEST(GrammarCompose, ToolCallsAsAChoiceOfLiteralsAndSchemas) {
  GrammarBuilder b;
  const ojson weather = ojson::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  std::vector<Expr> calls;
  for (const auto& [name, params] : {std::pair<std::string, ojson>{"get_weather", weather}, {"now", ojson()}})
    calls.push_back(b.sequence({b.literal("<tool_call>\n"), tool_call_object(b, name, params), b.literal("\n</tool_call>")}));
  const auto g = b.build(b.choice(calls));
  EXPECT_EQ(refused_at(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"), -1);
  EXPECT_EQ(refused_at(g, "<tool_call>\n{\"name\":\"now\",\"arguments\":{}}\n</tool_call>"), -1);
  EXPECT_EQ(refused_at(g, "<tool_call>\n{\"name\":\"later\""), 21);
  EXPECT_EQ(refused_at(g, "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{}}"), 47);

  GrammarBuilder p;
  const auto params = p.build(tool_call_object(p, "f", weather, "parameters"));
  EXPECT_EQ(refused_at(params, R"({"name":"f","parameters":{"city":"x"}})"), -1);
  EXPECT_EQ(refused_at(params, R"({"name":"f","arguments":{"city":"x"}})"), 13);
}

}  // namespace
}  // namespace hearth::grammar
