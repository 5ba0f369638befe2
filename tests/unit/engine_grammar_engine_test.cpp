// A constraint through the engine and the single-sequence generator on the
// bundled model (SentencePiece with byte fallback): concurrent constrained
// and free requests, greedy and sampled, all valid; the generator agrees
// with the engine token for token.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/generator.h"
#include "engine_grammar_test_support.h"
#include "engine_test_support.h"

namespace hearth {
namespace {

using grammar::test::ojson;

const std::filesystem::path kModel = std::filesystem::path(HEARTH_SOURCE_DIR) / "models/stories260k";
const ojson kSchema = ojson::parse(R"({"type":"object","properties":{
    "name":{"type":"string","maxLength":8},"n":{"type":"integer"},
    "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3}},"required":["name","n","tags"]})");

struct Fixture {
  std::unique_ptr<text::Tokenizer> tok = text::Tokenizer::load(kModel / "tokenizer.json");
  std::shared_ptr<const grammar::Vocabulary> vocab = grammar::Vocabulary::from_tokenizer(*tok);
  grammar::Constraint constraint{grammar::compile_json_schema(kSchema), vocab};

  GenerationRequest request(float temperature, uint64_t seed) const {
    GenerationRequest r;
    r.prompt = tok->encode("Once upon a time", true);
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    r.max_tokens = 300;
    r.stop_ids = {2};  // </s>
    r.constraint = constraint;
    return r;
  }
  std::string text(const std::vector<int32_t>& ids) const {
    std::string s;
    for (int32_t id : ids)
      if (id != 2) s += vocab->bytes(id);
    return s;
  }
};

TEST(GrammarEngine, SentencePieceTokenBytesRebuildTheText) {
  Fixture f;
  const std::string text = "Lily said, \"Hi {x}!\" \xC3\xA9\n";
  std::string rebuilt;
  for (int32_t id : f.tok->encode(text, false)) rebuilt += f.vocab->bytes(id);
  EXPECT_EQ(rebuilt, " " + text);  // the tokenizer's prefix space, which the decoder strips at the start only
}

TEST(GrammarEngine, ConstrainedRequestsAmongFreeOnesAreValid) {
  Fixture f;
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2, .max_batch = 4, .prefill_chunk = 4});
  std::vector<std::shared_ptr<RequestHandle>> constrained, free;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    constrained.push_back(engine.submit(f.request(seed == 0 ? 0.0f : 1.0f, seed)));
    GenerationRequest plain = f.request(1.0f, seed);
    plain.constraint.reset();
    plain.max_tokens = 20;
    free.push_back(engine.submit(plain));
  }
  for (auto& h : constrained) {
    const std::string out = f.text(collect(*h));
    EXPECT_EQ(h->finish().reason, FinishReason::Stop) << out;
    EXPECT_TRUE(grammar::test::validates(ojson::parse(out), kSchema, kSchema)) << out;
  }
  for (auto& h : free) EXPECT_EQ(collect(*h).size(), 20u);  // unconstrained ones run as before
  expect_kv_returned(engine);
}

TEST(GrammarEngine, AGrammarTooAmbiguousMidwayFailsItsRequestAsTheClients) {
  // (?:a?a?...)* keeps a parse stack per way the a's so far can split: fine
  // at the first byte (the compile-time probe passes), past the cap at the
  // second 'a'. Five a's are required, so the output reaches it.
  std::string pattern = "^(?:";
  for (int i = 0; i < 4000; ++i) pattern += "a?";
  pattern += ")*aaaaa$";
  Fixture f;
  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 2, .max_batch = 4});
  GenerationRequest bad = f.request(1.0f, 3);
  bad.constraint = grammar::Constraint{grammar::compile_json_schema(ojson{{"type", "string"}, {"pattern", pattern}}),
                                       f.vocab};
  auto failing = engine.submit(bad);
  auto fine = engine.submit(f.request(0.0f, 0));
  collect(*failing);
  const FinishInfo& info = failing->finish();
  EXPECT_TRUE(info.request_fault);
  EXPECT_NE(info.error.find("too ambiguous"), std::string::npos) << info.error;
  // The request beside it is not touched.
  const std::string out = f.text(collect(*fine));
  EXPECT_TRUE(fine->finish().error.empty());
  EXPECT_FALSE(fine->finish().request_fault);
  EXPECT_TRUE(grammar::test::validates(ojson::parse(out), kSchema, kSchema)) << out;
  expect_kv_returned(engine);
}

TEST(GrammarEngine, TheGeneratorTakesTheConstraintToo) {
  Fixture f;
  auto model = LlamaModel::load(kModel);
  ThreadPool pool(1);
  KvCache kv(model->kv_shape(), 32);
  Generator gen(*model, pool, kv);
  const GenerationRequest r = f.request(1.0f, 5);
  GenerateOptions opt;
  opt.max_tokens = r.max_tokens;
  opt.sampling = r.sampling;
  opt.eos_ids = r.stop_ids;
  opt.constraint = r.constraint;
  std::vector<int32_t> out;
  EXPECT_EQ(gen.run(r.prompt, opt, [&](int32_t t, std::span<const float>) { return out.push_back(t), true; }),
            FinishReason::Stop);

  Engine engine(LlamaModel::load(kModel), EngineOptions{.threads = 1});
  auto h = engine.submit(f.request(1.0f, 5));
  EXPECT_EQ(collect(*h), out);
  EXPECT_TRUE(grammar::test::validates(ojson::parse(f.text(out)), kSchema, kSchema)) << f.text(out);
}

}  // namespace
}  // namespace hearth
