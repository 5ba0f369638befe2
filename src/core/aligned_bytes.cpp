#include "core/aligned_bytes.h"

#include <fstream>

namespace hearth {

std::string transparent_huge_pages(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return "none";
  const size_t open = line.find('['), close = line.find(']', open);
  return open != std::string::npos && close != std::string::npos ? line.substr(open + 1, close - open - 1)
                                                                 : "none";
}

}  // namespace hearth
