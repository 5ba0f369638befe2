// hearth embed: embeddings of texts (or token ids) through the engine, as
// the server computes them, one JSON line per input.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/embedding.h"
#include "io/pooling_config.h"
#include "text/tokenizer/tokenizer.h"

namespace hearth::cli {

namespace {

const char* kHelp =
    R"(usage: hearth embed [--model DIR] [options] TEXT... | --ids 1,2,3

Prints {"index", "tokens", "embedding"} per input, one JSON line each: the
final hidden states pooled as the checkpoint says (Sentence Transformers'
modules.json; last token when it says nothing), truncated and L2-normalized.

  --model DIR       model directory (default: the bundled stories260k)
  --ids LISTS       inputs as token ids, used verbatim: "1,2,3" is one input,
                    "1,2,3;4,5" two (they are embedded in one batch)
  --dimensions N    keep the first N values (Matryoshka truncation), then normalize
  --threads N       kernel threads (default: physical cores)
  --ctx-size N      context length (default: the model's max_position_embeddings)
)";

}  // namespace

int cmd_embed(int argc, char** argv) {
  Args args(argc, argv, {"help"});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  args.allow_only({"model", "ids", "dimensions", "threads", "ctx-size"});
  const auto dir = model_dir(args);
  const io::PoolingConfig pooling = io::read_pooling_config(dir);
  const int64_t dimensions = args.integer("dimensions", 0);
  std::vector<std::vector<int32_t>> inputs;
  if (args.has("ids")) {
    std::stringstream lists(args.str("ids"));
    for (std::string list; std::getline(lists, list, ';');) inputs.push_back(parse_ids(list, "--ids"));
  }
  if (!args.positional().empty()) {
    auto tokenizer = text::Tokenizer::load(dir / "tokenizer.json");
    for (const std::string& text : args.positional()) inputs.push_back(tokenizer->encode(text, true));
  }
  if (inputs.empty()) throw std::runtime_error("nothing to embed: give TEXT arguments or --ids");

  auto model = LlamaModel::load(dir);
  if (dimensions < 0 || dimensions > model->config().hidden_size)
    throw std::runtime_error("--dimensions must be between 1 and the hidden size " +
                             std::to_string(model->config().hidden_size));
  EngineOptions eopt;
  eopt.threads = thread_count(args);
  eopt.ctx_size = args.integer("ctx-size", 0);
  eopt.prompt_cache = 0;
  Engine engine(std::move(model), eopt);
  const EmbeddingBatch batch = embed(engine, inputs, pooling.pooling, dimensions);
  for (size_t i = 0; i < inputs.size(); ++i)
    std::printf("%s\n", nlohmann::ordered_json{{"index", i}, {"tokens", inputs[i].size()}, {"embedding", batch.vectors[i]}}
                            .dump()
                            .c_str());
  std::fprintf(stderr, "[%zu inputs, %lld tokens; pooling: %s (%s)]\n", inputs.size(), (long long)batch.tokens,
               io::pooling_name(pooling.pooling),
               pooling.source.empty() ? "default: no pooling config" : pooling.source.c_str());
  return 0;
}

}  // namespace hearth::cli
