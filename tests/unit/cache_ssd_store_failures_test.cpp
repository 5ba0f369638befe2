// The SSD block store when writes cannot all be done: a paused writer, a
// full write queue, failed writes and their children, and a full disk.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ssd_store_test_support.h"

namespace {

using namespace ssd_test;

TEST_F(SsdStoreTest, APausedWriterQueuesAndFlushWritesAnyway) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 3);
  s.set_paused(true);
  put(s, chain[0]);
  put(s, chain[1]);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto st = s.stats();
  EXPECT_EQ(st.pending_spills, 2);
  EXPECT_EQ(st.pending_spill_bytes, 2 * (kBytes + kTokens * 4));
  EXPECT_EQ(st.spills, 0);
  EXPECT_FALSE(s.contains(chain[0].hash));
  EXPECT_EQ(s.flush().written, 2);  // an explicit flush writes while paused
  put(s, chain[2]);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(s.contains(chain[2].hash)) << "still paused after the flush";
  s.set_paused(false);
  EXPECT_EQ(s.flush().written, 1);
  EXPECT_EQ(s.stats().pending_spills, 0);
  for (const Block& b : chain) EXPECT_TRUE(read_ok(s, b));
}

// A full queue drops the block being put: what waits is a chain's start,
// which restores, not its end, which could not without the start.
TEST_F(SsdStoreTest, AFullQueueDropsNewWritesSoAChainsStartIsKept) {
  constexpr size_t kBig = 1 << 16;
  constexpr int kPuts = 40;
  SsdStoreOptions o = options();
  o.block_bytes = kBig;
  o.queue_bytes = 3 * kBig;  // room for two blocks with their tokens, not three
  SsdStore s(o);
  s.set_paused(true);  // the writer takes nothing, so what is dropped is exact
  auto chain = make_chain(chain_root_, kPuts);
  for (const Block& b : chain) put(s, b, kBig);
  auto st = s.stats();
  EXPECT_EQ(st.dropped_spills, kPuts - 2);
  EXPECT_EQ(st.pending_spills, 2);
  EXPECT_LE(st.pending_spill_bytes, o.queue_bytes);
  EXPECT_FALSE(s.awaits_put_again(chain[1].hash));
  EXPECT_TRUE(s.awaits_put_again(chain[2].hash));  // dropped for room: worth putting again
  EXPECT_TRUE(s.awaits_put_again(chain[3].hash));  // dropped with its parent
  put(s, chain[0], kBig);                          // queued already: nothing to drop
  put(s, chain[5], kBig);                          // dropped again
  EXPECT_EQ(s.stats().dropped_spills, kPuts - 1);
  s.set_paused(false);
  auto f = s.flush();
  EXPECT_EQ(f.dropped, kPuts - 1);
  EXPECT_EQ(f.written, 2);
  EXPECT_EQ(f.failed, 0);
  st = s.stats();
  EXPECT_EQ(st.entries, 2);
  EXPECT_EQ(st.pending_spills, 0);
  EXPECT_EQ(st.pending_spill_bytes, 0u);
  EXPECT_TRUE(read_ok(s, chain[0], kBig));
  EXPECT_TRUE(read_ok(s, chain[1], kBig));
  EXPECT_FALSE(s.contains(chain[2].hash));
  std::vector<BlockHash> hashes;
  for (const Block& b : chain) hashes.push_back(b.hash);
  EXPECT_EQ(s.contains_prefix(hashes), 2u);
  // The queue has room again, but a dropped block's child is dropped too
  // (it could never be read back); put again, the block takes its
  // children with it.
  put(s, chain[3], kBig);
  EXPECT_EQ(s.flush().written, 0);
  put(s, chain[2], kBig);
  put(s, chain[3], kBig);
  EXPECT_EQ(s.flush().written, 2);
  EXPECT_EQ(s.contains_prefix(hashes), 4u);
}

// Under memory pressure the waiting writes are given up: counted as
// dropped, no longer pending, and a flush() does not wait for them.
TEST_F(SsdStoreTest, DroppingTheQueueGivesUpEveryWaitingWrite) {
  SsdStore s(options());
  s.set_paused(true);
  auto chain = make_chain(chain_root_, 3);
  for (const Block& b : chain) put(s, b);
  EXPECT_EQ(s.stats().pending_spills, 3);
  EXPECT_EQ(s.drop_queue(), 3 * (kTokens * 4 + kBytes));  // tokens and payload, no header
  EXPECT_EQ(s.stats().pending_spills, 0);
  EXPECT_EQ(s.stats().pending_spill_bytes, 0u);
  const auto f = s.flush();
  EXPECT_EQ(f.dropped, 3);
  EXPECT_EQ(f.written, 0);
  put(s, chain[0]);  // no longer pending: it can be put again
  EXPECT_EQ(s.flush().written, 1);
  EXPECT_TRUE(read_ok(s, chain[0]));
  EXPECT_FALSE(s.awaits_put_again(chain[1].hash)) << "given up for memory: not offered again";
}

TEST_F(SsdStoreTest, AFullQueueUnderARunningWriterStaysBounded) {
  constexpr size_t kBig = 1 << 20;
  constexpr int kPuts = 30;
  SsdStoreOptions o = options();
  o.block_bytes = kBig;
  o.queue_bytes = 3 * kBig;
  SsdStore s(o);
  auto chain = make_chain(chain_root_, kPuts);
  std::vector<std::vector<uint8_t>> payloads;
  for (const Block& b : chain) payloads.push_back(payload_for(b.hash, kBig));
  for (int i = 0; i < kPuts; ++i) {
    s.put(chain[i].hash, chain[i].parent, chain[i].tokens, payloads[i]);
    EXPECT_LE(s.stats().pending_spill_bytes,
              3 * (kBig + kTokens * 4));  // 2 queued + 1 being written
  }
  auto f = s.flush();  // how many were dropped depends on the disk's speed
  EXPECT_EQ(f.written + f.dropped, kPuts);
  EXPECT_EQ(s.stats().entries, f.written);
  // What was written is the chain's start, every record of it restorable.
  std::vector<BlockHash> hashes;
  for (const Block& b : chain) hashes.push_back(b.hash);
  EXPECT_EQ(s.contains_prefix(hashes), size_t(f.written));
  EXPECT_TRUE(read_ok(s, chain.front(), kBig));
}

TEST_F(SsdStoreTest, AFailedWriteIsCountedAndTheStoreKeepsWorking) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 2);
  auto f = with_record_writes_failing([&] {
    put(s, chain[0]);
    return s.flush();
  });

  EXPECT_EQ(f.failed, 1);
  EXPECT_EQ(f.written, 0);
  EXPECT_FALSE(s.contains(chain[0].hash));
  EXPECT_TRUE(files_in(ns_dir()).empty()) << "the temporary file must be removed";
  auto st = s.stats();
  EXPECT_EQ(st.failed_spills, 1);
  EXPECT_NE(st.last_error.find(".kvb.tmp"), std::string::npos) << st.last_error;
  // Its child alone would be an orphan on disk, so it is dropped; the failed
  // block is not offered to be put again (that would repeat the failure).
  EXPECT_FALSE(s.awaits_put_again(chain[0].hash));
  put(s, chain[1]);
  EXPECT_EQ(s.flush().written, 0);

  put(s, chain[0]);  // not stored or queued: it can be tried again, and its child follows
  put(s, chain[1]);
  f = s.flush();
  EXPECT_EQ(f.written, 2);
  EXPECT_EQ(f.failed, 0);
  EXPECT_TRUE(read_ok(s, chain[0]));
  EXPECT_TRUE(read_ok(s, chain[1]));
}

// Children queued before their parent's write failed are not written: they
// would be orphans on disk, never read back.
TEST_F(SsdStoreTest, ChildrenQueuedBeforeTheirParentFailedAreDropped) {
  SsdStore s(options());
  s.set_paused(true);
  auto chain = make_chain(chain_root_, 3);
  for (const Block& b : chain) put(s, b);
  const auto f = with_record_writes_failing([&] { return s.flush(); });
  EXPECT_EQ(f.failed, 1) << "only the first is tried";
  EXPECT_EQ(f.dropped, 2);
  EXPECT_EQ(f.written, 0);
  EXPECT_EQ(s.stats().pending_spills, 0);
  EXPECT_TRUE(files_in(ns_dir()).empty());
}

// A disk that fills up: a tmpfs of 32 pages in a mount namespace of the
// test's own, half of it taken by another file, under a cap far above it;
// records a page each, so the disk and the cap count alike. The write that
// finds the disk full brings the cap down to fit, and the writes after it
// go on, the least recently used records giving way; once the other file
// is gone, the cap goes back up and holds more. Run in a child process: the
// mount is its alone, and ends with it.
TEST_F(SsdStoreTest, AFullDiskBringsTheCapDownAndWritesGoOn) {
  constexpr int kSkip = 77;
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const std::string size = "size=" + std::to_string(32 * page);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("hearth-test", root_.c_str(), "tmpfs", 0, size.c_str()) != 0)
      ::_exit(kSkip);
    int failures = 0;
    auto check = [&](bool ok, const std::string& what) {
      if (!ok) std::fprintf(stderr, "failed: %s\n", what.c_str()), ++failures;
    };
    const fs::path other = root_ / "other-file";
    std::ofstream(other, std::ios::binary) << std::string(16 * page, 'x');
    SsdStoreOptions o = options(1ull << 30);
    o.block_bytes = page - kHeaderBytes - kTokens * 4;  // a record a page
    const uint64_t record = page;
    {
      SsdStore s(o);
      auto write = [&](const std::vector<Block>& blocks) {
        for (const Block& b : blocks) {
          put(s, b, o.block_bytes);
          s.flush();
        }
        for (size_t i = blocks.size() - 5; i < blocks.size(); ++i)
          check(s.contains(blocks[i].hash) && read_ok(s, blocks[i], o.block_bytes),
                "the newest blocks are on disk");
        check(!s.contains(blocks[0].hash), "the oldest gave way");
      };
      write(separate_blocks(chain_root_, 40));
      auto st = s.stats();
      check(st.cap_lowerings == 1, "the cap came down once");
      check(st.max_bytes < 16 * record, "to what the disk holds");
      check(st.failed_spills == 1, "one write failed, not every one after it");
      check(st.last_error.find("No space left") != std::string::npos,
            "the error names the full disk");
      const int64_t held_on_full_disk = st.entries;

      fs::remove(other);
      write(separate_blocks(root_hash("after"), 40));
      st = s.stats();
      check(st.entries > held_on_full_disk + 8,
            "the cap went back up: " + std::to_string(st.entries) + " records held");
      check(st.failed_spills == 1, "and no write failed on the way");
    }
    ::_exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kSkip)
    GTEST_SKIP() << "cannot mount a tmpfs in a mount namespace here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's output above";
}

}  // namespace
