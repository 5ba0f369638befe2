// hearth chat: a multi-turn conversation in the terminal, through the
// model's chat template. Each turn renders the whole conversation again.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/generator.h"
#include "text/chat_prompt.h"

namespace hearth::cli {

namespace {
const char* kHelp = R"(usage: hearth chat [--model DIR] [--system TEXT] [options]

Reads your messages line by line; the model's replies stream to stdout.
Commands: /reset forgets the conversation, /exit (or end of input) quits.

  --model DIR          model directory (default: the bundled stories260k)
  --system TEXT        a system message to start the conversation with
  --max-tokens N       limit per reply (default: until EOS or the context is full)
  --temperature T --top-p P --top-k K --min-p M --seed S
  --threads N          kernel threads (default: physical cores)
  --kv-type T          KV cache entries: f32 (default) or bf16
  --ctx-size N         context length (default: the model's max_position_embeddings)
)";
}  // namespace

int cmd_chat(int argc, char** argv) {
  Args args(argc, argv, {"help"});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::vector<std::string> known = {"model",   "system",   "max-tokens",
                                    "threads", "ctx-size", "kv-type"};
  known.insert(known.end(), kSamplingOptions.begin(), kSamplingOptions.end());
  args.allow_only(known);

  const auto dir = model_dir(args);
  auto model = LlamaModel::load(dir);
  const auto gen = io::GenerationConfig::load(dir);
  auto tokenizer = text::Tokenizer::load(dir / "tokenizer.json");
  const auto chat_template = text::ChatTemplate::load(dir);
  text::ChatPrompt chat(chat_template, *tokenizer);

  GenerateOptions opt;
  opt.max_tokens = args.integer("max-tokens", -1);
  opt.sampling = sampling_params(args, gen);
  opt.eos_ids.assign(gen.eos_token_ids.begin(), gen.eos_token_ids.end());
  const int64_t ctx = args.integer("ctx-size", model->config().max_position_embeddings);
  opt.ctx_size = ctx;
  ThreadPool pool(thread_count(args));
  auto kv = make_kv_cache(args, *model, ctx);
  Generator generator(*model, pool, *kv);

  auto start = [&] {
    nlohmann::ordered_json m = nlohmann::ordered_json::array();
    if (args.has("system")) m.push_back({{"role", "system"}, {"content", args.str("system")}});
    return m;
  };
  nlohmann::ordered_json messages = start();
  std::string line;
  for (;;) {
    std::fputs("> ", stderr);
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line == "/reset") {
      messages = start();
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    std::vector<int32_t> prompt;
    try {
      prompt = chat.tokenize(chat.render(messages, nullptr, true));
      if (int64_t(prompt.size()) >= ctx)
        throw std::runtime_error("the conversation no longer fits the context; /reset");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      messages.erase(messages.size() - 1);
      continue;
    }
    text::StreamDecoder stream(*tokenizer, true);
    std::string reply;
    generator.run(prompt, opt, [&](int32_t token, std::span<const float>) {
      if (std::find(opt.eos_ids.begin(), opt.eos_ids.end(), token) != opt.eos_ids.end())
        return true;
      std::string piece = stream.push(token);
      reply += piece;
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::string tail = stream.flush();
    reply += tail;
    std::printf("%s\n", tail.c_str());
    std::fflush(stdout);
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
  return 0;
}

}  // namespace hearth::cli
