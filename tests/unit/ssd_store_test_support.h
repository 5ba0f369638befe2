// What the SSD block store's tests share (cache_ssd_store_test.cpp,
// cache_ssd_store_failures_test.cpp): blocks whose payloads are a function
// of their hash, so any read can be checked, and a store in a fresh folder.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cache/block_hash.h"
#include "cache/ssd_store.h"
#include "temp_dir.h"

namespace ssd_test {

namespace fs = std::filesystem;
using hearth::cache::BlockHash;
using hearth::cache::chain_hash;
using hearth::cache::root_hash;
using hearth::cache::SsdStore;
using hearth::cache::SsdStoreOptions;
using hearth::TempDir;

constexpr int kTokens = 4;
constexpr size_t kBytes = 1000;  // deliberately not a multiple of anything
constexpr uint64_t kHeaderBytes = 88;
constexpr uint64_t kRecordBytes = kHeaderBytes + kTokens * 4 + kBytes;

struct Block {
  BlockHash hash, parent;
  std::vector<int32_t> tokens;
};

inline std::vector<uint8_t> payload_for(const BlockHash& h, size_t n) {
  std::vector<uint8_t> p(n);
  uint64_t x = h.lo ^ (h.hi * 0x9E3779B97F4A7C15ull);
  for (size_t i = 0; i < n; ++i) {  // splitmix64, one byte per step
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    p[i] = uint8_t(z ^ (z >> 31));
  }
  return p;
}

// n blocks chained from `root`; `seed` makes different chains have different tokens.
inline std::vector<Block> make_chain(const BlockHash& root, int n, int seed = 0,
                                     int tokens_per_block = kTokens) {
  std::vector<Block> chain;
  BlockHash parent = root;
  for (int i = 0; i < n; ++i) {
    Block b;
    for (int t = 0; t < tokens_per_block; ++t)
      b.tokens.push_back(seed * 100000 + i * tokens_per_block + t);
    b.parent = parent;
    b.hash = chain_hash(parent, b.tokens);
    parent = b.hash;
    chain.push_back(b);
  }
  return chain;
}

// n blocks of chains of their own: records no other record continues.
inline std::vector<Block> separate_blocks(const BlockHash& root, int n) {
  std::vector<Block> blocks;
  for (int i = 0; i < n; ++i) blocks.push_back(make_chain(root, 1, 1000 + i)[0]);
  return blocks;
}

inline std::vector<BlockHash> hashes(const std::vector<Block>& chain) {
  std::vector<BlockHash> h;
  for (const Block& b : chain) h.push_back(b.hash);
  return h;
}

inline void put(SsdStore& s, const Block& b, size_t bytes = kBytes) {
  s.put(b.hash, b.parent, b.tokens, payload_for(b.hash, bytes));
}

// Reads the block and checks the payload is exactly what was put.
inline bool read_ok(SsdStore& s, const Block& b, size_t bytes = kBytes) {
  std::vector<uint8_t> dst(bytes);
  return s.read(b.hash, b.parent, b.tokens, dst) && dst == payload_for(b.hash, bytes);
}

inline std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Runs f() while writing a record fails: RLIMIT_FSIZE makes writes past
// half a record fail with EFBIG, like a full disk (chmod would not stop root).
template <typename F>
auto with_record_writes_failing(F f) {
  rlimit old{};
  EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = kRecordBytes / 2;
  EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto result = f();
  EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  ::signal(SIGXFSZ, old_handler);
  return result;
}

inline void flip_byte(const fs::path& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(offset));
  char c = 0;
  f.get(c);
  f.seekp(std::streamoff(offset));
  f.put(char(c ^ 0x5a));
}

class SsdStoreTest : public ::testing::Test {
 protected:

  SsdStoreOptions options(uint64_t max_bytes = 0) const {
    SsdStoreOptions o;
    o.dir = root_;
    o.max_bytes = max_bytes;
    o.ns = ns_;
    o.block_bytes = kBytes;
    o.block_tokens = kTokens;
    return o;
  }
  fs::path ns_dir() const { return root_ / ns_.hex(); }

  const TempDir dir_;
  const fs::path root_ = dir_.path();
  BlockHash ns_ = root_hash("llama-test|bf16|block4");
  BlockHash chain_root_ = root_hash("chain root");
};

}  // namespace ssd_test
