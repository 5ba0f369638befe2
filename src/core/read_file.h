// A whole file's bytes, for the loaders and commands that parse them in
// memory (tokenizer files, chat templates, audio uploads given as paths).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace hearth {

// Throws std::runtime_error naming the path when it cannot be read.
std::string read_file(const std::filesystem::path& path);

inline std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace hearth
