// An SSD prompt-cache record file from fuzzed bytes, found on disk at start
// as a restart finds one: SsdStore scans it (header checks), then the
// engine asks for the block it is named after. The bytes may be anything a
// crash, a full disk, another program or another hearth version left there.
// A read succeeds only with the payload that was written for that block
// (a miss, never a wrong answer), and nothing else fails: no exception, no
// out-of-bounds read of a short or oversized file.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "cache/block_hash.h"
#include "cache/ssd_store.h"
#include "fuzz_support.h"

using namespace hearth;
namespace fs = std::filesystem;

namespace {

constexpr int kTokens = 4;
constexpr size_t kPayload = 64;

struct Block {
  cache::BlockHash ns = cache::root_hash("fuzz namespace");
  cache::BlockHash parent = cache::root_hash("fuzz parent");
  std::vector<int32_t> tokens = {11, 22, 33, 44};
  cache::BlockHash hash = cache::chain_hash(parent, tokens);
  std::vector<uint8_t> payload = std::vector<uint8_t>(kPayload);
  Block() {
    for (size_t i = 0; i < kPayload; ++i) payload[i] = uint8_t(i * 7 + 3);
  }
};

cache::SsdStoreOptions options(const fs::path& dir, const Block& b) {
  cache::SsdStoreOptions o;
  o.dir = dir;
  o.ns = b.ns;
  o.block_bytes = kPayload;
  o.block_tokens = kTokens;
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Block b;
  static const fs::path dir = fuzz::scratch_dir() / "ssd";
  static const fs::path record = [] {  // where the block's record lives
    fs::remove_all(dir);
    cache::SsdStore store(options(dir, b));
    return store.record_path(b.hash);
  }();
  fs::create_directories(record.parent_path());
  fuzz::write_file(record, std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    cache::SsdStore store(options(dir, b));
    std::vector<uint8_t> dst(kPayload);
    if (store.read(b.hash, b.parent, b.tokens, dst))
      HEARTH_FUZZ_CHECK(dst == b.payload);
    else
      HEARTH_FUZZ_CHECK(!fs::exists(record));  // a bad record is removed
  } catch (const std::exception& e) {
    fuzz::unexpected("SsdStore", e.what());
  }
  return 0;
}
