// What the libFuzzer harnesses share (docs/fuzzing.md): the source tree's
// files, a private scratch directory, and the rule for exceptions: the ones
// a parser documents are its answer to bad input; anything else escaping is
// a finding, reported by aborting so libFuzzer keeps the input.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace hearth::fuzz {

inline std::filesystem::path source_dir() { return HEARTH_SOURCE_DIR; }

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz harness: cannot read %s\n", path.c_str());
    std::abort();
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// A directory of this process's own under $TMPDIR, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/hearth-fuzz-XXXXXX";
    if (!::mkdtemp(templ.data())) {
      std::perror("fuzz harness: mkdtemp");
      std::abort();
    }
    static std::filesystem::path made = templ;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(made, ec);
    });
    return made;
  }();
  return dir;
}

// An exception the code under test does not document for bad input.
[[noreturn]] inline void unexpected(const char* where, const char* what) {
  std::fprintf(stderr, "fuzz harness: unexpected exception from %s: %s\n", where, what);
  std::abort();
}

[[noreturn]] inline void broken(const char* invariant) {
  std::fprintf(stderr, "fuzz harness: invariant broken: %s\n", invariant);
  std::abort();
}

#define HEARTH_FUZZ_CHECK(cond) \
  do {                          \
    if (!(cond)) ::hearth::fuzz::broken(#cond); \
  } while (0)

}  // namespace hearth::fuzz
