#include "core/cpu_features.h"

#include <hwy/targets.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
// Linux's AT_HWCAP bits (asm/hwcap.h), for C libraries that lack them.
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

#include <cstdio>
#include <cstdlib>

namespace hearth {

namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  // F16C and AVX-VNNI straight from CPUID: clang (14 at least) has no
  // __builtin_cpu_supports names for them. Both use the AVX (YMM) state, which
  // the OS has enabled where the builtin reports AVX2.
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) f.f16c = f.avx2 && (c & bit_F16C);
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avxvnni = f.avx2 && (a & bit_AVXVNNI);  // CPUID.(7,1):EAX
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#if defined(HEARTH_EMULATE_AVX512)
  // The hand-written AVX-512 kernels run under SIMDe here (core/avx512.h),
  // whatever the CPU has.
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512bf16 = true;
#endif
#elif defined(__aarch64__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  f.asimd = hwcap & HWCAP_ASIMD;
  f.dotprod = f.asimd && (hwcap & HWCAP_ASIMDDP);
#endif
  return f;
}

// Clears what HEARTH_SIMD takes away, and the Highway targets above it.
void apply_cap(CpuFeatures& f, const std::string& cap) {
  const bool scalar = cap == "scalar";
#if defined(__x86_64__)
  const bool avx2 = cap == "avx2", novnni = cap == "avx2-novnni";
  if (!avx2 && !novnni && !scalar) {
    if (cap != "native")
      std::fprintf(stderr, "hearth: HEARTH_SIMD=%s is not avx2, avx2-novnni or scalar; ignored\n",
                   cap.c_str());
    return;
  }
  f.cap = cap;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512bf16 = false;
  if (novnni || scalar) f.avxvnni = false;
  if (scalar) f.avx2 = f.fma = f.f16c = false;
  // Highway keeps its baseline target whatever is disabled.
  hwy::DisableTargets(HWY_AVX3 | HWY_AVX3_DL | (scalar ? HWY_AVX2 | HWY_SSE4 | HWY_SSSE3 : 0));
#elif defined(__aarch64__)
  const bool nodot = cap == "neon-nodot";
  if (!nodot && !scalar) {
    if (cap != "native")
      std::fprintf(stderr, "hearth: HEARTH_SIMD=%s is not neon-nodot or scalar; ignored\n",
                   cap.c_str());
    return;
  }
  f.cap = cap;
  f.dotprod = false;
  if (scalar) f.asimd = false;
  // Highway's code (simd.cpp) is compiled for NEON only, its baseline here:
  // there is no Highway target to take away.
#else
  if (!scalar) {
    if (cap != "native")
      std::fprintf(stderr, "hearth: HEARTH_SIMD=%s is not scalar; ignored\n", cap.c_str());
    return;
  }
  f.cap = cap;
#endif
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f = detect();
    if (const char* cap = std::getenv("HEARTH_SIMD"); cap && *cap) apply_cap(f, cap);
    return f;
  }();
  return features;
}

// Read at start-up, so Highway's dispatch sees the cap before any kernel runs.
[[maybe_unused]] static const CpuFeatures& features_at_start = cpu_features();

std::string CpuFeatures::summary() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avxvnni, "avxvnni");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(asimd, "asimd");
  add(dotprod, "dotprod");
  if (s.empty()) s = "baseline";
  return cap.empty() ? s : s + " (HEARTH_SIMD=" + cap + ")";
}

}  // namespace hearth
