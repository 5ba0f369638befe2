#include "server/random_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>

namespace hearth::server {

namespace {

// From the kernel's CSPRNG: a stored response's id is all that grants
// access to it, so the next one must not be predictable from the last.
void random_bytes(uint8_t* out, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t k = ::getrandom(out + got, n - got, 0);
    if (k < 0 && errno != EINTR) throw std::runtime_error("getrandom failed");
    if (k > 0) got += size_t(k);
  }
}

}  // namespace

std::string random_id(const char* prefix) {
  uint8_t bytes[16];
  random_bytes(bytes, sizeof bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = prefix;
  for (uint8_t b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

std::string random_alnum(size_t n) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id(n, '\0');
  random_bytes(reinterpret_cast<uint8_t*>(id.data()), n);
  for (char& c : id) c = kAlnum[uint8_t(c) % 62];
  return id;
}

}  // namespace hearth::server
