#include "core/aligned_bytes.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace hearth {
namespace {

// The settings file as each kernel setting writes it, and without it.
TEST(AlignedBytes, ReadsTheBracketedHugePageSetting) {
  const TempDir dir;
  const std::string path = dir / "enabled";
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
