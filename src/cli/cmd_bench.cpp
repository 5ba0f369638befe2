// hearth bench: prefill and decode speed of a model, and how close decode
// comes to the machine's memory bandwidth (measured in the same run).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/aligned_bytes.h"
#include "core/amx.h"
#include "core/bandwidth.h"
#include "core/bf16_matmul.h"
#include "core/cpu_features.h"
#include "core/elapsed.h"
#include "core/int8_matmul.h"
#include "core/ops.h"
#include "core/simd.h"
#include "core/simd_sampling.h"
#include "engine/generator.h"

namespace hearth::cli {

namespace {

// The CPU features the kernels use, and whether prefill runs on AMX tiles.
std::string cpu_summary() {
  std::string s = cpu_features().summary();
  if (amx_bf16_available()) s += " amx-bf16";
  if (amx_int8_available()) s += " amx-int8";
  return s;
}

const char* kHelp = R"(usage: hearth bench [--model DIR] [options]

  --model DIR        model directory (default: the bundled stories260k)
  --threads N        kernel threads (default: physical cores)
  --kv-type T        KV cache entries: auto (default: bf16, f32 for f32 checkpoints), f32, bf16 or int8
  --prefill LIST     prompt lengths to time (default: 64,512)
  --decode N         tokens to decode (default: 128)
  --context N        decode after a prompt of N tokens (default: 1); the KV cache read
                     per token then counts in the streamed bytes
  --repeats N        timed runs per measurement; the best is reported (default: 3)
  --streams LIST     also decode N streams together, one token each per step, as a
                     server batches N concurrent requests (e.g. 1,8): aggregate tok/s
  --json             print one JSON object instead of the table
)";

// Aggregate greedy decode tok/s of n streams that decode together: each
// step forwards one token of every stream in one batch, as the engine's
// steps do for n running requests (the forward and the argmax, without the
// engine's scheduling or HTTP). Each stream starts from its own
// `context`-token prompt, prefilled before the clock starts. Best of repeats.
double batched_decode_rate(LlamaModel& model, ThreadPool& pool, KvCache& kv,
                           std::span<const int32_t> prompts, int64_t context, int n,
                           int64_t steps, int repeats) {
  const int64_t vocab = model.config().vocab_size;
  std::vector<float> logits;
  double best = 0;
  for (int r = 0; r < repeats + 1; ++r) {  // the first run warms caches and page tables
    std::vector<int> seqs(static_cast<size_t>(n));
    std::vector<int32_t> next(static_cast<size_t>(n));
    std::vector<BatchRow> rows(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) {
      seqs[s] = kv.create_sequence();
      if (!kv.reserve(seqs[s], context + steps))
        throw std::runtime_error("the KV pool is smaller than the streams' contexts");
      rows[s] = BatchRow{seqs[s], prompts.subspan(size_t(s * context), size_t(context)), false};
    }
    // The prompts (all in one batch, like the prompt chunks of a step).
    model.forward(pool, kv, rows, logits);
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < steps; ++step) {
      for (int s = 0; s < n; ++s) {
        next[s] = int32_t(simd::argmax(logits.data() + size_t(s * vocab), vocab));
        rows[s].tokens = std::span(&next[s], 1);
      }
      model.forward(pool, kv, rows, logits);
    }
    const double s = seconds_since(t0);
    for (int seq : seqs) kv.release(seq);
    if (r > 0) best = std::max(best, double(n * steps) / s);
  }
  return best;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args args(argc, argv, {"help", "json"});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  args.allow_only(
      {"model", "threads", "prefill", "decode", "context", "repeats", "json", "kv-type", "streams"});
  const bool json_out = args.has("json");
  const int repeats = int(args.integer("repeats", 3, 1, INT_MAX));
  const int64_t decode_tokens = args.integer("decode", 128);
  const int64_t context = args.integer("context", 1);
  // The first token comes from the prefill: a rate needs a decode step after it.
  if (decode_tokens < 2) throw std::runtime_error("--decode must be at least 2");
  if (context < 1) throw std::runtime_error("--context must be at least 1");
  const std::vector<int64_t> prefill_lengths =
      parse_integers(args.str("prefill", "64,512"), "--prefill", "a prompt length");
  for (int64_t n : prefill_lengths)
    if (n < 1) throw std::runtime_error("--prefill takes prompt lengths of at least 1");
  // Ascending, with 1 added where absent: the ratios are to one stream, measured alike.
  std::vector<int64_t> stream_counts = parse_integers(args.str("streams", ""), "--streams", "a stream count");
  for (int64_t n : stream_counts)
    if (n < 1 || n > 256) throw std::runtime_error("--streams takes counts from 1 to 256");
  if (!stream_counts.empty()) stream_counts.push_back(1);
  std::sort(stream_counts.begin(), stream_counts.end());
  stream_counts.erase(std::unique(stream_counts.begin(), stream_counts.end()), stream_counts.end());
  const int64_t max_streams = stream_counts.empty() ? 1 : stream_counts.back();
  auto progress = [&](const char* what) { std::fprintf(stderr, "bench: %s\n", what); };

  const auto dir = model_dir(args);
  progress("loading the model");
  auto model = LlamaModel::load(dir);
  const auto& cfg = model->config();
  ThreadPool pool(thread_count(args));

  progress("measuring memory read bandwidth");
  const double bandwidth = measure_read_bandwidth(pool);

  int64_t max_prompt = context;
  for (int64_t n : prefill_lengths) max_prompt = std::max(max_prompt, n);
  const int64_t ctx =
      std::min<int64_t>(cfg.max_position_embeddings, std::max(max_prompt, context + decode_tokens));
  if (context >= ctx) throw std::runtime_error("--context leaves no room to decode");
  auto kv = make_kv_cache(args, *model, ctx, int(max_streams));
  std::mt19937 rng(1234);
  std::vector<int32_t> tokens(static_cast<size_t>(max_prompt));
  for (auto& t : tokens) t = int32_t(rng() % uint32_t(cfg.vocab_size));
  std::vector<int32_t> stream_prompts(size_t(max_streams * context));  // stream s: [s * context, +context)
  for (auto& t : stream_prompts) t = int32_t(rng() % uint32_t(cfg.vocab_size));

  nlohmann::json prefill = nlohmann::json::array();
  std::vector<float> logits;
  for (int64_t n : prefill_lengths) {
    if (n > cfg.max_position_embeddings) continue;
    std::string msg = "prefill " + std::to_string(n) + " tokens";
    progress(msg.c_str());
    double best = 1e30;
    for (int r = 0; r < repeats + 1; ++r) {  // the first run warms caches and page tables
      int seq = kv->create_sequence();
      if (!kv->reserve(seq, n)) throw std::runtime_error("the KV pool is smaller than the prompt");
      BatchRow row{seq, std::span(tokens.data(), size_t(n)), false};
      auto t0 = std::chrono::steady_clock::now();
      model->forward(pool, *kv, std::span(&row, 1), logits);
      double s = seconds_since(t0);
      kv->release(seq);
      if (r > 0) best = std::min(best, s);
    }
    prefill.push_back({{"tokens", n}, {"seconds", best}, {"tokens_per_second", double(n) / best}});
  }

  // The decode kernel alone on the output head (the largest matrix): how
  // close the matrix-vector product itself comes to the memory bandwidth,
  // apart from everything else a decode step does. A 512 MB read between
  // runs evicts the head from the last-level cache (which can hold a small
  // model's head), so each run streams it from memory as decode does.
  progress("output-head matrix-vector product");
  const Matrix& head = model->output_head();
  std::vector<float> x(static_cast<size_t>(head.cols), 0.01f), y(static_cast<size_t>(head.rows));
  std::vector<float> evict(size_t(128) << 20, 1.0f);
  std::vector<float> sink(static_cast<size_t>(pool.size()));
  double best_gemv = 1e30;
  for (int r = 0; r < 5 * repeats; ++r) {
    pool.run(pool.size(), [&](int task, int) {
      const size_t per = evict.size() / size_t(pool.size());
      sink[task] += simd::sum(evict.data() + task * per, int64_t(per));
    });
    auto t0 = std::chrono::steady_clock::now();
    matmul(pool, head, x.data(), 1, y.data());
    best_gemv = std::min(best_gemv, seconds_since(t0));
  }
  const double gemv_bandwidth = double(head.bytes()) / best_gemv;

  progress("decode, greedy and sampled");
  Generator generator(*model, pool, *kv);
  // Best decode tok/s over the repeats, greedy and sampled (the usual chat
  // settings) taking turns, so a machine whose speed drifts during the run
  // moves both alike; EOS is never a stop, so every run decodes the same
  // number of tokens. A shared memory bus still moves the rates by several
  // percent between runs, so each mode's own time choosing a token (the
  // sampler, or the argmax) is also kept: measured inside the loop, least
  // over the repeats.
  struct DecodeRate {
    SamplingParams sampling;
    double best = 0, choosing = std::numeric_limits<double>::infinity();
    int64_t generated = 0;
  };
  DecodeRate greedy, sampled;
  greedy.sampling.temperature = 0;
  sampled.sampling.temperature = 0.8f;
  sampled.sampling.top_p = 0.95f;
  sampled.sampling.seed = 1;
  GenerateOptions decode_options;
  decode_options.max_tokens = std::min<int64_t>(decode_tokens, ctx - 1);
  decode_options.ctx_size = ctx;
  for (int r = 0; r < repeats; ++r)
    for (DecodeRate* d : {&greedy, &sampled}) {
      decode_options.sampling = d->sampling;
      GenerateStats stats;
      generator.run(
          std::span(tokens.data(), size_t(context)), decode_options,
          [](int32_t, std::span<const float>) { return true; }, &stats);
      // The first token comes from the prefill; decode steps are the rest.
      const double tps = double(stats.generated_tokens - 1) / stats.decode_seconds;
      if (tps > d->best) d->best = tps, d->generated = stats.generated_tokens;
      d->choosing = std::min(d->choosing, stats.choosing_seconds / double(stats.generated_tokens));
    }
  const double best_decode = greedy.best, best_sampled = sampled.best;
  // What sampling adds to a step, as a share of the greedy step.
  const double sampling_cost = (sampled.choosing - greedy.choosing) * best_decode;
  const int64_t generated = greedy.generated;

  nlohmann::json streams = nlohmann::json::array();
  const int64_t stream_steps = std::min<int64_t>(decode_tokens, ctx - context);
  for (int64_t n : stream_counts) {
    progress(("decode of " + std::to_string(n) + " streams together").c_str());
    const double rate = batched_decode_rate(*model, pool, *kv, stream_prompts, context, int(n),
                                            stream_steps, repeats);
    const double single = n == 1 ? rate : streams[0]["tokens_per_second"].get<double>();
    streams.push_back({{"streams", n},
                       {"tokens_per_second", rate},
                       {"per_stream", rate / double(n)},
                       {"ratio_to_one_stream", rate / single}});
  }
  // Weights, plus the KV entries attention reads at the run's mean length.
  const KvCacheShape kv_shape = model->kv_shape(kv_type(args, *model));
  const double kv_bytes_per_position =
      double(KvCache::block_bytes(kv_shape)) / kv_shape.block_tokens;
  const double bytes_per_token = double(model->bytes_per_decode_token()) +
                                 kv_bytes_per_position * (double(context) + double(generated) / 2);
  const double decode_bandwidth = bytes_per_token * best_decode;

  const std::string cpu = cpu_summary(), huge_pages = transparent_huge_pages();
  nlohmann::json out = {
      {"model", dir.string()},
      {"architecture", cfg.architecture},
      {"threads", pool.size()},
      {"cpu", cpu},
      {"simd_target", simd::target_name()},
      {"int8_target", int8_target()},
      {"bf16_target", bf16_target()},
      {"transparent_huge_pages", huge_pages},
      {"weight_bytes", model->weight_bytes()},
      {"kv_type", std::string(dtype_name(kv_shape.dtype))},
      {"memory_read_bandwidth_gbps", bandwidth / 1e9},
      {"prefill", prefill},
      {"output_head_gemv",
       {{"bytes", head.bytes()},
        {"gbps", gemv_bandwidth / 1e9},
        {"fraction_of_bandwidth", gemv_bandwidth / bandwidth}}},
      {"decode",
       {{"tokens", generated},
        {"context", context},
        {"tokens_per_second", best_decode},
        {"bytes_per_token", bytes_per_token},
        {"gbps", decode_bandwidth / 1e9},
        {"fraction_of_bandwidth", decode_bandwidth / bandwidth}}},
      {"sampled_decode",
       {{"temperature", sampled.sampling.temperature},
        {"top_p", sampled.sampling.top_p},
        {"tokens_per_second", best_sampled},
        {"fraction_of_greedy", best_sampled / best_decode},
        {"choosing_ms_per_token", 1e3 * sampled.choosing},
        {"greedy_choosing_ms_per_token", 1e3 * greedy.choosing},
        {"added_fraction_of_greedy_step", sampling_cost}}},
      {"streams", streams},
  };
  if (json_out) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model      %s (%s), %.1f MB of weights, KV entries %s\n", dir.string().c_str(),
              cfg.architecture.c_str(), model->weight_bytes() / 1e6,
              std::string(dtype_name(kv_shape.dtype)).c_str());
  std::printf(
      "machine    %d threads, %s, SIMD target %s, int8 kernels %s, bf16 kernels %s, huge pages "
      "%s, memory read %.1f GB/s\n",
      pool.size(), cpu.c_str(), simd::target_name(), int8_target(), bf16_target(),
      huge_pages.c_str(), bandwidth / 1e9);
  for (const auto& p : prefill)
    std::printf("prefill    %5lld tokens  %9.1f tok/s\n", (long long)p["tokens"].get<int64_t>(),
                p["tokens_per_second"].get<double>());
  std::printf("gemv       output head %.1f MB  %.1f GB/s = %.0f%% of memory bandwidth\n",
              head.bytes() / 1e6, gemv_bandwidth / 1e9, 100 * gemv_bandwidth / bandwidth);
  std::printf(
      "decode     %5lld tokens  %9.1f tok/s  %.1f MB/token  %.1f GB/s = %.0f%% of memory "
      "bandwidth%s\n",
      (long long)generated, best_decode, bytes_per_token / 1e6, decode_bandwidth / 1e9,
      100 * decode_bandwidth / bandwidth,
      context > 1 ? (" (after " + std::to_string(context) + " tokens)").c_str() : "");
  std::printf("sampled    %5lld tokens  %9.1f tok/s  (temperature 0.8, top-p 0.95) = %.1f%% of greedy\n",
              (long long)sampled.generated, best_sampled, 100 * best_sampled / best_decode);
  std::printf(
      "sampler    %.3f ms a token sampled, %.3f greedy: sampling adds %.1f%% to a greedy step\n",
      1e3 * sampled.choosing, 1e3 * greedy.choosing, 100 * sampling_cost);
  for (const auto& s : streams)
    std::printf("streams    %5lld together  %7.1f tok/s  %.1f per stream  %.2fx one stream\n",
                (long long)s["streams"].get<int64_t>(), s["tokens_per_second"].get<double>(),
                s["per_stream"].get<double>(), s["ratio_to_one_stream"].get<double>());
  return 0;
}

}  // namespace hearth::cli
