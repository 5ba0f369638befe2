// hearth generate: run the model on a prompt and stream the text to stdout.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/generator.h"
#include "text/chat_prompt.h"
#include "text/tokenizer/tokenizer.h"

namespace hearth::cli {

namespace {

const char* kHelp =
    R"(usage: hearth generate [--model DIR] [--prompt TEXT | --prompt-ids 1,2,3] [options]

  --model DIR          model directory (default: the bundled stories260k)
  --prompt TEXT        prompt text, tokenized with the model's tokenizer (BOS added as it says)
  --prompt-ids LIST    comma-separated token ids, used verbatim
  --chat               treat --prompt as a user message and render it with the model's
                       chat template (--system TEXT adds a system message)
  --max-tokens N       stop after N tokens (default: until EOS or the context is full)
  --temperature T      0 is greedy (default: generation_config.json, else 0)
  --top-p P --top-k K --min-p M --seed S
  --threads N          kernel threads (default: physical cores)
  --kv-type T          KV cache entries: auto (default: bf16, f32 for f32 checkpoints), f32, bf16 or int8
  --logits K           print one JSON line per step: the token and the top-K (id, logit)
  --dump-logits FILE   write the prompt's logits, float32 [n_prompt, vocab], to FILE
  --ctx-size N         context length (default: the model's max_position_embeddings)
)";

}  // namespace

int cmd_generate(int argc, char** argv) {
  Args args(argc, argv, {"help", "chat"});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::vector<std::string> known = {"model",   "prompt", "prompt-ids",  "max-tokens",
                                    "threads", "logits", "dump-logits", "ctx-size",
                                    "chat",    "system", "kv-type"};
  known.insert(known.end(), kSamplingOptions.begin(), kSamplingOptions.end());
  args.allow_only(known);
  args.no_positional();

  const auto dir = model_dir(args);
  auto model = LlamaModel::load(dir);
  const auto gen = io::GenerationConfig::load(dir);
  const int logits_k = int(args.integer("logits", 0));
  if (logits_k < 0) throw std::runtime_error("--logits must be at least 0");

  std::unique_ptr<text::Tokenizer> tokenizer;
  if (!args.has("prompt-ids") || logits_k == 0)
    tokenizer = text::Tokenizer::load(dir / "tokenizer.json");

  std::vector<int32_t> prompt;
  if (args.has("prompt-ids")) {
    prompt = parse_ids(args.str("prompt-ids"), "--prompt-ids");
  } else if (args.has("chat")) {
    const auto chat_template = text::ChatTemplate::load(dir);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (args.has("system"))
      messages.push_back({{"role", "system"}, {"content", args.str("system")}});
    messages.push_back({{"role", "user"}, {"content", args.str("prompt")}});
    text::ChatPrompt chat(chat_template, *tokenizer);
    prompt = chat.tokenize(chat.render(messages, nullptr, true));
  } else if (args.has("prompt")) {
    prompt = tokenizer->encode(args.str("prompt"), true);
  } else {
    auto bos = tokenizer->bos_id() ? tokenizer->bos_id() : gen.bos_token_id;
    if (!bos)
      throw std::runtime_error("no --prompt given and the model has no BOS token to start from");
    prompt = {*bos};
  }
  if (prompt.empty()) throw std::runtime_error("the prompt is empty");

  GenerateOptions opt;
  opt.max_tokens = args.integer("max-tokens", -1);
  opt.sampling = sampling_params(args, gen);
  opt.eos_ids.assign(gen.eos_token_ids.begin(), gen.eos_token_ids.end());
  std::vector<float> prompt_logits;
  if (args.has("dump-logits")) opt.prompt_logits = &prompt_logits;

  const int64_t ctx = args.integer("ctx-size", model->config().max_position_embeddings);
  opt.ctx_size = ctx;
  ThreadPool pool(thread_count(args));
  auto kv = make_kv_cache(args, *model, ctx);
  Generator generator(*model, pool, *kv);
  std::optional<text::StreamDecoder> stream;
  if (tokenizer) stream.emplace(*tokenizer);

  int64_t step = 0;
  GenerateStats stats;
  FinishReason reason = generator.run(
      prompt, opt,
      [&](int32_t token, std::span<const float> logits) {
        if (logits_k > 0) {
          nlohmann::json line = {
              {"step", step}, {"token", token}, {"top", top_logits(logits, logits_k)}};
          std::printf("%s\n", line.dump().c_str());
        } else if (std::find(opt.eos_ids.begin(), opt.eos_ids.end(), token) == opt.eos_ids.end()) {
          std::fputs(stream->push(token).c_str(), stdout);
        }
        std::fflush(stdout);
        ++step;
        return true;
      },
      &stats);
  if (stream && logits_k == 0) std::printf("%s\n", stream->flush().c_str());
  std::fflush(stdout);

  if (args.has("dump-logits")) {
    std::ofstream out(args.str("dump-logits"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(prompt_logits.data()),
              std::streamsize(prompt_logits.size() * sizeof(float)));
    if (!out) throw std::runtime_error("cannot write " + args.str("dump-logits"));
  }
  std::fprintf(
      stderr, "[%lld prompt tokens, %.1f tok/s prefill; %lld generated, %.1f tok/s; finish: %s]\n",
      (long long)stats.prompt_tokens, stats.prompt_tokens / std::max(1e-9, stats.prefill_seconds),
      (long long)stats.generated_tokens,
      stats.generated_tokens / std::max(1e-9, stats.decode_seconds), finish_reason_name(reason));
  return 0;
}

}  // namespace hearth::cli
