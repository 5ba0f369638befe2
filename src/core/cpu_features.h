// What the CPU we run on can do, read once at start-up.
#pragma once

#include <string>

namespace hearth {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false, avx512bf16 = false;
  std::string summary() const;  // e.g. "avx2 fma avx512f avx512vnni"
};

const CpuFeatures& cpu_features();

}  // namespace hearth
