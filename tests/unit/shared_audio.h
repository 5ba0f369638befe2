// Where the unit tests find the shared audio test data (../shared/audio):
// beside the checkout, or inside it (shared/audio) on machines that copy it
// in. Empty when absent; the tests that need a file skip then.
#pragma once

#include <filesystem>
#include <string>

inline std::filesystem::path shared_audio(const char* name) {
  for (const char* dir : {"/../shared/audio/", "/shared/audio/"}) {
    const std::filesystem::path p = std::string(HEARTH_SOURCE_DIR) + dir + name;
    if (std::filesystem::exists(p)) return p;
  }
  return {};
}
