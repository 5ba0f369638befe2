#include "core/aligned_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace hearth {
namespace {

TEST(AlignedBytes, IsZeroedAndAlignedForItsSize) {
  for (size_t n : {size_t(1), size_t(100), kHugePageBytes + 1}) {
    const AlignedBytes b = aligned_bytes(n);
    const auto at = reinterpret_cast<uintptr_t>(b.get());
    EXPECT_EQ(at % (n >= kHugePageBytes ? kHugePageBytes : 64), 0u) << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(b.get()[i], 0) << n << " at " << i;
  }
}

// The settings file as each kernel setting writes it, and without it.
TEST(AlignedBytes, ReadsTheBracketedHugePageSetting) {
  const std::string path = ::testing::TempDir() + "hearth_thp_enabled";
  auto read = [&](const char* content) {
    std::ofstream(path) << content;
    return transparent_huge_pages(path.c_str());
  };
  EXPECT_EQ(read("always [madvise] never\n"), "madvise");
  EXPECT_EQ(read("[always] madvise never\n"), "always");
  EXPECT_EQ(read("always madvise [never]\n"), "never");
  EXPECT_EQ(read("always madvise never\n"), "none");
  EXPECT_EQ(read("]never[\n"), "none");
  std::remove(path.c_str());
  EXPECT_EQ(transparent_huge_pages(path.c_str()), "none");
}

}  // namespace
}  // namespace hearth
