#include "cache/kv_record.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

namespace hearth::cache::kv_record {

static_assert(std::endian::native == std::endian::little,
              "records are written in host order, assumed little-endian");

namespace {

constexpr char kMagic[8] = {'H', 'E', 'A', 'R', 'T', 'H', 'K', 'V'};
constexpr uint32_t kVersion = 1;

// Followed by token_count int32 ids, then payload_bytes bytes.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t token_count;
  uint64_t ns_lo, ns_hi;
  uint64_t hash_lo, hash_hi;
  uint64_t parent_lo, parent_hi;
  uint64_t payload_bytes;
  uint64_t payload_xxh3;
  uint64_t header_xxh3;  // of every field above
};
static_assert(sizeof(Header) == 88);

uint64_t header_checksum(const Header& h) { return XXH3_64bits(&h, offsetof(Header, header_xxh3)); }

// Whether a header is intact and describes a record of this namespace and sizes.
bool fits(const Header& h, const Shape& s) {
  return std::memcmp(h.magic, kMagic, 8) == 0 && h.version == kVersion &&
         h.header_xxh3 == header_checksum(h) && BlockHash{h.ns_lo, h.ns_hi} == s.ns &&
         h.token_count == uint32_t(s.block_tokens) && h.payload_bytes == s.block_bytes;
}

bool read_exact(int fd, void* buf, size_t n, uint64_t offset) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, n -= size_t(got), offset += uint64_t(got);
  }
  return true;
}

bool write_all(int fd, const void* buf, size_t n) {
  auto* p = static_cast<const uint8_t*>(buf);
  while (n > 0) {
    ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      if (put == 0) errno = ENOSPC;  // no progress and no error: as good as a full disk
      return false;
    }
    p += put, n -= size_t(put);
  }
  return true;
}

}  // namespace

uint64_t Shape::file_bytes() const {
  return sizeof(Header) + uint64_t(block_tokens) * sizeof(int32_t) + block_bytes;
}

std::optional<Link> read_header(int fd, const Shape& shape) {
  Header h{};
  if (!read_exact(fd, &h, sizeof h, 0) || !fits(h, shape)) return std::nullopt;
  return Link{{h.hash_lo, h.hash_hi}, {h.parent_lo, h.parent_hi}};
}

bool read(int fd, const Shape& shape, const Link& link, std::span<const int32_t> tokens,
          std::span<uint8_t> dst) {
  Header h{};
  std::vector<int32_t> stored(tokens.size());
  const uint64_t tokens_bytes = stored.size() * sizeof(int32_t);
  return read_exact(fd, &h, sizeof h, 0) && fits(h, shape) && BlockHash{h.hash_lo, h.hash_hi} == link.hash &&
         BlockHash{h.parent_lo, h.parent_hi} == link.parent &&
         read_exact(fd, stored.data(), tokens_bytes, sizeof h) &&
         std::equal(stored.begin(), stored.end(), tokens.begin()) &&
         read_exact(fd, dst.data(), dst.size(), sizeof h + tokens_bytes) &&
         XXH3_64bits(dst.data(), dst.size()) == h.payload_xxh3;
}

bool write(int fd, const Shape& shape, const Link& link, std::span<const int32_t> tokens,
           std::span<const uint8_t> payload) {
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.token_count = uint32_t(tokens.size());
  h.ns_lo = shape.ns.lo, h.ns_hi = shape.ns.hi;
  h.hash_lo = link.hash.lo, h.hash_hi = link.hash.hi;
  h.parent_lo = link.parent.lo, h.parent_hi = link.parent.hi;
  h.payload_bytes = payload.size();
  h.payload_xxh3 = XXH3_64bits(payload.data(), payload.size());
  h.header_xxh3 = header_checksum(h);
  return write_all(fd, &h, sizeof h) && write_all(fd, tokens.data(), tokens.size() * sizeof(int32_t)) &&
         write_all(fd, payload.data(), payload.size());
}

}  // namespace hearth::cache::kv_record
