// A fresh directory of one test's own under gtest's temporary folder
// (TEST_TMPDIR when set), removed with its contents when it goes: tests
// running at once, or two builds' suites side by side, never share a path,
// and nothing is left behind.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hearth {

class TempDir {
 public:
  TempDir() {
    std::string name = (std::filesystem::path(::testing::TempDir()) / "hearth-XXXXXX").string();
    if (!::mkdtemp(name.data())) throw std::runtime_error("mkdtemp failed for " + name);
    path_ = name;
  }
  ~TempDir() {
    std::error_code ignored;  // (a test may have made a part of it unreadable)
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  operator const std::filesystem::path&() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  // A file in it holding `bytes`; its path.
  std::filesystem::path write(std::string_view name, std::string_view bytes) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace hearth
