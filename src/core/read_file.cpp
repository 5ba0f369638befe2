#include "core/read_file.h"

#include <fstream>
#include <stdexcept>

namespace hearth {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path.string());
  f.seekg(0, std::ios::end);
  const auto size = f.tellg();
  if (size < 0) throw std::runtime_error("cannot read " + path.string());
  std::string s(static_cast<size_t>(size), '\0');
  f.seekg(0);
  f.read(s.data(), static_cast<std::streamsize>(s.size()));
  if (!f) throw std::runtime_error("cannot read " + path.string() + " (read failed)");
  return s;
}

}  // namespace hearth
