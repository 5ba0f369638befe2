// Token masks: the trie walk (with the plain-string shortcut) against a
// brute force that tries every token on a copy of the matcher, on a
// synthetic vocabulary and on Qwen3's; Qwen3's token bytes; and the time a
// mask takes on Qwen3's 151k tokens (printed, not asserted).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "engine_grammar_test_support.h"

namespace hearth::grammar {
namespace {

using test::ojson;

std::vector<uint32_t> brute_force_mask(const Matcher& m, const Vocabulary& v) {
  std::vector<uint32_t> mask(v.mask_words(), 0);
  for (size_t id = 0; id < v.size(); ++id) {
    Matcher copy = m;
    if (copy.accept(int32_t(id))) mask[id / 32] |= 1u << (id % 32);
  }
  return mask;
}

std::vector<int32_t> differing_ids(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < a.size() * 32; ++i)
    if ((a[i / 32] >> (i % 32) & 1) != (b[i / 32] >> (i % 32) & 1)) ids.push_back(int32_t(i));
  return ids;
}

// For every prefix of `doc`, the walked mask equals the brute-force one.
void expect_masks_match(const std::shared_ptr<const Vocabulary>& v, const char* schema, std::string_view doc,
                        size_t stride = 1) {
  const auto g = schema ? compile_json_schema(ojson::parse(schema)) : compile_json_object();
  std::vector<uint32_t> walked(v->mask_words());
  for (size_t n = 0; n <= doc.size(); n += stride) {
    Matcher m(g, v);
    ASSERT_TRUE(m.accept_bytes(doc.substr(0, n))) << doc.substr(0, n);
    m.fill_mask(walked);
    const auto diff = differing_ids(walked, brute_force_mask(m, *v));
    EXPECT_TRUE(diff.empty()) << "after \"" << doc.substr(0, n) << "\": " << diff.size() << " tokens differ, first \""
                              << v->bytes(diff[0]) << "\"";
  }
}

TEST(GrammarMask, TrieWalkEqualsBruteForceOnASyntheticVocabulary) {
  const auto v = std::make_shared<const Vocabulary>(test::synthetic_token_bytes());
  expect_masks_match(v, R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
      "tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":2}},"required":["name"]})",
                     "{\"name\": \"h\xC3\xA9llo \\u00e9 \xE6\x97\xA5\\\"\", \"age\": -12, \"tags\": [\"abc\", \"\xF0\x9F\x98\x80\"]}");
  expect_masks_match(v, R"({"anyOf":[{"enum":["abcdef","xyz"]},{"type":"string","maxLength":2}]})", "\"abcdef\"");
  expect_masks_match(v, R"({"type":"number"})", "-0.5e+12");
  expect_masks_match(v, nullptr, R"({"a": [true, null, {"b": 1.5}], "c": "d"})");
  // Ranges, and patterns: anchored, and unanchored (a free prefix and
  // suffix beside the pattern, where the plain-string shortcut applies
  // only once no other stack could take a plain token).
  expect_masks_match(v, R"({"type":"array","items":{"type":"integer","minimum":-120,"maximum":3400}})", "[-119,0,3400]");
  expect_masks_match(v, R"({"type":"number","exclusiveMinimum":-1.25,"maximum":1000})", "-1.2499");
  expect_masks_match(v, R"({"type":"string","pattern":"^[A-Z]{2}-\\d+(\\.\\w)?$"})", "\"AB-12.x\"");
  expect_masks_match(v, R"({"type":"string","pattern":"ab|\\d{2}"})", "\"xy\\u00e9ab1 \xC3\xA9z\"");
  expect_masks_match(v, R"({"type":"string","pattern":"^[^a]\\\\.\"$"})", "\"\xE6\x97\xA5\\\\\\t\\\"\"");
  const char* long_doc = "\"h\xC3\xA9llo \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80 abcdefghij\\t\\\"\"";
  expect_masks_match(v, R"({"type":"string","pattern":"^.{0,40}$"})", long_doc);
  expect_masks_match(v, R"({"type":"string","pattern":"^[^\"]{2,30}$"})", "\"h\xC3\xA9llo \xE6\x97\xA5 \\\\ \\t\"");
  expect_masks_match(v, R"({"type":"string","pattern":"^[^\\u00e9]{0,6}$"})", "\"h\xC3\xA8l lo\"");
}

// A mask or token that takes more steps than the matcher's budget is a
// GrammarError (the engine ends that request alone), not seconds of the
// step every request shares.
TEST(GrammarMask, AMaskPastItsStepBudgetIsAnError) {
  const auto v = std::make_shared<const Vocabulary>(test::synthetic_token_bytes());
  ojson alike = ojson::array();
  for (int i = 0; i < 200; ++i) alike.push_back({{"type", "string"}, {"pattern", "^a.{0," + std::to_string(50 + i) + "}$"}});
  const auto g = compile_json_schema(ojson{{"anyOf", alike}});
  std::vector<uint32_t> mask(v->mask_words());
  Matcher roomy(g, v);
  ASSERT_TRUE(roomy.accept_bytes("\"a"));
  roomy.fill_mask(mask);  // 200 stacks over the trie: within the default budget
  Matcher tight(g, v, 100'000);
  ASSERT_TRUE(tight.accept_bytes("\"a"));
  EXPECT_THROW(tight.fill_mask(mask), GrammarError);
  EXPECT_THROW(tight.accept_bytes(std::string(2000, 'b')), GrammarError);
}

// A pattern's class takes plain tokens in bulk when it is the only run of
// plain characters the stacks wait on, past its minimum count; tokens that
// cross into what follows it must still be found (the walk covers them
// only where no bulk run is taken).
TEST(GrammarMask, ClassRunsInBulkEqualBruteForce) {
  auto bytes = test::synthetic_token_bytes();
  bytes.insert(bytes.end() - 1, {"c1", "bc1", "cdefgh", "defg", "efgh", "ab c", "c\xC3\xA9" "d", "\xC3\xA9" "d e", "1\""});
  const auto v = std::make_shared<const Vocabulary>(bytes);
  expect_masks_match(v, R"({"type":"string","pattern":"^[a-z]{2,5}[a-z]{0,3}$"})", "\"abcdefgh\"");
  expect_masks_match(v, R"({"type":"string","pattern":"^[a-z]{3,5}[0-9]$"})", "\"abc1\"");
  expect_masks_match(v, R"({"type":"string","pattern":"^[a-z]{1,5}[0-9]?$"})", "\"abc1\"");
  expect_masks_match(v, R"({"type":"string","pattern":"^\\S{1,3}( \\S{1,3})*$"})", "\"ab c\xC3\xA9" "d e\"");
  expect_masks_match(v, R"({"type":"string","pattern":"^[^ ]{0,4}$"})", "\"c\xC3\xA9" "d\"");
}

// A broad class with no limit takes its tokens in bulk beside anything
// else, and the walk covers the few others (a vocabulary where the class
// takes most tokens, as [^@] does Qwen3's).
TEST(GrammarMask, BroadClassesWalkOnlyTheOtherTokens) {
  std::vector<std::string> bytes;
  for (char c = ' '; c <= '~'; ++c)
    if (c != '"' && c != '\\' && c != '@') bytes.push_back(std::string(1, c));
  for (const char* t : {"ab", "cd ", "xyz", "hello", " world", "\xC3\xA9", "\xE6\x97\xA5", "\xE6\x97", "a1", "b c"})
    bytes.push_back(t);
  for (const char* t : {"@", "x@y", "b@", "@ef", "\"", "\\", "\\n", "d@e\"", "\"}", "gh\""}) bytes.push_back(t);
  bytes.push_back("");
  const auto v = std::make_shared<const Vocabulary>(bytes);
  expect_masks_match(v, R"({"type":"string","pattern":"^[^@]+@[a-z]+$"})", "\"ab c\xC3\xA9" "d@efgh\"");
  expect_masks_match(v, R"({"type":"string","pattern":"^(\\S+ )*1$"})", "\"abc1 d 1\"");
  expect_masks_match(v, R"({"type":"string","pattern":"^.+@$|^x"})", "\"xa@b@\"");
}

TEST(GrammarMask, AMaskNeverAllowsTokensWithoutBytes) {
  const auto bytes = test::synthetic_token_bytes();
  const auto v = std::make_shared<const Vocabulary>(bytes);
  Matcher m(compile_json_object(), v);
  std::vector<uint32_t> mask(v->mask_words());
  m.fill_mask(mask);
  const size_t eos = bytes.size() - 1;
  EXPECT_FALSE(mask[eos / 32] >> (eos % 32) & 1);
  EXPECT_TRUE(mask[size_t('{') / 32] >> ('{' % 32) & 1);
}

TEST(GrammarMask, Qwen3TokenBytesRebuildTheText) {
  const auto tok = test::qwen3_or_null();
  if (!tok) GTEST_SKIP() << "no " << test::kQwen3;
  const auto v = Vocabulary::from_tokenizer(*tok);
  const std::string text = "{\"caf\xC3\xA9\": \"\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\", \"n\": [1, 2]}\n";
  std::string rebuilt;
  for (int32_t id : tok->encode(text, false)) rebuilt += v->bytes(id);
  EXPECT_EQ(rebuilt, text);
  EXPECT_TRUE(v->bytes(*tok->token_to_id("<|im_end|>")).empty());
}

TEST(GrammarMask, TrieWalkEqualsBruteForceOnQwen3) {
  const auto tok = test::qwen3_or_null();
  if (!tok) GTEST_SKIP() << "no " << test::kQwen3;
  const auto v = Vocabulary::from_tokenizer(*tok);
  expect_masks_match(v, R"({"type":"object","properties":{"city":{"type":"string","maxLength":5},
      "temp":{"type":"number"}},"required":["city","temp"]})", "{\"city\": \"Z\xC3\xBCri\", \"temp\": -3.5}", 3);
  expect_masks_match(v, R"({"type":"array","items":{"type":"string"}})", "[\"ab \xE6\x97\xA5", 2);
  expect_masks_match(v, R"({"type":"array","items":{"type":"string","pattern":"^[a-z]{1,4}-\\d+$|x"}})",
                     "[\"ab-12\", \"yxz\"]", 3);
  expect_masks_match(v, R"({"type":"number","minimum":-3.5,"exclusiveMaximum":250})", "-3.4999", 2);
  expect_masks_match(v, R"({"type":"string","pattern":"^.{0,30}$"})", "\"Z\xC3\xBCrich \xE6\x97\xA5 ok\"", 3);
  expect_masks_match(v, R"({"type":"string","pattern":"x"})", "\"ab x cd\"", 3);
  expect_masks_match(v, R"({"type":"string","pattern":"^[^@]+@[a-z]{1,8}\\.org$"})",
                     "\"J\xC3\xBCrg.m_1@example.org\"", 3);
}

// Mean time of fill_mask after `prefix`, on Qwen3's vocabulary.
double mask_microseconds(const std::shared_ptr<const Vocabulary>& v, const std::shared_ptr<const Grammar>& g,
                         std::string_view prefix) {
  Matcher m(g, v);
  EXPECT_TRUE(m.accept_bytes(prefix));
  std::vector<uint32_t> mask(v->mask_words());
  m.fill_mask(mask);  // warm the scratch
  const int reps = 20;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) m.fill_mask(mask);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
}

TEST(GrammarMask, BenchmarkOnQwen3) {
  const auto tok = test::qwen3_or_null();
  if (!tok) GTEST_SKIP() << "no " << test::kQwen3;
  const auto v = Vocabulary::from_tokenizer(*tok);
  const auto schema = compile_json_schema(ojson::parse(R"({"type":"object","properties":{
      "name":{"type":"string"},"code":{"type":"string","maxLength":8},"n":{"type":"number"},
      "any":{}},"required":["name","code","n","any"]})"));
  const auto ranged = compile_json_schema(ojson::parse(R"({"type":"object","properties":{
      "i":{"type":"integer","minimum":-1000,"maximum":1000},"x":{"type":"number","exclusiveMinimum":0,"maximum":100},
      "code":{"type":"string","pattern":"^[A-Z]{2}-\\d{3,5}$"},"dot":{"type":"string","pattern":"^.{0,40}$"},
      "in":{"type":"string","pattern":"abc"},"mail":{"type":"string","pattern":"^[^@]+@[a-z]+$"}},
      "required":["i","x","code","dot","in","mail"]})"));
  const struct {
    const char* state;
    std::shared_ptr<const Grammar> g;
    const char* prefix;
  } cases[] = {
      {"after '{'", schema, "{"},
      {"inside a free string", schema, "{\"name\": \"Ab"},
      {"inside a string, maxLength 8", schema, "{\"name\": \"A\", \"code\": \"x"},
      {"inside a number", schema, "{\"name\": \"A\", \"code\": \"x\", \"n\": 12"},
      {"any value expected", schema, "{\"name\": \"A\", \"code\": \"x\", \"n\": 1, \"any\": "},
      {"json_object, after '{\"k\": '", compile_json_object(), "{\"k\": "},
      {"integer in [-1000, 1000], after 1", ranged, "{\"i\": 1"},
      {"number in (0, 100], after 12.5", ranged, "{\"i\": 1, \"x\": 12.5"},
      {"pattern ^[A-Z]{2}-\\d{3,5}$, after AB-", ranged, "{\"i\": 1, \"x\": 1, \"code\": \"AB-"},
      {"pattern ^.{0,40}$, after ab", ranged, "{\"i\": 1, \"x\": 1, \"code\": \"AB-123\", \"dot\": \"ab"},
      {"pattern abc (free prefix), after xy", ranged, "{\"i\": 1, \"x\": 1, \"code\": \"AB-123\", \"dot\": \"\", \"in\": \"xy"},
      {"pattern abc (free suffix), after abcx", ranged, "{\"i\": 1, \"x\": 1, \"code\": \"AB-123\", \"dot\": \"\", \"in\": \"abcx"},
      {"pattern ^[^@]+@, after ab", ranged, "{\"i\": 1, \"x\": 1, \"code\": \"AB-123\", \"dot\": \"\", \"in\": \"abc\", \"mail\": \"ab"},
  };
  std::printf("fill_mask on %zu tokens (mean of 20):\n", v->size());
  for (const auto& c : cases) std::printf("  %-42s %9.1f us\n", c.state, mask_microseconds(v, c.g, c.prefix));
}

}  // namespace
}  // namespace hearth::grammar
