// One KV block's record on disk, as the SSD tier stores it: an 88-byte
// header (magic, version, namespace, the block's hash and its parent's,
// sizes, XXH3 checksums of the payload and of the header), the block's token
// ids (int32), then the payload (the block's KV bytes). Host order,
// little-endian. Everything needed to check a record is in it: a header
// that does not fit the store's namespace and sizes, tokens other than the
// ones asked for, or a payload whose checksum differs, and the record is
// not used.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "cache/block_hash.h"

namespace hearth::cache::kv_record {

inline constexpr const char* kSuffix = ".kvb";           // <hash hex>.kvb
inline constexpr const char* kTempSuffix = ".kvb.tmp";  // being written

// What every record of one store has in common.
struct Shape {
  BlockHash ns;              // namespace (model identity + KV format)
  int block_tokens = 0;      // token ids per record
  uint64_t block_bytes = 0;  // payload bytes per record
  uint64_t file_bytes() const;  // of a whole record
};

struct Link {
  BlockHash hash, parent;
};

// The record's hash and parent, from its header alone, if the header is
// intact and fits `shape` (the payload is not read: a start stays fast).
std::optional<Link> read_header(int fd, const Shape& shape);

// Reads the whole record into `dst` (block_bytes) if it is `link`'s, holds
// `tokens`, and its payload's checksum matches.
bool read(int fd, const Shape& shape, const Link& link, std::span<const int32_t> tokens,
          std::span<uint8_t> dst);

// Writes the record to `fd` (from its start). false with errno set if a
// write fails.
bool write(int fd, const Shape& shape, const Link& link, std::span<const int32_t> tokens,
           std::span<const uint8_t> payload);

}  // namespace hearth::cache::kv_record
