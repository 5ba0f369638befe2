// hearth fit: whether a checkpoint fits this machine (or one with --memory
// GB), and how long a context and how many streams `hearth serve` would give
// it. It reads config.json and the safetensors headers only, and makes the
// plan serve makes at start (engine/memory_plan), so the two never disagree.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/memory_plan.h"
#include "io/model_dirs.h"
#include "model/llama.h"

namespace hearth::cli {

namespace {

const char* kUsage =
    "usage: hearth fit [--model DIR] [--memory GB] [--kv-type auto|f32|bf16|int8] [--kv-budget GB]\n"
    "                  [--ctx-size N] [--max-batch N] [--ssd-cache DIR [--ssd-spill-queue GB]] [--json]\n"
    "  Says whether the model fits in memory and what `hearth serve` with the same\n"
    "  options would make of it: the KV pool, the context, the streams at full context.\n"
    "  Reads config.json and the safetensors headers only. Exits 1 if the weights do not fit.\n"
    "  --memory GB   plan for this much available memory (default: what is available now)\n"
    "  --kv-type, --kv-budget, --ctx-size, --max-batch: as for hearth serve\n"
    "  --ssd-cache DIR, --ssd-spill-queue GB: as for hearth serve, whose SSD write queue\n"
    "                (default 2 GB) comes out of the memory the KV pool may take\n"
    "  --json        print the plan as one JSON object\n";


double positive_gb(const Args& args, const std::string& name, double fallback = 0) {
  const double v = args.number(name, fallback);
  if (!(v > 0)) throw std::runtime_error("--" + name + " must be > 0 (GB)");
  return v;
}

}  // namespace

int cmd_fit(int argc, char** argv) {
  Args args(argc, argv, {"json", "help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.allow_only({"model", "memory", "kv-type", "kv-budget", "ctx-size", "max-batch", "ssd-cache", "ssd-spill-queue",
                   "json", "help"});
  args.no_positional();
  const auto dir = model_dir(args);
  const CheckpointFootprint f = LlamaModel::footprint(dir);
  const io::ModelConfig& c = f.config;

  MemoryPlanInput in;
  in.weights_bytes = f.weight_bytes;
  in.available_bytes = args.has("memory") ? size_t(positive_gb(args, "memory") * kGB) : memory_available();
  if (in.available_bytes == 0) throw std::runtime_error("cannot read MemAvailable from /proc/meminfo: give --memory GB");
  if (args.has("kv-budget")) in.kv_budget = size_t(positive_gb(args, "kv-budget") * kGB);
  in.shape = kv_shape(c, kv_type(args).value_or(f.native_kv_type));
  in.model_context = c.max_position_embeddings;
  in.ctx_size = args.integer("ctx-size", 0);
  if (in.ctx_size < 0) throw std::runtime_error("--ctx-size must be >= 1");
  const int64_t max_batch = args.integer("max-batch", 8, 1, 4096);  // as serve takes it
  if (args.has("ssd-spill-queue") && !args.has("ssd-cache")) throw std::runtime_error("--ssd-spill-queue needs --ssd-cache DIR");
  if (args.has("ssd-cache")) in.ssd_queue_bytes = uint64_t(positive_gb(args, "ssd-spill-queue", 2) * kGB);
  const AdmissionInfo plan = plan_memory(in);

  const bool weights_fit = f.weight_bytes <= plan.usable_bytes;
  const double token_bytes = double(KvCache::block_bytes(in.shape)) / in.shape.block_tokens;
  const int64_t context = plan.enforced_context_tokens;
  const int64_t full_streams = plan.kv_blocks / KvCache::blocks_for_tokens(in.shape, context);
  // The longest context at which --max-batch streams all fit at once.
  const int64_t batch_context = plan.kv_blocks / max_batch * in.shape.block_tokens;

  if (args.has("json")) {
    nlohmann::json j = {{"model", io::model_name(dir)},
                        {"architecture", c.architecture},
                        {"weights_bytes", f.weight_bytes},
                        {"available_bytes", in.available_bytes},
                        {"usable_bytes", plan.usable_bytes},
                        {"ssd_queue_bytes", plan.ssd_queue_bytes},
                        {"weights_fit", weights_fit},
                        {"kv_type", std::string(dtype_name(in.shape.dtype))},
                        {"kv_bytes_per_token", int64_t(token_bytes)},
                        {"kv_budget_bytes", plan.memory_budget_bytes},
                        {"kv_tokens", plan.max_safe_context},
                        {"model_context", c.max_position_embeddings},
                        {"context", context},
                        {"max_batch", max_batch},
                        {"streams_at_full_context", full_streams},
                        {"context_for_max_batch", std::min(batch_context, context)}};
    std::printf("%s\n", j.dump().c_str());
    return weights_fit ? 0 : 1;
  }
  std::printf("model         %s (%s, %d layers, %d KV heads x %d)\n", io::model_name(dir).c_str(),
              c.architecture.c_str(), c.num_layers, c.num_kv_heads, c.head_dim);
  std::printf("weights       %s\n", size_text(double(f.weight_bytes)).c_str());
  std::printf("memory        %s %s; serve budgets 85%% of it%s: %s\n", size_text(double(in.available_bytes)).c_str(),
              args.has("memory") ? "(--memory)" : "available now",
              plan.ssd_queue_bytes ? (", less the SSD write queue's " + size_text(double(plan.ssd_queue_bytes))).c_str() : "",
              size_text(double(plan.usable_bytes)).c_str());
  if (!weights_fit) {
    std::printf("does not fit: the weights need %s more\n", size_text(double(f.weight_bytes - plan.usable_bytes)).c_str());
    return 1;
  }
  std::printf("KV            %s a token (%s entries); pool %s%s: %lld tokens\n", size_text(token_bytes).c_str(),
              std::string(dtype_name(in.shape.dtype)).c_str(), size_text(double(plan.memory_budget_bytes)).c_str(),
              in.kv_budget ? " (--kv-budget)" : ", what fits beside the weights", (long long)plan.max_safe_context);
  std::printf("context       %lld tokens%s\n", (long long)context,
              context < c.max_position_embeddings
                  ? (" (the model's is " + std::to_string(c.max_position_embeddings) + ")").c_str()
                  : " (the model's)");
  std::printf("streams       %lld at full context", (long long)full_streams);
  if (full_streams >= max_batch)
    std::printf(": all %lld of --max-batch\n", (long long)max_batch);
  else
    std::printf("; all %lld of --max-batch at %lld tokens each (--ctx-size %lld), or fewer longer ones\n",
                (long long)max_batch, (long long)batch_context, (long long)batch_context);
  return 0;
}

}  // namespace hearth::cli
