// Structured output from fuzzed JSON Schemas: compiled to a grammar
// (engine/grammar/json_schema.h), then a fuzzed text run through the
// matcher with the bundled model's vocabulary. The input is the schema,
// optionally followed by a line "\n---text---\n" and the text.
// Schemas are read within the request body's limits (64 levels of nesting,
// as server/json_fields.cpp's parse_body allows). An unsupported schema
// must be a GrammarError (the server's 400); for any grammar, the token mask
// must agree with what accept() takes, and a text the grammar calls complete
// must be JSON.
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar/vocabulary.h"
#include "fuzz_support.h"
#include "text/tokenizer/tokenizer.h"

using namespace hearth;
using ojson = nlohmann::ordered_json;

namespace {

constexpr int kMaxDepth = 64;

const std::shared_ptr<const grammar::Vocabulary>& vocabulary() {
  static const auto tok = text::Tokenizer::load(fuzz::source_dir() / "models/stories260k/tokenizer.json");
  static const auto vocab = grammar::Vocabulary::from_tokenizer(*tok);
  return vocab;
}

void check_mask(grammar::Matcher& m, size_t salt) {
  const grammar::Vocabulary& v = m.vocabulary();
  std::vector<uint32_t> mask(v.mask_words());
  m.fill_mask(mask);
  // A spread of tokens (all of a small vocabulary would be slow): masked
  // ones are accepted, the others refused.
  for (size_t i = salt % 7; i < v.size(); i += 7) {
    const int32_t id = int32_t(i);
    const bool allowed = mask[i / 32] >> (i % 32) & 1;
    grammar::Matcher copy = m;
    HEARTH_FUZZ_CHECK(copy.accept(id) == allowed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)vocabulary();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size), text;
  constexpr std::string_view kSeparator = "\n---text---\n";
  if (auto at = input.find(kSeparator); at != std::string_view::npos) {
    text = input.substr(at + kSeparator.size());
    input = input.substr(0, at);
  }
  ojson schema;
  try {
    schema = ojson::parse(input, [](int depth, ojson::parse_event_t, ojson&) {
      if (depth > kMaxDepth) throw std::length_error("too deep");
      return true;
    });
  } catch (const std::exception&) {
    return 0;  // not a body the server would read
  }
  std::shared_ptr<const grammar::Grammar> g;
  try {
    g = grammar::compile_json_schema(schema);
  } catch (const grammar::GrammarError&) {
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("compile_json_schema", e.what());
  }
  HEARTH_FUZZ_CHECK(g != nullptr);
  try {
    grammar::Matcher m(g, vocabulary());
    check_mask(m, size);
    // Byte by byte as far as the grammar takes the text.
    size_t taken = 0;
    while (taken < text.size() && m.accept_bytes(text.substr(taken, 1))) ++taken;
    check_mask(m, taken);
    if (m.is_complete()) {
      try {
        (void)ojson::parse(text.substr(0, taken));
      } catch (const ojson::out_of_range&) {
        // a number beyond double's range: JSON, just not for nlohmann
      } catch (const ojson::parse_error&) {
        fuzz::broken("the grammar completed on text that is not JSON");
      }
    }
    // The whole text at once agrees with byte by byte.
    grammar::Matcher whole(g, vocabulary());
    HEARTH_FUZZ_CHECK(whole.accept_bytes(text) == (taken == text.size()));
  } catch (const std::exception& e) {
    fuzz::unexpected("the grammar matcher", e.what());
  }
  return 0;
}
