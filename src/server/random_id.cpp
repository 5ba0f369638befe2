#include "server/random_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>

namespace hearth::server {

std::string random_id(const char* prefix) {
  // From the kernel's CSPRNG: a stored response's id is all that grants
  // access to it, so the next one must not be predictable from the last.
  uint8_t bytes[16];
  for (size_t got = 0; got < sizeof bytes;) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno != EINTR) throw std::runtime_error("getrandom failed");
    if (n > 0) got += size_t(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = prefix;
  for (uint8_t b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

}  // namespace hearth::server
