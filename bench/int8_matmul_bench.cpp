// The int8 matmul alone, in multiply-accumulates per second, by the number of
// tokens in one call: what batched decode (a few tokens) and prefill (many)
// get from the kernel on this CPU, apart from the rest of a step.
//
//   build/int8_matmul_bench [--threads N] [--bits 4|8] [--rounds R]
//
// The matrices are qwen3-0.6b's layer shapes (q/k/v and gate/up stacked, as
// the model packs them; o; down), random MLX codes with group 64 and bf16
// scales, 5.5 MB at 4 bits: they sit in the L3 cache of most CPUs, so a
// single token measures the kernel, not DRAM. Each count's time is the best
// of --rounds rounds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/int8_matmul.h"

using namespace hearth;

int main(int argc, char** argv) {
  int threads = 1, bits = 4, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--threads") threads = v;
    else if (a == "--bits") bits = v;
    else if (a == "--rounds") rounds = v;
    else return std::fprintf(stderr, "unknown option %s\n", a.c_str()), 2;
  }
  if ((bits != 4 && bits != 8) || threads < 1 || rounds < 1) return std::fprintf(stderr, "bad options\n"), 2;
  ThreadPool pool(threads);
  struct Shape { int64_t rows, cols; };
  const Shape shapes[] = {{4096, 1024}, {6144, 1024}, {1024, 2048}, {1024, 3072}};
  std::mt19937_64 rng(1);
  struct Weights { std::vector<uint32_t> words; std::vector<uint16_t> scales, biases; Matrix m; };
  std::vector<Weights> ws(std::size(shapes));
  for (size_t s = 0; s < ws.size(); ++s) {
    Weights& w = ws[s];
    w.words.resize(size_t(shapes[s].rows * shapes[s].cols * bits / 32));
    for (auto& x : w.words) x = uint32_t(rng());
    w.scales.assign(size_t(shapes[s].rows * shapes[s].cols / 64), f32_to_bf16(0.01f));
    w.biases.assign(w.scales.size(), f32_to_bf16(-0.05f));
    Matrix& m = w.m;
    m.rows = shapes[s].rows, m.cols = shapes[s].cols, m.dtype = DType::U32, m.data = w.words.data();
    m.bits = bits, m.group_size = 64, m.scale_dtype = DType::BF16;
    m.scales = w.scales.data(), m.biases = w.biases.data();
    m.packed = int8_pack(m, pool);
    if (!m.packed) return std::fprintf(stderr, "this CPU has no int8 kernel\n"), 1;
  }
  std::printf("int8 kernels: %s, %d thread(s), %d-bit, group 64\n", int8_target(), threads, bits);
  std::printf("| tokens | ms per layer | GMAC/s |\n|---:|---:|---:|\n");
  std::normal_distribution<float> normal;
  for (int tokens : {1, 2, 4, 8, 16, 64}) {
    double macs = 0, seconds = 0;
    for (const Weights& w : ws) {
      std::vector<float> x(size_t(tokens * w.m.cols)), y(size_t(tokens * w.m.rows));
      for (auto& v : x) v = normal(rng);
      const int calls = std::max(2, 400 / tokens);
      double best = 1e30;
      for (int r = 0; r < rounds; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) int8_matmul(pool, *w.m.packed, x.data(), tokens, y.data());
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls);
      }
      macs += double(w.m.rows) * double(w.m.cols) * tokens;
      seconds += best;
    }
    std::printf("| %d | %.3f | %.1f |\n", tokens, seconds * 1e3, macs / seconds / 1e9);
  }
}
