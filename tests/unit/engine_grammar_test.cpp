// The JSON Schema compiler and the matcher on byte strings: each supported
// feature takes valid documents and refuses invalid ones at the right
// byte; unsupported features are GrammarErrors naming their path.
#include <gtest/gtest.h>

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
  expect_error(R"({"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}})", "pattern",
               "/properties/x/pattern");
  expect_error(R"({"type":"integer","minimum":0})", "minimum", "/minimum");
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
