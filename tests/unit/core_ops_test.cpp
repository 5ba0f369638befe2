// The fast kernels against their scalar references, on random inputs of odd
// sizes, for every weight format.
#include <gtest/gtest.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/aligned_bytes.h"
#include "core/amx.h"
#include "core/bf16_matmul.h"
#include "core/cpu_features.h"
#include "core/int8_matmul.h"
#include "core/ops.h"
#include "core/ops_reference.h"
#include "core/quant_matmul.h"
#include "core/simd.h"

namespace hearth {
namespace {

std::vector<float> randn(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Whether this CPU should take the packed kernels; the HEARTH_NO_* switches
// (set by the test registered as core_ops_portable_test) turn them off so
// the portable paths run the same checks, and HEARTH_SIMD (core_ops_avx2_test
// and others) lowers the features cpu_features() reports.
bool expect_int8_kernel() {
  const CpuFeatures& f = cpu_features();
  return (f.avx512vnni || (f.avx2 && f.fma && f.f16c) || f.asimd) && !std::getenv("HEARTH_NO_INT8");
}
bool expect_bf16_kernel() {
  const CpuFeatures& f = cpu_features();
#if defined(__aarch64__)
  const bool widen = f.asimd;
#else
  const bool widen = f.avx2 && f.fma && f.f16c;
#endif
  return (f.avx512bf16 || widen) && !std::getenv("HEARTH_NO_BF16_DOT");
}

float max_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// A dense matrix in a given dtype, owning its storage.
struct DenseMatrix {
  std::vector<uint8_t> bytes;
  Matrix m;
  DenseMatrix(DType t, int64_t rows, int64_t cols, uint64_t seed) {
    auto v = randn(size_t(rows * cols), seed);
    bytes.resize(v.size() * dtype_size(t));
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == DType::F32) reinterpret_cast<float*>(bytes.data())[i] = v[i];
      if (t == DType::BF16) reinterpret_cast<uint16_t*>(bytes.data())[i] = f32_to_bf16(v[i]);
      if (t == DType::F16) reinterpret_cast<uint16_t*>(bytes.data())[i] = f32_to_f16(v[i]);
    }
    m.rows = rows;
    m.cols = cols;
    m.dtype = t;
    m.data = bytes.data();
  }
};

// Random codes, scales and biases in the MLX layout.
struct QuantMatrix {
  std::vector<uint32_t> words;
  std::vector<uint16_t> scales, biases;
  Matrix m;
  QuantMatrix(int bits, int group, int64_t rows, int64_t cols, uint64_t seed) {
    std::mt19937_64 rng(seed);
    words.resize(size_t(rows * cols * bits / 32));
    for (auto& w : words) w = uint32_t(rng());
    auto s = randn(size_t(rows * cols / group), seed + 1, 0.05f);
    // MLX anchors the bias at one end of the group's range (bias = min or
    // max, the scale's sign pointing inward): |scale * q| then reaches the
    // whole range while |w| stays within it, which a kernel must not confuse.
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    for (size_t i = 0; i < s.size(); ++i) {
      float edge = unit(rng) < 0.5f ? 0.0f : 1.0f, range = std::fabs(s[i]) * float((1 << bits) - 1);
      float scale = edge == 0.0f ? std::fabs(s[i]) : -std::fabs(s[i]);
      float bias = (edge == 0.0f ? -0.5f : 0.5f) * range + 0.01f * unit(rng);
      scales.push_back(f32_to_bf16(scale));
      biases.push_back(f32_to_bf16(bias));
    }
    m.rows = rows;
    m.cols = cols;
    m.dtype = DType::U32;
    m.data = words.data();
    m.bits = bits;
    m.group_size = group;
    m.scale_dtype = DType::BF16;
    m.scales = scales.data();
    m.biases = biases.data();
  }
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel) {
  ASSERT_EQ(got.size(), want.size());
  float tol = rel * std::max(1.0f, max_abs(want));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(Ops, DenseMatmulMatchesReference) {
  ThreadPool pool(2);
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (int64_t rows : {1, 7, 33})
      for (int64_t cols : {1, 7, 33, 128})
        for (int64_t n : {1, 3, 5}) {
          DenseMatrix w(t, rows, cols, rows * 100 + cols);
          auto x = randn(size_t(n * cols), 7);
          std::vector<float> got(size_t(n * rows)), want(size_t(n * rows));
          matmul(pool, w.m, x.data(), n, got.data());
          reference::matmul(w.m, x.data(), n, want.data());
          SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" +
                       std::to_string(cols));
          expect_close(got, want, 1e-5f);
        }
}

// The vectorized activation rounding equals f32_to_bf16 bit for bit: ties
// to even, NaNs kept quiet, infinities, denormals, and an odd-length tail.
TEST(Ops, ActivationRoundingToBf16MatchesScalar) {
  std::vector<float> x = randn(1000, 17, 1e3f);
  const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0x7fc00001u, 0xff812345u, 0x00000001u,
                               0x807fffffu, 0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 37] = std::bit_cast<float>(specials[i]);
  x.resize(999);
  std::vector<uint16_t> got(x.size());
  to_bf16(x.data(), int64_t(x.size()), got.data());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], f32_to_bf16(x[i])) << "at " << i;
}

// The BF16 dot-product kernel rounds activations to BF16: it must equal the
// reference run on the rounded activations. The widening kernel (AVX2, NEON;
// F16 weights everywhere) takes them as they are: it must equal the
// reference on the F32 ones.
TEST(Ops, Bf16PackedMatmulMatchesReference) {
  ThreadPool pool(2);
  // 16 tokens and more take the AMX path where the CPU has it (whole 32-column
  // tiles only: 64 and 96 columns); 37 tokens end in a partial token block.
  for (DType dtype : {DType::BF16, DType::F16})
    for (int64_t rows : {1, 7, 16, 33, 48})
      for (int64_t cols : {1, 7, 64, 96, 129})
        for (int64_t n : {1, 2, 5, 9, 16, 37}) {
          DenseMatrix w(dtype, rows, cols, rows * 7 + cols);
          w.m.packed_bf16 = bf16_pack(w.m, pool);
          if (expect_bf16_kernel()) {
            ASSERT_TRUE(w.m.packed_bf16);
          }
          auto x = randn(size_t(n * cols), 3);
          std::vector<float> xr(x.size()), got(size_t(n * rows)), want(size_t(n * rows));
          for (size_t i = 0; i < x.size(); ++i) xr[i] = bf16_to_f32(f32_to_bf16(x[i]));
          matmul(pool, w.m, x.data(), n, got.data());
          const bool rounded = w.m.packed_bf16 && dtype == DType::BF16 &&
                               std::string(bf16_target()) == "avx512-bf16";
          reference::matmul(w.m, rounded ? xr.data() : x.data(), n, want.data());
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::to_string(rows) + "x" +
                       std::to_string(cols) + " tokens " + std::to_string(n));
          expect_close(got, want, 1e-5f);
        }
}

// Batch invariance of the packed 16-bit kernels below AMX (AVX-512 BF16;
// the widening one of AVX2, NEON and F16 weights): a token's outputs are the
// same bits alone as beside 1-8 other tokens (every width of token block),
// whichever row tiles a task takes together (one thread groups tiles for
// few tokens; two take these shapes' tiles one by one). AMX (16 tokens and
// more) is not covered: its tile sums are in the hardware's order.
TEST(Ops, Bf16KernelIsBatchInvariant) {
  if (!expect_bf16_kernel()) GTEST_SKIP() << "no packed 16-bit kernel on this CPU";
  ThreadPool one(1), two(2);
  for (DType dtype : {DType::BF16, DType::F16})
    for (int64_t rows : {7, 33, 48, 80})
      for (int64_t cols : {7, 64, 129}) {
        DenseMatrix w(dtype, rows, cols, rows * 5 + cols);
        w.m.packed_bf16 = bf16_pack(w.m, one);
        ASSERT_TRUE(w.m.packed_bf16);
        constexpr int64_t kTokens = 9;
        const auto x = randn(size_t(kTokens * cols), 11);
        std::vector<float> alone(size_t(kTokens * rows));
        matmul(one, w.m, nullptr, 0, nullptr);  // no tokens: nothing read or written
        for (int64_t t = 0; t < kTokens; ++t)
          matmul(two, w.m, x.data() + t * cols, 1, alone.data() + t * rows);
        for (int64_t n = 1; n <= kTokens; ++n) {
          std::vector<float> together(size_t(n * rows));
          matmul(one, w.m, x.data(), n, together.data());
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::to_string(rows) + "x" +
                       std::to_string(cols) + ", " + std::to_string(n) + " tokens");
          ASSERT_EQ(std::memcmp(together.data(), alone.data(), together.size() * sizeof(float)), 0);
        }
      }
}

TEST(Ops, QuantizedMatmulMatchesReference) {
  ThreadPool pool(2);
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t rows : {1, 7, 16, 33})
        // 16 tokens and more take the AMX path where the CPU has it (groups
        // of 64 and 128); 37 tokens end in a partial 16-token block.
        for (int64_t n : {1, 2, 5, 9, 16, 37}) {
          int64_t cols = group * 3;
          QuantMatrix w(bits, group, rows, cols, uint64_t(bits * 1000 + group + rows));
          w.m.packed = int8_pack(w.m, pool);
          auto x = randn(size_t(n * cols), 11);
          std::vector<float> got(size_t(n * rows)), want(size_t(n * rows));
          matmul(pool, w.m, x.data(), n, got.data());
          reference::matmul(w.m, x.data(), n, want.data());
          SCOPED_TRACE("bits " + std::to_string(bits) + " group " + std::to_string(group) +
                       " rows " + std::to_string(rows) + " tokens " + std::to_string(n));
          if (!w.m.packed) {
            expect_close(got, want, 1e-5f);
            continue;
          }
          // The int8 path computes exactly sum w * x', where x' is x rounded
          // to its group's int8 grid (step = max|x_group| / 127). Check that
          // against the reference run on x' computed here, and the distance
          // to the float result against its bound sum |w| * step / 2.
          std::vector<float> xr(x.size());
          for (int64_t t = 0; t < n; ++t)
            for (int64_t g = 0; g < cols / group; ++g) {
              const float* xg = &x[t * cols + g * group];
              float amax = 0;
              for (int c = 0; c < group; ++c) amax = std::max(amax, std::fabs(xg[c]));
              const float inv = amax > 0 ? 127.0f / amax : 0.0f, step = amax / 127.0f;
              for (int c = 0; c < group; ++c)
                xr[t * cols + g * group + c] = step * std::nearbyint(xg[c] * inv);
            }
          std::vector<float> on_grid(size_t(n * rows));
          reference::matmul(w.m, xr.data(), n, on_grid.data());
          expect_close(got, on_grid, 2e-5f);
          std::vector<float> row(static_cast<size_t>(cols));
          for (int64_t r = 0; r < rows; ++r) {
            dequantize_row(w.m, r, row.data());
            for (int64_t t = 0; t < n; ++t) {
              double bound = 0;
              for (int64_t c = 0; c < cols; ++c)
                bound += std::fabs(row[c]) * std::fabs(xr[t * cols + c] - x[t * cols + c]);
              ASSERT_NEAR(got[t * rows + r], want[t * rows + r], bound * 1.001 + 1e-4)
                  << "row " << r;
            }
          }
        }
}

// Activations that are integer multiples of 0.01 with +-1.27 in every group
// quantize to int8 without loss, so the int8 path must match to float
// rounding: this pins down the code layout and the scale bookkeeping.
TEST(Ops, QuantizedMatmulIsExactOnRepresentableActivations) {
  ThreadPool pool(2);
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t n : {3, 21}) {  // 21: the AMX path, where the CPU has it
        const int64_t rows = 19, cols = group * 2;
        QuantMatrix w(bits, group, rows, cols, uint64_t(bits + group));
        w.m.packed = int8_pack(w.m, pool);
        if (expect_int8_kernel()) {
          ASSERT_TRUE(w.m.packed) << "the int8 kernel should be used here";
        }
        std::mt19937_64 rng(3);
        std::vector<float> x(size_t(n * cols));
        for (size_t i = 0; i < x.size(); ++i)
          x[i] = i % group == 5 ? 1.27f : float(int(rng() % 255) - 127) * 0.01f;
        std::vector<float> got(size_t(n * rows)), want(size_t(n * rows));
        matmul(pool, w.m, x.data(), n, got.data());
        reference::matmul(w.m, x.data(), n, want.data());
        SCOPED_TRACE("bits " + std::to_string(bits) + " group " + std::to_string(group) +
                     " tokens " + std::to_string(n));
        expect_close(got, want, 2e-5f);
      }
}

// HEARTH_SIMD picks the int8 kernels the tests registered with it mean to run.
// HEARTH_EXPECT_INT8_TARGET (set by scripts/check_arm_build.sh for each
// emulated CPU model) names the kernels the run-time detection must pick.
TEST(Ops, Int8KernelsFollowTheSimdSwitch) {
  const std::string cap = cpu_features().cap, target = int8_target();
  std::printf("cpu features: %s; int8 kernels: %s\n", cpu_features().summary().c_str(),
              target.c_str());
  if (const char* want = std::getenv("HEARTH_EXPECT_INT8_TARGET")) {
    EXPECT_EQ(target, want);
  }
  if (cap.empty() && cpu_features().asimd && expect_int8_kernel()) {
    EXPECT_EQ(target, cpu_features().dotprod ? "neon+dotprod" : "neon");
  }
  if (cap == "neon-nodot" && cpu_features().asimd) {
    EXPECT_FALSE(cpu_features().dotprod);
    EXPECT_EQ(target, "neon");
  }
  if (cap == "avx2" && cpu_features().avx2) {
    EXPECT_EQ(target, cpu_features().avxvnni ? "avx2+avxvnni" : "avx2");
  }
  if (cap == "avx2-novnni" && cpu_features().avx2) {
    EXPECT_EQ(target, "avx2");
  }
  if (cap == "scalar") {
    EXPECT_EQ(target, "none");
  }
  if (!expect_int8_kernel()) {
    EXPECT_EQ(target, "none");
  }
}

// Each code width streams its layout: 2-4 bits the 4-bit one; 5 and 6 bits
// 6 bits a weight, except with AMX (the 8-bit one); 8 bits the 8-bit one
// (the sums are checked by the tests above).
TEST(Ops, Int8LayoutWidthFollowsTheKernels) {
  ThreadPool pool(1);
  const bool six = !amx_int8_available();
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    QuantMatrix w(bits, 64, 16, 128, uint64_t(bits));
    const auto packed = int8_pack(w.m, pool);
    if (!expect_int8_kernel()) {
      EXPECT_FALSE(packed);
      continue;
    }
    ASSERT_TRUE(packed);
    const int want = bits <= 4 ? 4 : bits <= 6 && six ? 6 : 8;
    EXPECT_EQ(packed->bits, want) << bits << "-bit codes";
    // One tile, two groups: the codes, then 16 scales and 16 biases each.
    EXPECT_EQ(packed->bytes(), 2 * (64 * 16 * size_t(want) / 8 + 2 * 16 * dtype_size(w.m.scale_dtype)));
  }
}

// HEARTH_SIMD picks the BF16 kernel too: below AVX-512 BF16, the widening one.
TEST(Ops, Bf16KernelFollowsTheSimdSwitch) {
  const std::string cap = cpu_features().cap, target = bf16_target();
  if (!expect_bf16_kernel()) {
    EXPECT_EQ(target, "none");
  } else if (cap == "avx2" || cap == "avx2-novnni" || !cpu_features().avx512bf16) {
    EXPECT_EQ(target, "widen-f32");
  } else {
    EXPECT_EQ(target, "avx512-bf16");
  }
  if (cap == "scalar") {
    EXPECT_EQ(target, "none");
  }
}

// The packed kernels keep their scratch per calling thread: the engine and
// a transcription run matmuls at the same time, each on its own pool, with
// different shapes. Each thread's results equal the same calls made alone.
TEST(Ops, PackedMatmulsOnTwoThreadsAtOnceEqualEachAlone) {
  QuantMatrix q4(4, 64, 96, 512, 11), q8(8, 32, 80, 256, 12);
  DenseMatrix b1(DType::BF16, 64, 384, 13), b2(DType::BF16, 48, 130, 14);
  {
    ThreadPool pool(1);
    for (QuantMatrix* m : {&q4, &q8}) m->m.packed = int8_pack(m->m, pool);
    for (DenseMatrix* m : {&b1, &b2}) m->m.packed_bf16 = bf16_pack(m->m, pool);
  }
  struct Job {
    const Matrix* w[2];
    int64_t tokens;
    std::vector<float> x, alone[2];
  };
  Job jobs[2] = {{{&q4.m, &b1.m}, 7, {}, {}}, {{&q8.m, &b2.m}, 3, {}, {}}};
  auto run = [](ThreadPool& pool, const Job& job, int i) {
    std::vector<float> y(size_t(job.tokens * job.w[i]->rows));
    matmul(pool, *job.w[i], job.x.data(), job.tokens, y.data());
    return y;
  };
  for (Job& job : jobs) {
    job.x = randn(size_t(job.tokens * 512), uint64_t(job.tokens));
    ThreadPool pool(1);
    for (int i = 0; i < 2; ++i) job.alone[i] = run(pool, job, i);
  }
  std::atomic<int> mismatches{0}, ready{0};
  auto worker = [&](const Job& job) {
    ThreadPool pool(1);
    ++ready;
    while (ready.load() < 2) {
    }
    for (int round = 0; round < 2000; ++round)
      for (int i = 0; i < 2; ++i)
        if (run(pool, job, i) != job.alone[i]) ++mismatches;
  };
  std::thread a(worker, std::cref(jobs[0])), b(worker, std::cref(jobs[1]));
  a.join();
  b.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// Codes at their extremes (0 and 2^bits - 1) against activations at +-127
// steps: a u8 x s8 dot built from saturating int16 pairs (plain AVX2), or
// from int16 products and pair sums (NEON without dotprod), loses exactly
// these sums if it gets its ranges wrong, and 8-bit codes at 0 and 255 are
// the ends of the code - 128 offset both of those (and SDOT) use; 2, 3, 5 and
// 6 bits check that codes crossing bytes and words unpack whole. Odd row counts end in
// partial tiles and half tiles; 1-10 tokens take every token-block size.
TEST(Ops, QuantizedMatmulIsExactAtExtremeCodes) {
  ThreadPool pool(2);
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t rows : {7, 13, 17})
        for (int64_t n = 1; n <= 10; ++n) {
          const int64_t cols = group * 2;
          QuantMatrix w(bits, group, rows, cols, uint64_t(bits * 7 + group + rows));
          const uint32_t top = (1u << bits) - 1;
          std::mt19937_64 rng(uint64_t(rows * 31 + n));
          std::fill(w.words.begin(), w.words.end(), 0u);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              // Rows of all-top codes, all-zero codes, and a mix.
              const bool high = r % 3 == 0 || (r % 3 == 2 && rng() % 2);
              const int64_t bit = (r * cols + c) * bits;
              if (!high) continue;
              w.words[size_t(bit / 32)] |= top << (bit % 32);
              if (bit % 32 + bits > 32)  // 3, 5, 6 bits: the code goes on in the next word
                w.words[size_t(bit / 32 + 1)] |= top >> (32 - bit % 32);
            }
          w.m.packed = int8_pack(w.m, pool);
          if (expect_int8_kernel()) {
            ASSERT_TRUE(w.m.packed) << "the int8 kernel should be used here";
          }
          // Tokens of all +1.27, all -1.27, and random signs with some zeros:
          // every nonzero activation quantizes to +-127.
          std::vector<float> x(size_t(n * cols));
          for (int64_t t = 0; t < n; ++t)
            for (int64_t c = 0; c < cols; ++c) {
              const int kind = int(t % 3), r = int(rng() % 4);
              const float v = kind == 0   ? 1.27f
                              : kind == 1 ? -1.27f
                              : r == 0    ? 0.0f
                              : r % 2     ? 1.27f
                                          : -1.27f;
              x[size_t(t * cols + c)] = c % group == 0 ? (kind == 1 ? -1.27f : 1.27f) : v;
            }
          std::vector<float> got(size_t(n * rows)), want(size_t(n * rows));
          matmul(pool, w.m, x.data(), n, got.data());
          reference::matmul(w.m, x.data(), n, want.data());
          SCOPED_TRACE("bits " + std::to_string(bits) + " group " + std::to_string(group) +
                       " rows " + std::to_string(rows) + " tokens " + std::to_string(n));
          expect_close(got, want, 2e-5f);
        }
}

// Matrices packed as one stack give the concatenation of their outputs.
TEST(Ops, StackedPackingEqualsSeparateMatrices) {
  ThreadPool pool(2);
  const int64_t cols = 128, n = 3;
  auto x = randn(size_t(n * cols), 5);
  auto check = [&](const std::vector<const Matrix*>& parts, Matrix stacked) {
    int64_t rows = 0;
    for (auto* m : parts) rows += m->rows;
    stacked.rows = rows;
    stacked.cols = cols;
    std::vector<float> got(size_t(n * rows));
    matmul(pool, stacked, x.data(), n, got.data());
    int64_t r0 = 0;
    for (auto* m : parts) {
      std::vector<float> want(size_t(n * m->rows));
      matmul(pool, *m, x.data(), n, want.data());
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < m->rows; ++r)
          ASSERT_EQ(got[t * rows + r0 + r], want[t * m->rows + r]);
      r0 += m->rows;
    }
  };
  QuantMatrix a(4, 64, 20, cols, 1), b(4, 64, 7, cols, 2), c(4, 64, 33, cols, 3);
  std::vector<const Matrix*> q = {&a.m, &b.m, &c.m};
  for (QuantMatrix* m : {&a, &b, &c}) m->m.packed = int8_pack(m->m, pool);
  Matrix sq;
  sq.packed = int8_pack(q, pool);
  if (expect_int8_kernel()) {
    ASSERT_TRUE(sq.packed);
    check(q, sq);
  }
  QuantMatrix other(8, 64, 5, cols, 4);
  const Matrix* mixed[] = {&a.m, &other.m};
  EXPECT_FALSE(int8_pack(mixed, pool)) << "parts in different formats cannot share a pack";
  for (DType dtype : {DType::BF16, DType::F16}) {
    DenseMatrix d1(dtype, 9, cols, 5), d2(dtype, 17, cols, 6);
    for (DenseMatrix* m : {&d1, &d2}) m->m.packed_bf16 = bf16_pack(m->m, pool);
    std::vector<const Matrix*> d = {&d1.m, &d2.m};
    Matrix sd;
    sd.packed_bf16 = bf16_pack(d, pool);
    if (expect_bf16_kernel()) {
      ASSERT_TRUE(sd.packed_bf16);
      check(d, sd);
    }
  }
  DenseMatrix bf(DType::BF16, 9, cols, 7), f16(DType::F16, 9, cols, 8);
  const Matrix* mixed16[] = {&bf.m, &f16.m};
  EXPECT_FALSE(bf16_pack(mixed16, pool)) << "BF16 and F16 parts cannot share a pack";
}

TEST(Ops, DequantizeRowDecodesTheBitStream) {
  // 3-bit values straddle words: value 10 of a row lives in bits 30-31 of
  // word 0 and bit 0 of word 1 (mlx's layout).
  QuantMatrix w(3, 32, 1, 32, 5);
  std::fill(w.words.begin(), w.words.end(), 0u);
  w.words[0] = 0b11u << 30;  // code 10 = 0b?11 -> low two bits 11
  w.words[1] = 0b1u;         // high bit 1 -> code 0b111 = 7
  EXPECT_EQ(quant_code(w.m, 0, 10), 7u);
  EXPECT_EQ(quant_code(w.m, 0, 9), 0u);
  EXPECT_EQ(quant_code(w.m, 0, 11), 0u);
}

TEST(Ops, NormsActivationsSoftmax) {
  for (int64_t n : {1, 7, 33, 100}) {
    auto x = randn(size_t(n), n), w = randn(size_t(n), n + 1), u = randn(size_t(n), n + 2);
    std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
    rmsnorm(x.data(), w.data(), n, 1e-5f, got.data());
    reference::rmsnorm(x.data(), w.data(), n, 1e-5f, want.data());
    expect_close(got, want, 1e-5f);
    silu_mul(x.data(), u.data(), n, got.data());
    reference::silu_mul(x.data(), u.data(), n, want.data());
    expect_close(got, want, 1e-5f);
    gelu_tanh_mul(x.data(), u.data(), n, got.data());
    reference::gelu_tanh_mul(x.data(), u.data(), n, want.data());
    expect_close(got, want, 1e-5f);
    got = x;
    want = x;
    softmax(got.data(), n);
    reference::softmax(want.data(), n);
    expect_close(got, want, 1e-6f);
  }
}

TEST(Ops, RopeMatchesReference) {
  for (int hd : {2, 8, 64, 128}) {
    std::vector<float> inv(hd / 2);
    for (int i = 0; i < hd / 2; ++i) inv[i] = float(1.0 / std::pow(10000.0, 2.0 * i / hd));
    for (float scaling : {1.0f, 1.25f}) {
      auto x = randn(size_t(3 * hd), hd);
      auto y = x;
      std::vector<float> rotation(hd);
      rope_rotation(1234, inv.data(), hd, scaling, rotation.data());
      rope(x.data(), 3, hd, rotation.data());
      reference::rope(y.data(), 3, hd, 1234, inv.data(), scaling);
      expect_close(x, y, 1e-6f);
    }
  }
}

TEST(Ops, AttentionOverBlocksMatchesReference) {
  for (DType t : {DType::F32, DType::BF16, DType::I8})
    for (int64_t n_ctx : {1, 7, 33, 70})
      for (auto [bt, hd] :
           {std::pair{16, 8}, std::pair{32, 64}, std::pair{8, 6}, std::pair{32, 128}}) {
        const int kv_heads = 2;
        int64_t n_blocks = (n_ctx + bt - 1) / bt;
        std::vector<std::vector<uint8_t>> kb, vb;
        std::vector<const void*> kp, vp;
        for (int64_t b = 0; b < n_blocks; ++b) {
          auto k = randn(size_t(kv_heads * bt * hd), 100 + b),
               v = randn(size_t(kv_heads * bt * hd), 200 + b);
          auto pack = [&](const std::vector<float>& f) {
            if (t == DType::I8) {
              // Codes, then a positive scale per group (ops.h KvView): any
              // values do, the kernel and the reference read the same.
              const size_t n_scales = f.size() / size_t(simd::kv_scale_group(hd));
              std::vector<uint8_t> out(f.size() + n_scales * sizeof(float));
              for (size_t i = 0; i < f.size(); ++i)
                out[i] = uint8_t(int8_t(std::clamp(std::lround(f[i] * 50), -127L, 127L)));
              const auto s = randn(n_scales, 300 + b);
              for (size_t i = 0; i < n_scales; ++i) {
                const float scale = 0.02f * (0.5f + std::fabs(s[i]));
                std::memcpy(out.data() + f.size() + i * sizeof(float), &scale, sizeof scale);
              }
              return out;
            }
            std::vector<uint8_t> out(f.size() * dtype_size(t));
            for (size_t i = 0; i < f.size(); ++i)
              if (t == DType::F32)
                reinterpret_cast<float*>(out.data())[i] = f[i];
              else
                reinterpret_cast<uint16_t*>(out.data())[i] = f32_to_bf16(f[i]);
            return out;
          };
          kb.push_back(pack(k));
          vb.push_back(pack(v));
        }
        // Scatter the blocks: a block table need not be in memory order.
        for (int64_t b = n_blocks - 1; b >= 0; --b) {
          kp.insert(kp.begin(), kb[b].data());
          vp.insert(vp.begin(), vb[b].data());
        }
        KvView view{kp.data(), vp.data(), bt, kv_heads, hd, t};
        // Rows sharing the kv head: 10 is more than one pass. Each row has
        // its own range, as consecutive tokens of a prefill do (row r ends
        // r % 3 positions earlier), over the full context or a window.
        for (int n_rows : {1, 3, 10})
          for (int64_t window : {n_ctx, (n_ctx + 1) / 2, int64_t(1)}) {
            auto q = randn(size_t(n_rows * hd), 9 + n_rows);
            std::vector<float> got(size_t(n_rows * hd)), want(size_t(n_rows * hd)),
                scratch(size_t(n_rows * n_blocks * bt));
            std::vector<AttentionRow> rows;
            for (int r = 0; r < n_rows; ++r) {
              const int64_t end = std::max<int64_t>(1, n_ctx - r % 3);
              rows.push_back({&q[r * hd], &got[r * hd], std::max<int64_t>(0, end - window), end});
            }
            attend(rows, view, 1, 0.35f, scratch.data());
            for (int r = 0; r < n_rows; ++r)
              reference::attend(&q[r * hd], view, 1, rows[r].first, rows[r].n_ctx, 0.35f,
                                &want[r * hd]);
            expect_close(got, want, 1e-5f);
          }
      }
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

#if defined(__linux__)
// The VmFlags line of the mapping holding `at`, from /proc/self/smaps (a range
// line "start-end perms ...", then its fields); empty where none holds it.
std::string mapping_flags(uintptr_t at) {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return {};
  char line[512];
  bool inside = false;
  std::string flags;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx ", &start, &end) == 2) {
      inside = start <= at && at < end;
    } else if (inside && std::strncmp(line, "VmFlags:", 8) == 0) {
      flags = line;
      break;
    }
  }
  std::fclose(f);
  return flags;
}

// Packed weights live in huge-page storage (decode's TLB misses on 4 KB pages
// cost a VM several times its memory rate): a large buffer starts on a 2 MB
// boundary and its mapping carries the kernel's huge-page request ("hg").
TEST(Storage, LargeBuffersStartOnHugePagesAndAskForThem) {
  const size_t huge = kHugePageBytes;
  AlignedBytes large = aligned_bytes(3 * huge + 100);
  const auto at = reinterpret_cast<uintptr_t>(large.get());
  EXPECT_EQ(at % huge, 0u);
  EXPECT_TRUE(std::all_of(large.get(), large.get() + 3 * huge + 100, [](uint8_t b) { return b == 0; }));
  AlignedBytes small = aligned_bytes(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.get()) % 64, 0u);

  // Where the platform ignores the request (no THP in the kernel, or
  // qemu-user, which drops most madvise advice), a mapping of our own that
  // asks directly carries no "hg" either: nothing to check there.
  void* probe = ::mmap(nullptr, huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  ::madvise(probe, huge, MADV_HUGEPAGE);
  const bool honoured = mapping_flags(reinterpret_cast<uintptr_t>(probe)).find(" hg") != std::string::npos;
  ::munmap(probe, huge);
  if (!honoured) GTEST_SKIP() << "this platform ignores MADV_HUGEPAGE";
  const std::string flags = mapping_flags(at);
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}
#endif

// The scalar half-precision conversions against the compiler's own _Float16
// where it has one (x86 with GCC, or clang from 15), over every half value
// and many floats.
#if defined(__x86_64__) && defined(__FLT16_MAX__)
TEST(DType, HalfConversionsMatchTheHardware) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = float(std::bit_cast<_Float16>(uint16_t(h)));
    const float got = f16_to_f32(uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << h;
    }
  }
  std::mt19937 rng(1);
  for (int i = 0; i < 2000000; ++i) {
    // Random bit patterns cover normals, subnormals, ties and overflow alike.
    const float f = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f, 6.1e-5f})
    ASSERT_EQ(f32_to_f16(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
}
#endif

}  // namespace
}  // namespace hearth
