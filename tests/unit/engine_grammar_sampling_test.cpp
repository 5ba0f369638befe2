// The acceptance test of structured output: a "model" of random logits,
// sampled through Decoding with a grammar, 100 times per schema; every
// output must parse and validate against its schema. On the synthetic
// vocabulary always, and on Qwen3's when it is installed (20 times there in
// the sanitizer build, which looks for memory errors, not for rare
// outputs: 100 took 25 minutes at -O0 on 150k-token rows).
#include <gtest/gtest.h>

#include <random>

#include "engine/decoding.h"
#include "engine_grammar_test_support.h"

namespace hearth::grammar {
namespace {

using test::ojson;

const char* const kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer"},
        "address":{"type":"object","properties":{"city":{"type":"string","maxLength":8},
        "zip":{"type":"string","minLength":2,"maxLength":5}},"required":["city"]}},"required":["name","address"]})",
    R"({"type":"array","items":{"type":"number"},"minItems":2,"maxItems":4})",
    R"({"type":"object","properties":{"color":{"enum":["red","green","blue",null,3]},
        "size":{"const":"XL"},"ok":{"type":"boolean"}},"required":["color","size","ok"]})",
    R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":3},{"type":"array","items":{"type":"null"},"maxItems":3}]})",
    R"({"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":4},
        "maxItems":3},"score":{"type":["number","null"]}},"required":["tags","score"]})",
    R"({"$ref":"#/$defs/item","$defs":{"item":{"type":"object","properties":{"id":{"type":"integer"},
        "label":{"type":"string","maxLength":6}},"required":["id","label"]}}})",
    // Ranges: every edge kind, and the 64-bit extremes.
    R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10},
        "neg":{"type":"integer","minimum":-1000,"exclusiveMaximum":-7},"big":{"type":"integer",
        "minimum":-9223372036854775808,"maximum":9223372036854775807},"low":{"type":"integer","maximum":-100},
        "d4":{"type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":3,"exclusiveMaximum":true}},
        "required":["n","neg","big","low","d4"]})",
    R"({"type":"object","properties":{"r":{"type":"number","minimum":-2.5,"exclusiveMaximum":3.75},
        "p":{"type":"number","exclusiveMinimum":0},"unit":{"type":"number","minimum":0,"maximum":1},
        "tiny":{"type":"number","minimum":0.1,"maximum":0.30000000000000004},
        "whole":{"type":"number","multipleOf":1,"minimum":-3.5,"maximum":3.5}},"required":["r","p","unit","tiny","whole"]})",
    // Patterns, anchored (a random model rarely ends an unanchored one's free string).
    R"({"type":"array","items":{"type":"string","pattern":"^[A-Z]{2}-\\d{3,5}$"},"minItems":1,"maxItems":3})",
    R"({"type":"object","properties":{"id":{"type":"string","pattern":"^(foo|ba[rz])_[a-f0-9]{4}$"},
        "word":{"type":"string","pattern":"^\\w+$","maxLength":6},"odd":{"type":"string","pattern":"^[\"\\\\/\\n\\u00e9-\\u00ea]{1,4}$"},
        "any":{"type":"string","pattern":"^(.|\\.\\.){0,5}$"},"other":{"type":"string","pattern":"^[^a-z]{2,3}x$"}},
        "required":["id","word","odd","any","other"]})",
};

// Samples `runs` outputs per schema from seeded random logits and checks
// each. A step's logits are uniform in [0, 8), so every allowed token has
// a fair chance, the stop id included once the grammar allows it.
void sample_and_validate(const std::shared_ptr<const Vocabulary>& vocab, int32_t stop_id, size_t logits_size,
                         int runs, int top_k) {
  std::minstd_rand rng(1234);
  std::vector<float> logits(logits_size);
  for (const char* text : kSchemas) {
    const ojson schema = ojson::parse(text);
    const Constraint constraint{compile_json_schema(schema), vocab};
    for (int run = 0; run < runs; ++run) {
      SamplingParams sampling;
      sampling.seed = uint64_t(run);
      sampling.top_k = top_k;
      Decoding d({0}, sampling, {{stop_id}, 400, 100000}, constraint);
      std::string out;
      while (!d.finished()) {
        for (float& l : logits) l = float(rng() % 8192) / 1024.0f;
        const int32_t token = d.next(logits);
        if (token != stop_id) out += vocab->bytes(token);
      }
      ASSERT_EQ(*d.finished(), FinishReason::Stop) << text << "\nran out of tokens: " << out;
      ojson value;
      try {
        value = ojson::parse(out);
      } catch (const std::exception& e) {
        FAIL() << text << "\ndoes not parse: " << out << "\n" << e.what();
      }
      EXPECT_TRUE(test::validates(value, schema, schema)) << text << "\ndoes not validate: " << out;
    }
  }
}

#if defined(__SANITIZE_ADDRESS__)
constexpr int kQwen3Runs = 20;
#else
constexpr int kQwen3Runs = 100;
#endif

TEST(GrammarSampling, HundredOutputsPerSchemaValidateOnASyntheticVocabulary) {
  const auto bytes = test::synthetic_token_bytes();
  const auto vocab = std::make_shared<const Vocabulary>(bytes);
  sample_and_validate(vocab, int32_t(bytes.size() - 1), bytes.size(), 100, 0);
}

TEST(GrammarSampling, OutputsPerSchemaValidateOnQwen3) {
  const auto tok = test::qwen3_or_null();
  if (!tok) GTEST_SKIP() << "no " << test::kQwen3;
  // The model's embedding is padded past the tokenizer (151936 rows for 151669 tokens).
  // top_k keeps the sampler's cost per step small; the grammar masks first,
  // so the 64 best are all allowed tokens.
  sample_and_validate(Vocabulary::from_tokenizer(*tok), *tok->token_to_id("<|im_end|>"), 151936, kQwen3Runs, 64);
}

TEST(GrammarSampling, GreedyFollowsTheGrammarAndStopsWhereItMustEnd) {
  const auto bytes = test::synthetic_token_bytes();
  const auto vocab = std::make_shared<const Vocabulary>(bytes);
  const ojson schema = ojson::parse(R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]})");
  SamplingParams greedy;
  greedy.temperature = 0;
  const int32_t stop = int32_t(bytes.size() - 1);
  Decoding d({0}, greedy, {{stop}, 100, 1000}, Constraint{compile_json_schema(schema), vocab});
  // The model prefers 'x' and the stop id; the grammar allows neither until it is done.
  std::vector<float> logits(bytes.size(), 0.0f);
  logits[size_t('x')] = 9;
  logits[size_t(stop)] = 8;
  logits[size_t('t')] = 1;
  std::string out;
  while (!d.finished()) {
    const int32_t t = d.next(logits);
    if (t != stop) out += bytes[size_t(t)];
  }
  EXPECT_EQ(out, R"({"ok":true})");
  EXPECT_EQ(d.history().back(), stop);  // forced once nothing else may follow

  // Without stop ids the output ends as soon as the grammar must end.
  Decoding no_stop({0}, greedy, {{}, 100, 1000}, Constraint{compile_json_schema(schema), vocab});
  int steps = 0;
  while (!no_stop.finished()) no_stop.next(logits), ++steps;
  EXPECT_EQ(no_stop.finished(), FinishReason::Stop);
  EXPECT_EQ(steps, 11);  // one byte token per step
}

}  // namespace
}  // namespace hearth::grammar
