// hearth chat: a multi-turn conversation in the terminal, through the
// model's chat template and the engine with its prompt cache: each turn
// renders the whole conversation again, puts back the ids of the replies as
// they were generated, and prefills only what follows the cached prefix.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/engine.h"
#include "text/chat_prompt.h"

namespace hearth::cli {

namespace {
const char* kHelp = R"(usage: hearth chat [--model DIR] [--system TEXT] [options]

Reads your messages line by line; the model's replies stream to stdout.
Commands: /reset forgets the conversation, /exit (or end of input) quits.
Ctrl-C during a reply stops it, even while the prompt is still being read
(what it wrote stays in the conversation); at the prompt it quits.

  --model DIR          model directory (default: the bundled stories260k)
  --system TEXT        a system message to start the conversation with
  --max-tokens N       limit per reply (default: until EOS or the context is full)
  --temperature T --top-p P --top-k K --min-p M --seed S
  --threads N          kernel threads (default: physical cores)
  --kv-type T          KV cache entries: auto (default: bf16, f32 for f32 checkpoints), f32, bf16 or int8
  --ctx-size N         context length (default: the model's max_position_embeddings)
  --prompt-cache GB    KV kept for reuse between turns (default: half the KV budget; 0: off)
  --stats              after each reply, print its prompt, cached and generated tokens to stderr
)";

// Ctrl-C while a reply is made (its prompt read, or its tokens written):
// the reply stops at the engine's next step.
std::atomic<bool> interrupted{false};
std::atomic<RequestHandle*> replying{nullptr};
// Both are set from a signal handler, as is RequestHandle::stop's flag.
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<RequestHandle*>::is_always_lock_free);

// SIGINT stops `reply` for as long as one of these lives; at the prompt it
// ends the program as usual.
struct InterruptReply {
  struct sigaction old {};
  explicit InterruptReply(RequestHandle& reply) {
    interrupted = false;
    replying = &reply;
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      interrupted = true;
      if (RequestHandle* h = replying.load()) h->stop();  // the tokens already made still come
    };
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &old);
  }
  ~InterruptReply() {
    sigaction(SIGINT, &old, nullptr);
    replying = nullptr;
  }
};
}  // namespace

int cmd_chat(int argc, char** argv) {
  Args args(argc, argv, {"help", "stats"});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::vector<std::string> known = {"model",   "system",   "max-tokens", "threads",
                                    "ctx-size", "kv-type", "prompt-cache", "stats"};
  known.insert(known.end(), kSamplingOptions.begin(), kSamplingOptions.end());
  args.allow_only(known);
  args.no_positional();

  const auto dir = model_dir(args);
  const auto gen = io::GenerationConfig::load(dir);
  auto tokenizer = text::Tokenizer::load(dir / "tokenizer.json");
  const auto chat_template = text::ChatTemplate::load(dir);
  text::ChatPrompt chat(chat_template, *tokenizer);

  EngineOptions eopt;
  eopt.threads = thread_count(args);
  eopt.ctx_size = args.integer("ctx-size", 0);
  eopt.kv_type = kv_type(args);
  eopt.max_batch = 1;
  if (args.has("prompt-cache")) eopt.prompt_cache = int64_t(args.number("prompt-cache", 0) * (1ull << 30));
  // The engine's threads never take SIGINT (they inherit this mask): its
  // handler runs on this thread, which cannot be ending a reply meanwhile.
  sigset_t interrupt, before;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  pthread_sigmask(SIG_BLOCK, &interrupt, &before);
  Engine engine(LlamaModel::load(dir), eopt);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  const std::vector<int32_t> eos = reply_stop_ids(gen, tokenizer->eos_id());
  // Checked once, before the first message.
  const SamplingParams sampling = sampling_params(args, gen);
  const int64_t max_tokens = args.integer("max-tokens", -1);
  if (max_tokens == 0 || max_tokens < -1) throw std::runtime_error("--max-tokens must be >= 1");

  struct Reply {
    std::string text;
    std::vector<int32_t> ids;  // as generated: the next turn's prompt reuses them
  };
  std::vector<Reply> replies;
  auto start = [&] {
    replies.clear();
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
    GenerationRequest request;
    request.sampling = sampling;
    request.max_tokens = max_tokens;
    request.stop_ids = eos;
    std::shared_ptr<RequestHandle> handle;
    try {
      std::vector<text::ChatPrompt::KnownIds> known;
      for (const Reply& r : replies) known.push_back({r.text, r.ids});
      request.prompt = chat.tokenize(chat.render(messages, nullptr, true), known);
      handle = engine.submit(std::move(request));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s%s\n", e.what(),
                   std::string(e.what()).find("context") != std::string::npos ? "; /reset" : "");
      messages.erase(messages.size() - 1);
      continue;
    }
    text::StreamDecoder stream(*tokenizer, true);
    Reply reply;
    const InterruptReply on_ctrl_c(*handle);
    while (auto ev = handle->next()) {
      if (std::find(eos.begin(), eos.end(), ev->token) != eos.end()) continue;
      reply.ids.push_back(ev->token);
      std::string piece = stream.push(ev->token);
      reply.text += piece;
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
    }
    std::string tail = stream.flush();
    reply.text += tail;
    std::printf("%s\n", tail.c_str());
    std::fflush(stdout);
    const FinishInfo& info = handle->finish();
    if (!info.error.empty()) {  // the turn failed: it leaves no trace in the conversation
      std::fprintf(stderr, "error: %s\n", info.error.c_str());
      messages.erase(messages.size() - 1);
      continue;
    }
    if (interrupted) std::fputs("[stopped]\n", stderr);
    if (args.has("stats"))
      std::fprintf(stderr, "[prompt %lld tokens, %lld cached; %lld generated]\n", (long long)info.prompt_tokens,
                   (long long)info.cached_tokens, (long long)info.generated_tokens);
    if (reply.ids.empty() && interrupted) {  // stopped before its first token: the turn leaves no trace
      messages.erase(messages.size() - 1);
      continue;
    }
    messages.push_back({{"role", "assistant"}, {"content", reply.text}});
    replies.push_back(std::move(reply));
  }
  return 0;
}

}  // namespace hearth::cli
