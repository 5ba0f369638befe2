// The Highway targets hearth's kernels compile for, included by every
// foreach_target source (simd.cpp, simd_sampling.cpp, bf16_matmul_hwy.cpp) before
// foreach_target.h. SVE vectors are sizeless types, which cannot form the
// register tiles (arrays of vectors) the kernels use; on Arm, NEON is the
// target.
#pragma once

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
