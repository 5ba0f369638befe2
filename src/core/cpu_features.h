// What the CPU we run on can do, read once at start-up, less what the
// HEARTH_SIMD switch takes away: every kernel dispatches on these effective
// features, so one setting moves them all to the same target.
//
// HEARTH_SIMD=avx2         no AVX-512 (nor AMX): the AVX2 kernels, with AVX-VNNI
//                          where the CPU has it
// HEARTH_SIMD=avx2-novnni  the same without AVX-VNNI (its plain-AVX2 emulation)
// HEARTH_SIMD=scalar       no AVX either (on Arm: no NEON int8 kernel): the
//                          portable paths
// HEARTH_SIMD=neon-nodot   64-bit Arm: no dot-product extension (the NEON
//                          int8 kernel's plain-ARMv8 emulation of SDOT)
// Unset (or "native"): everything the CPU has. A value meant for the other
// architecture (avx2 on Arm, neon-nodot on x86) is ignored with a warning.
#pragma once

#include <string>

namespace hearth {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, avxvnni = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false, avx512bf16 = false;
  bool asimd = false, dotprod = false;  // 64-bit Arm: NEON, and its SDOT/UDOT (ARMv8.2 dotprod)
  std::string cap;              // the HEARTH_SIMD value applied, empty if none
  std::string summary() const;  // e.g. "avx2 fma avx512f avx512vnni"
};

const CpuFeatures& cpu_features();

}  // namespace hearth
