// The SSD block store: round trips, restarts, the directory lock, every kind
// of bad file (flipped, truncated, foreign, half-written), LRU eviction,
// concurrent callers, and kill -9 while writing. Writes that cannot all be
// done: cache_ssd_store_failures_test.cpp.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ssd_store_test_support.h"

namespace {

using namespace ssd_test;

TEST_F(SsdStoreTest, PutFlushReadRoundTrip) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 1);
  put(s, chain[0]);
  auto f = s.flush();
  EXPECT_EQ(f.written, 1);
  EXPECT_EQ(f.dropped, 0);
  EXPECT_EQ(f.failed, 0);
  EXPECT_TRUE(s.contains(chain[0].hash));
  EXPECT_TRUE(read_ok(s, chain[0]));
  EXPECT_EQ(fs::file_size(s.record_path(chain[0].hash)), kRecordBytes);
  EXPECT_EQ(s.record_path(chain[0].hash), ns_dir() / (chain[0].hash.hex() + ".kvb"));
  EXPECT_EQ(files_in(ns_dir()), std::vector<std::string>{chain[0].hash.hex() + ".kvb"});

  auto st = s.stats();
  EXPECT_EQ(st.entries, 1);
  EXPECT_EQ(st.bytes, kRecordBytes);
  EXPECT_EQ(st.spills, 1);
  EXPECT_EQ(st.restores, 1);
  EXPECT_EQ(st.skipped, 0);
  EXPECT_EQ(st.pending_spills, 0);
  EXPECT_EQ(st.pending_spill_bytes, 0u);
  EXPECT_GT(st.restore_ms_last, 0.0);
  // A flush with nothing new reports nothing.
  f = s.flush();
  EXPECT_EQ(f.written, 0);
}

TEST_F(SsdStoreTest, ContainsOnlyCommittedAndDuplicatesAreSkipped) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 2);
  EXPECT_FALSE(s.contains(chain[0].hash));
  std::vector<uint8_t> dst(kBytes);
  EXPECT_FALSE(s.read(chain[0].hash, chain[0].parent, chain[0].tokens, dst));
  put(s, chain[0]);
  put(s, chain[0]);  // already queued (or already written)
  EXPECT_EQ(s.flush().written, 1);
  EXPECT_TRUE(s.contains(chain[0].hash));
  EXPECT_FALSE(s.contains(chain[1].hash));
  put(s, chain[0]);  // already stored
  EXPECT_EQ(s.flush().written, 0);
  EXPECT_EQ(s.stats().spills, 1);
}

TEST_F(SsdStoreTest, WrongSizesAreRejected) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 1);
  std::vector<uint8_t> small(kBytes - 1);
  EXPECT_THROW(s.put(chain[0].hash, chain[0].parent, chain[0].tokens, small),
               std::invalid_argument);
  std::vector<int32_t> three(3);
  EXPECT_THROW(s.put(chain[0].hash, chain[0].parent, three, payload_for(chain[0].hash, kBytes)),
               std::invalid_argument);
  EXPECT_THROW(s.read(chain[0].hash, chain[0].parent, chain[0].tokens, small),
               std::invalid_argument);
  SsdStoreOptions bad = options();
  bad.block_bytes = 0;
  EXPECT_THROW(SsdStore{bad}, std::invalid_argument);
}

TEST_F(SsdStoreTest, RestartFindsRecordsAndDestructorDrainsTheQueue) {
  auto chain = make_chain(chain_root_, 6);
  {
    SsdStore s(options());
    for (const Block& b : chain) put(s, b);
    // No flush: the destructor must write everything queued.
  }
  SsdStore s(options());
  auto st = s.stats();
  EXPECT_EQ(st.entries, 6);
  EXPECT_EQ(st.bytes, 6 * kRecordBytes);
  EXPECT_EQ(st.skipped, 0);
  EXPECT_EQ(st.spills, 0);  // counters are per process
  auto h = hashes(chain);
  EXPECT_EQ(s.contains_prefix(h), 6u);
  for (const Block& b : chain) EXPECT_TRUE(read_ok(s, b));
}

TEST_F(SsdStoreTest, ContainsPrefixStopsAtTheFirstGap) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 5);
  for (int i : {0, 1, 3, 4}) put(s, chain[i]);
  s.flush();
  auto h = hashes(chain);
  EXPECT_EQ(s.contains_prefix(h), 2u);
  EXPECT_EQ(s.contains_prefix(std::span(h).subspan(3)), 2u);
  EXPECT_EQ(s.contains_prefix(std::span(h).subspan(2)), 0u);
  EXPECT_EQ(s.contains_prefix({}), 0u);
}

TEST_F(SsdStoreTest, SecondStoreOnTheSameDirectoryFailsAtOnce) {
  auto s = std::make_unique<SsdStore>(options());
  SsdStoreOptions other = options();
  other.ns = root_hash("another model");  // the lock is per root directory, not per namespace
  try {
    SsdStore second(other);
    FAIL() << "a second store opened a locked directory";
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(root_.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("another hearth server"), std::string::npos) << msg;
    EXPECT_NE(msg.find("locked"), std::string::npos) << msg;
  }
  s.reset();
  EXPECT_NO_THROW(SsdStore{options()});  // released with the store
}

TEST_F(SsdStoreTest, FlippedPayloadByteIsAMissAndTheFileIsRemoved) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 2);
  put(s, chain[0]);
  put(s, chain[1]);
  s.flush();
  flip_byte(s.record_path(chain[0].hash), kRecordBytes - 1);  // last payload byte
  flip_byte(s.record_path(chain[1].hash), kHeaderBytes + 5);  // a token
  EXPECT_FALSE(read_ok(s, chain[0]));
  EXPECT_FALSE(read_ok(s, chain[1]));
  EXPECT_FALSE(fs::exists(s.record_path(chain[0].hash)));
  EXPECT_FALSE(fs::exists(s.record_path(chain[1].hash)));
  EXPECT_FALSE(s.contains(chain[0].hash));
  auto st = s.stats();
  EXPECT_EQ(st.skipped, 2);
  EXPECT_EQ(st.restores, 0);
  EXPECT_EQ(st.entries, 0);
  EXPECT_EQ(st.bytes, 0u);
  // It can be written again afterwards.
  put(s, chain[0]);
  s.flush();
  EXPECT_TRUE(read_ok(s, chain[0]));
}

TEST_F(SsdStoreTest, WrongTokensOrParentIsAMiss) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 2);
  put(s, chain[0]);
  put(s, chain[1]);
  s.flush();
  std::vector<uint8_t> dst(kBytes);
  auto tokens = chain[0].tokens;
  tokens[3] += 1;
  EXPECT_FALSE(s.read(chain[0].hash, chain[0].parent, tokens, dst));
  EXPECT_FALSE(s.read(chain[1].hash, chain_root_, chain[1].tokens, dst));
  EXPECT_FALSE(s.contains(chain[0].hash));
  EXPECT_FALSE(s.contains(chain[1].hash));
  EXPECT_EQ(s.stats().skipped, 2);
}

TEST_F(SsdStoreTest, ARecordDeletedBehindOurBackIsForgotten) {
  SsdStore s(options());
  auto chain = make_chain(chain_root_, 1);
  put(s, chain[0]);
  s.flush();
  fs::remove(s.record_path(chain[0].hash));
  EXPECT_FALSE(read_ok(s, chain[0]));
  EXPECT_FALSE(s.contains(chain[0].hash));
  EXPECT_EQ(s.stats().entries, 0);
  EXPECT_EQ(s.stats().bytes, 0u);
}

TEST_F(SsdStoreTest, BadFilesAreRemovedAtStart) {
  auto chain = make_chain(chain_root_, 5);
  {
    SsdStore s(options());
    for (const Block& b : chain) put(s, b);
  }
  const fs::path dir = ns_dir();
  auto path = [&](int i) { return dir / (chain[i].hash.hex() + ".kvb"); };
  fs::resize_file(path(0), kRecordBytes - 1);                  // truncated
  flip_byte(path(1), 20);                                      // header: caught by its checksum
  fs::rename(path(2), dir / (chain[3].hash.hex() + "x.kvb"));  // name does not match the hash
  std::ofstream(dir / (chain[4].hash.hex() + ".kvb.tmp")) << "half written";  // a write cut short
  std::ofstream(dir / "notes.txt") << "not a record";  // not ours: left alone
  fs::create_directory(dir / "sub.kvb");               // nor this

  SsdStore s(options());
  auto st = s.stats();
  EXPECT_EQ(st.skipped, 4);
  EXPECT_EQ(st.entries, 2);  // chain[3] and chain[4]
  std::vector<std::string> kept{chain[3].hash.hex() + ".kvb", chain[4].hash.hex() + ".kvb",
                                "notes.txt", "sub.kvb"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(files_in(dir), kept);
  EXPECT_TRUE(read_ok(s, chain[3]));
  EXPECT_TRUE(read_ok(s, chain[4]));
  EXPECT_FALSE(s.contains(chain[0].hash));
}

TEST_F(SsdStoreTest, RecordOfAnotherNamespaceInOurDirectoryIsSkipped) {
  auto chain = make_chain(chain_root_, 1);
  SsdStoreOptions foreign = options();
  foreign.dir = root_ / "elsewhere";
  foreign.ns = root_hash("another model");
  {
    SsdStore s(foreign);
    put(s, chain[0]);
  }
  fs::create_directories(ns_dir());
  fs::copy_file(foreign.dir / foreign.ns.hex() / (chain[0].hash.hex() + ".kvb"),
                ns_dir() / (chain[0].hash.hex() + ".kvb"));
  SsdStore s(options());
  EXPECT_EQ(s.stats().skipped, 1);
  EXPECT_FALSE(s.contains(chain[0].hash));
  EXPECT_TRUE(files_in(ns_dir()).empty());
}

TEST_F(SsdStoreTest, OtherNamespacesAreLeftAloneUnderTheCap) {
  auto chain = make_chain(chain_root_, 3);
  SsdStoreOptions other = options();
  other.ns = root_hash("another model");
  const fs::path other_dir = root_ / other.ns.hex();
  {
    SsdStore s(other);
    for (const Block& b : chain) put(s, b);
  }
  std::ofstream(other_dir / "junk.kvb.tmp") << "theirs";
  {
    SsdStore s(options());  // the default cap, far above a few small files
    EXPECT_EQ(s.stats().entries, 0);
    EXPECT_EQ(s.stats().skipped, 0);
    EXPECT_EQ(s.stats().other_bytes, 3 * kRecordBytes + 6);  // their records and temp file
    put(s, chain[0]);
    s.flush();
  }
  EXPECT_EQ(files_in(other_dir).size(), 4u);
  SsdStore s(other);
  EXPECT_EQ(s.stats().entries, 3);
  EXPECT_EQ(s.stats().skipped, 1);  // its own temp file
  for (const Block& b : chain) EXPECT_TRUE(read_ok(s, b));
}

TEST_F(SsdStoreTest, EvictsTheLeastRecentlyUsedPastMaxBytes) {
  SsdStore s(options(3 * kRecordBytes));
  auto chain = separate_blocks(chain_root_, 5);
  for (int i = 0; i < 3; ++i) put(s, chain[i]);
  s.flush();
  EXPECT_TRUE(read_ok(s, chain[0]));  // 0 is now the most recently used; 1 the least
  put(s, chain[3]);
  s.flush();
  EXPECT_FALSE(s.contains(chain[1].hash));
  EXPECT_FALSE(fs::exists(s.record_path(chain[1].hash)));
  EXPECT_TRUE(s.contains(chain[0].hash));
  EXPECT_TRUE(s.contains(chain[2].hash));
  EXPECT_TRUE(s.contains(chain[3].hash));
  put(s, chain[2]);  // a put of a stored block counts as a use too: 0 is now the least
  put(s, chain[4]);
  s.flush();
  EXPECT_FALSE(s.contains(chain[0].hash));
  EXPECT_TRUE(s.contains(chain[2].hash));
  auto st = s.stats();
  EXPECT_EQ(st.evicted, 2);
  EXPECT_EQ(st.entries, 3);
  EXPECT_EQ(st.bytes, 3 * kRecordBytes);
  EXPECT_EQ(st.max_bytes, 3 * kRecordBytes);
  EXPECT_EQ(files_in(ns_dir()).size(), 3u);
}

// A chain is read from its start, so its records leave from its end: one
// whose parent is gone would never be read again.
TEST_F(SsdStoreTest, ChainsAreEvictedFromTheirEnd) {
  SsdStore s(options(4 * kRecordBytes));
  auto chain = make_chain(chain_root_, 4);
  auto other = separate_blocks(chain_root_, 2);
  for (const Block& b : chain) put(s, b);
  s.flush();
  put(s, other[0]);  // the chain's end goes, its start the least recently used
  s.flush();
  EXPECT_EQ(s.contains_prefix(hashes(chain)), 3u);
  EXPECT_TRUE(s.contains(other[0].hash));
  s.touch(hashes(chain));  // now other[0] is the least recently used end
  put(s, other[1]);
  s.flush();
  EXPECT_FALSE(s.contains(other[0].hash));
  EXPECT_EQ(s.contains_prefix(hashes(chain)), 3u);
  EXPECT_EQ(s.stats().evicted, 2);
}

// After a restart, too: a parent written after its child (written again
// once evicted) still outlives it.
TEST_F(SsdStoreTest, AfterARestartAParentNewerThanItsChildOutlivesIt) {
  auto chain = make_chain(chain_root_, 2);
  auto other = separate_blocks(chain_root_, 2);
  {
    SsdStore s(options());
    put(s, chain[1]);  // the child first
    s.flush();
    put(s, chain[0]);
  }
  SsdStore s(options(3 * kRecordBytes));
  s.touch(hashes(chain));  // the parent used before the child
  put(s, other[0]);
  put(s, other[1]);
  s.flush();
  EXPECT_EQ(s.stats().evicted, 1);
  EXPECT_TRUE(s.contains(chain[0].hash));
  EXPECT_FALSE(s.contains(chain[1].hash));
}

// A parent removed before its children (read back corrupt) and written
// again counts the children still on disk, and each once: evicting one of
// them must not leave it a leaf while another still needs it, or it would
// go before that child and leave it unreadable.
TEST_F(SsdStoreTest, AParentWrittenAgainCountsItsChildrenStillOnDisk) {
  SsdStore s(options(3 * kRecordBytes));
  auto chain = make_chain(chain_root_, 2);   // P, C
  auto d = make_chain(chain[0].hash, 1, 5);  // D, another child of P
  auto other = separate_blocks(chain_root_, 2);
  put(s, chain[0]);
  put(s, chain[1]);
  s.flush();
  flip_byte(s.record_path(chain[0].hash), kRecordBytes - 1);
  EXPECT_FALSE(read_ok(s, chain[0]));  // removed as corrupt; C stays
  EXPECT_TRUE(s.awaits_put_again(chain[0].hash));
  put(s, chain[0]);
  put(s, d[0]);
  s.flush();
  EXPECT_EQ(s.stats().entries, 3);
  put(s, other[0]);  // C goes: the least recently used leaf
  s.flush();
  EXPECT_FALSE(s.contains(chain[1].hash));
  put(s, other[1]);  // D goes, not P, which D still needs
  s.flush();
  EXPECT_TRUE(s.contains(chain[0].hash));
  EXPECT_FALSE(s.contains(d[0].hash));
  EXPECT_EQ(s.stats().evicted, 2);
}

// What the prompt cache puts again before a child: a block neither on disk
// nor queued, unless its write failed or was given up.
TEST_F(SsdStoreTest, AnEvictedOrCorruptRecordAwaitsAPutAgain) {
  SsdStore s(options(1 * kRecordBytes));
  auto blocks = separate_blocks(chain_root_, 2);
  EXPECT_TRUE(s.awaits_put_again(blocks[0].hash));  // never put
  s.set_paused(true);
  put(s, blocks[0]);
  EXPECT_FALSE(s.awaits_put_again(blocks[0].hash));  // queued
  s.set_paused(false);
  s.flush();
  EXPECT_FALSE(s.awaits_put_again(blocks[0].hash));  // on disk
  put(s, blocks[1]);
  s.flush();
  ASSERT_FALSE(s.contains(blocks[0].hash));
  EXPECT_TRUE(s.awaits_put_again(blocks[0].hash));  // evicted
}

// The prompt cache touches the records of blocks it served from RAM: a
// prefix hit there many times is not the first to leave the disk.
TEST_F(SsdStoreTest, TouchedRecordsCountAsUsed) {
  SsdStore s(options(2 * kRecordBytes));
  auto chain = separate_blocks(chain_root_, 3);
  put(s, chain[0]);
  put(s, chain[1]);
  s.flush();
  const BlockHash first[] = {chain[0].hash, chain_root_};  // an unknown hash is ignored
  s.touch(first);  // 1 is now the least recently used
  put(s, chain[2]);
  s.flush();
  EXPECT_TRUE(s.contains(chain[0].hash));
  EXPECT_FALSE(s.contains(chain[1].hash));
  EXPECT_TRUE(s.contains(chain[2].hash));
}

// By default the cap is half of the free space plus what the namespace's
// records take at start: the same figure from one run to the next as the
// cache fills, where half of the free space alone would shrink each time.
TEST_F(SsdStoreTest, TheDefaultCapCountsTheRecordsAlreadyStored) {
  SsdStoreOptions big = options();  // no cap given
  big.block_bytes = 4 << 20;
  uint64_t first_cap;
  {
    SsdStore s(big);
    first_cap = s.stats().max_bytes;
    EXPECT_NEAR(double(first_cap), double(fs::space(root_).available) / 2, double(8u << 20));
    // 64 MB of records: half of it is well past the other writers' noise.
    for (const Block& b : make_chain(chain_root_, 16)) put(s, b, 4 << 20);
  }
  SsdStore again(big);
  const auto st = again.stats();
  EXPECT_EQ(st.entries, 16);
  EXPECT_NEAR(double(st.max_bytes), double(fs::space(root_).available + st.bytes) / 2, double(8u << 20));
  EXPECT_NEAR(double(st.max_bytes), double(first_cap), double(8u << 20));
}

TEST_F(SsdStoreTest, AfterARestartTheOrderOfUseComesFromTheFileTimes) {
  auto chain = separate_blocks(chain_root_, 4);
  {
    SsdStore s(options());
    for (int i = 0; i < 3; ++i) put(s, chain[i]);
  }
  // Written 0, 1, 2; make 1 the oldest and 0 the newest.
  auto set_mtime = [&](int i, time_t t) {
    timespec times[2] = {{t, 0}, {t, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (ns_dir() / (chain[i].hash.hex() + ".kvb")).c_str(), times, 0),
              0);
  };
  set_mtime(0, 3000);
  set_mtime(1, 1000);
  set_mtime(2, 2000);
  {
    SsdStore s(options(3 * kRecordBytes));
    put(s, chain[3]);
    s.flush();
    EXPECT_FALSE(s.contains(chain[1].hash));
    EXPECT_TRUE(s.contains(chain[0].hash));
    EXPECT_TRUE(s.contains(chain[2].hash));
    EXPECT_TRUE(read_ok(s, chain[2]));  // a read is remembered in the file time
  }
  SsdStore s(options(2 * kRecordBytes));  // a lowered cap evicts at start: 0 is now the oldest
  EXPECT_EQ(s.stats().evicted, 1);
  EXPECT_FALSE(s.contains(chain[0].hash));
  EXPECT_TRUE(s.contains(chain[2].hash));
  EXPECT_TRUE(s.contains(chain[3].hash));
}

// The cap is the directory's: a model updated in place gets a new namespace,
// and the old one's records, never read again, must not hold the disk.
TEST_F(SsdStoreTest, OtherNamespacesRecordsCountAgainstTheCapAndGoFirstOldestFirst) {
  SsdStoreOptions old_model = options();
  old_model.ns = root_hash("the model before its update");
  const auto old_chain = make_chain(chain_root_, 3, 1);
  {
    SsdStore s(old_model);
    for (const Block& b : old_chain) put(s, b);
  }
  const fs::path old_dir = root_ / old_model.ns.hex();
  for (int i = 0; i < 3; ++i) {  // 1 the oldest, then 0, then 2
    const time_t t = i == 1 ? 1000 : i == 0 ? 2000 : 3000;
    timespec times[2] = {{t, 0}, {t, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (old_dir / (old_chain[i].hash.hex() + ".kvb")).c_str(), times, 0), 0);
  }
  fs::create_directories(root_ / "not-a-namespace");  // left alone
  std::ofstream(root_ / "not-a-namespace" / "x.kvb") << "someone's file";

  const auto chain = make_chain(chain_root_, 3);
  {
    SsdStore s(options(4 * kRecordBytes));  // room for 4 of the 6
    EXPECT_EQ(s.stats().other_bytes, 3 * kRecordBytes);
    for (const Block& b : chain) put(s, b);
    s.flush();
    const auto st = s.stats();
    EXPECT_EQ(st.entries, 3);  // all of this namespace's
    EXPECT_EQ(st.other_bytes, kRecordBytes);
    EXPECT_EQ(st.evicted, 2);
    EXPECT_EQ(files_in(old_dir), std::vector<std::string>{old_chain[2].hash.hex() + ".kvb"});
  }
  {
    SsdStore s(options(3 * kRecordBytes));  // a lowered cap: the last one goes at start
    EXPECT_EQ(s.stats().other_bytes, 0u);
    EXPECT_EQ(s.stats().entries, 3);
  }
  EXPECT_FALSE(fs::exists(old_dir)) << "an emptied namespace folder is removed";
  EXPECT_TRUE(fs::exists(root_ / "not-a-namespace" / "x.kvb"));
}

// Out of file descriptors at start, at whatever point: the store either
// fails to start or indexes every record and counts every other
// namespace's. A record it could not open or list then would sit on disk
// outside the index, never read, evicted or counted by the cap. Walked
// with and without records of its own, so that the scan runs out first in
// one and the listing of other namespaces in the other.
TEST_F(SsdStoreTest, AStartOutOfFileDescriptorsIndexesEveryRecordOrFails) {
  SsdStoreOptions old_model = options();
  old_model.ns = root_hash("the model before its update");
  {
    SsdStore s(old_model);
    put(s, make_chain(chain_root_, 1, 1)[0]);
  }
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  for (const int records : {0, 3}) {
    SCOPED_TRACE(std::to_string(records) + " records of its own");
    if (records > 0) {
      SsdStore s(options());
      for (const Block& b : make_chain(chain_root_, records)) put(s, b);
    }
    bool started = false;
    // Fds the store may open, up to the first start (inherited fds above
    // the lowest free one only make a start come later).
    for (int room = 0; room <= 64 && !started; ++room) {
      rlimit tight = saved;
      tight.rlim_cur = rlim_t(lowest_free + room);
      ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
      try {
        SsdStore s(options());
        ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
        EXPECT_EQ(s.stats().entries, records) << "with room for " << room << " fds";
        EXPECT_EQ(s.stats().other_bytes, kRecordBytes) << "with room for " << room << " fds";
        EXPECT_EQ(s.stats().skipped, 0);
        started = true;
      } catch (const std::runtime_error&) {
      }
      ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
    }
    EXPECT_TRUE(started);
    EXPECT_EQ(files_in(ns_dir()).size(), size_t(records));
  }
}

// A record the server cannot read (another user made it unreadable) is
// removed at start like a corrupt one, not left outside the index.
TEST_F(SsdStoreTest, AnUnreadableRecordIsRemovedAtStart) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  const auto chain = make_chain(chain_root_, 2);
  {
    SsdStore s(options());
    for (const Block& b : chain) put(s, b);
  }
  fs::permissions(ns_dir() / (chain[1].hash.hex() + ".kvb"), fs::perms::none);
  SsdStore s(options());
  EXPECT_EQ(s.stats().entries, 1);
  EXPECT_EQ(s.stats().skipped, 1);
  EXPECT_EQ(files_in(ns_dir()), std::vector<std::string>{chain[0].hash.hex() + ".kvb"});
}

// A socket named like a record is not a record of ours: left alone, as a
// directory of that name is (opening it fails with ENXIO, not as a bad
// record's open does).
TEST_F(SsdStoreTest, ASocketNamedLikeARecordIsLeftAlone) {
  { SsdStore s(options()); }
  const std::string name = make_chain(chain_root_, 1)[0].hash.hex() + ".kvb";
  const std::string path = (ns_dir() / name).string();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  ASSERT_EQ(::bind(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  SsdStore s(options());
  EXPECT_EQ(s.stats().entries, 0);
  EXPECT_EQ(s.stats().skipped, 0);
  EXPECT_EQ(files_in(ns_dir()), std::vector<std::string>{name});
  ::close(sock);
}

// Another namespace's folder swapped for a link after the scan: eviction
// deletes through the folder's own fd, so the link is not followed and the
// files it leads to stay.
TEST_F(SsdStoreTest, EvictingAnotherNamespaceFollowsNoLink) {
  SsdStoreOptions old_model = options();
  old_model.ns = root_hash("the model before its update");
  const Block old_block = make_chain(chain_root_, 1, 1)[0];
  {
    SsdStore s(old_model);
    put(s, old_block);
  }
  const fs::path old_dir = root_ / old_model.ns.hex();
  const std::string record = old_block.hash.hex() + ".kvb";
  const auto chain = make_chain(chain_root_, 2);
  SsdStore s(options(2 * kRecordBytes));  // the old record must go for the second
  ASSERT_EQ(s.stats().other_bytes, kRecordBytes);
  const fs::path elsewhere = root_ / "elsewhere";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / record) << "someone's file";
  fs::remove_all(old_dir);
  fs::create_directory_symlink(elsewhere, old_dir);
  for (const Block& b : chain) put(s, b);
  s.flush();
  EXPECT_EQ(s.stats().entries, 2);
  EXPECT_EQ(s.stats().other_bytes, 0u);
  EXPECT_TRUE(fs::exists(elsewhere / record)) << "the eviction followed a link";
  EXPECT_TRUE(fs::is_symlink(old_dir));
}

// A namespace folder someone made before the server (its name comes from
// the model's files): an open one is made private, another user's or a
// link is refused.
TEST_F(SsdStoreTest, AFolderThatWasThereIsMadePrivateOrRefused) {
  fs::create_directories(ns_dir());
  fs::permissions(ns_dir(), fs::perms::all);
  { SsdStore s(options()); }
  EXPECT_EQ(fs::status(ns_dir()).permissions(), fs::perms::owner_all);
  fs::remove_all(ns_dir());
  fs::create_directories(root_ / "elsewhere");
  fs::create_directory_symlink(root_ / "elsewhere", ns_dir());
  EXPECT_THROW(SsdStore s(options()), std::runtime_error);
  fs::remove(ns_dir());
  if (::geteuid() != 0) GTEST_SKIP() << "giving a folder to another user needs root";
  fs::create_directories(ns_dir());
  ASSERT_EQ(::chown(ns_dir().c_str(), 65534, 65534), 0);
  try {
    SsdStore s(options());
    ADD_FAILURE() << "another user's folder was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another user"), std::string::npos) << e.what();
  }
}

// The folder the store was given holds the lock and every namespace's
// folder, and the store deletes other namespaces' records in it: one that
// others could write in is closed to them, another user's is refused.
TEST_F(SsdStoreTest, TheCacheDirectoryIsTheUsersAloneToWriteIn) {
  fs::permissions(root_, fs::perms::all);
  { SsdStore s(options()); }
  EXPECT_EQ(fs::status(root_).permissions(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                                 fs::perms::others_read | fs::perms::others_exec);
  if (::geteuid() != 0) GTEST_SKIP() << "giving a folder to another user needs root";
  ASSERT_EQ(::chown(root_.c_str(), 65534, 65534), 0);
  try {
    SsdStore s(options());
    ADD_FAILURE() << "another user's folder was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another user"), std::string::npos) << e.what();
  }
  ASSERT_EQ(::chown(root_.c_str(), 0, 0), 0);
}

// A namespace folder another user made (while the cache directory was open
// to them) is neither counted against the cap nor emptied to meet it.
TEST_F(SsdStoreTest, AnotherUsersNamespaceFolderIsLeftAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a folder to another user needs root";
  SsdStoreOptions theirs = options();
  theirs.ns = root_hash("their model");
  const fs::path their_dir = root_ / theirs.ns.hex();
  {
    SsdStore s(theirs);
    put(s, make_chain(chain_root_, 1, 2)[0]);
  }
  ASSERT_EQ(::chown(their_dir.c_str(), 65534, 65534), 0);
  const auto chain = make_chain(chain_root_, 2);
  SsdStore s(options(kRecordBytes));  // room for one record: theirs would go first
  EXPECT_EQ(s.stats().other_bytes, 0u);
  for (const Block& b : chain) put(s, b);
  s.flush();
  EXPECT_EQ(files_in(their_dir).size(), 1u);
  EXPECT_EQ(s.stats().entries, 1);
}

// A well-formed record another user put in the folder (while it was open,
// before the server made it private) is removed at start, not served.
TEST_F(SsdStoreTest, ARecordAnotherUserOwnsIsRemovedAtStart) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  auto chain = make_chain(chain_root_, 2);
  {
    SsdStore s(options());
    put(s, chain[0]);
    put(s, chain[1]);
  }
  const fs::path planted = ns_dir() / (chain[1].hash.hex() + ".kvb");
  ASSERT_EQ(::chown(planted.c_str(), 65534, 65534), 0);
  SsdStore s(options());
  EXPECT_TRUE(s.contains(chain[0].hash));
  EXPECT_FALSE(s.contains(chain[1].hash));
  EXPECT_FALSE(fs::exists(planted));
  EXPECT_EQ(s.stats().skipped, 1);
}

TEST_F(SsdStoreTest, RecordsAreTheOwnersAloneAndAFifoInARecordsPlaceDoesNotHang) {
  auto chain = make_chain(chain_root_, 2);
  SsdStore s(options());
  put(s, chain[0]);
  put(s, chain[1]);
  s.flush();
  const fs::path record = ns_dir() / (chain[0].hash.hex() + ".kvb");
  EXPECT_EQ(fs::status(ns_dir()).permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(record).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  // Replaced by a FIFO after the start: a read must fail at once, not block.
  fs::remove(record);
  ASSERT_EQ(::mkfifo(record.c_str(), 0600), 0);
  EXPECT_FALSE(read_ok(s, chain[0]));
  EXPECT_FALSE(s.contains(chain[0].hash));
  // A link left where the writer's temporary file goes is not written through.
  const fs::path target = root_ / "target";
  std::ofstream(target) << "keep";
  const auto more = make_chain(chain[1].hash, 1, 7);
  fs::create_symlink(target, ns_dir() / (more[0].hash.hex() + ".kvb.tmp"));
  put(s, more[0]);
  s.flush();
  EXPECT_TRUE(read_ok(s, more[0]));
  std::ifstream in(target);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "keep");
}

TEST_F(SsdStoreTest, LongestDurablePrefixTokens) {
  SsdStore s(options());
  EXPECT_EQ(s.longest_durable_prefix_tokens(chain_root_), 0);
  auto main_chain = make_chain(chain_root_, 5, 1);
  auto branch = make_chain(main_chain[0].hash, 6, 2);      // 1 + 6 = 7 blocks deep
  auto orphan = make_chain(root_hash("unrelated"), 9, 3);  // another root
  for (const Block& b : main_chain) put(s, b);
  for (const Block& b : orphan) put(s, b);
  s.flush();
  EXPECT_EQ(s.longest_durable_prefix_tokens(chain_root_), 5 * kTokens);
  for (int i = 0; i < 6; ++i)
    if (i != 3) put(s, branch[i]);  // a gap: only 0..2 of the branch are reachable
  s.flush();
  EXPECT_EQ(s.longest_durable_prefix_tokens(chain_root_), 5 * kTokens);
  put(s, branch[3]);
  s.flush();
  EXPECT_EQ(s.longest_durable_prefix_tokens(chain_root_), 7 * kTokens);
  EXPECT_EQ(s.longest_durable_prefix_tokens(root_hash("unrelated")), 9 * kTokens);
  EXPECT_EQ(s.longest_durable_prefix_tokens(root_hash("nothing")), 0);
}

TEST_F(SsdStoreTest, ConcurrentCallers) {
  SsdStore s(options());
  constexpr int kPerWriter = 150;
  auto a = make_chain(chain_root_, kPerWriter, 1), b = make_chain(chain_root_, kPerWriter, 2);
  std::atomic<bool> done{false};
  std::atomic<int> good_reads{0}, bad_reads{0};
  std::thread reader([&] {
    while (!done) {
      for (const Block& blk : a)
        if (s.contains(blk.hash)) (read_ok(s, blk) ? good_reads : bad_reads)++;
      s.contains_prefix(hashes(b));
    }
  });
  std::thread watcher([&] {
    while (!done) {
      s.stats();
      s.flush();
      s.longest_durable_prefix_tokens(chain_root_);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::thread wa([&] {
    for (const Block& blk : a) put(s, blk);
  });
  std::thread wb([&] {
    for (const Block& blk : b) put(s, blk);
  });
  wa.join();
  wb.join();
  s.flush();
  done = true;
  reader.join();
  watcher.join();
  EXPECT_EQ(bad_reads, 0);
  EXPECT_EQ(s.contains_prefix(hashes(a)), size_t(kPerWriter));
  EXPECT_EQ(s.contains_prefix(hashes(b)), size_t(kPerWriter));
  EXPECT_EQ(s.stats().spills, 2 * kPerWriter);
  for (const Block& blk : b) EXPECT_TRUE(read_ok(s, blk));
}

// Children write in a loop and are killed at a random moment. After each
// kill the store must start, find nothing bad but the temp files, still hold
// every record seen after earlier kills, and read each one back exactly.
TEST_F(SsdStoreTest, SurvivesKillDuringHeavyWrites) {
  constexpr int kRounds = 20, kBlocksPerRound = 400;
  constexpr size_t kBlockBytes = 64 << 10;
  SsdStoreOptions o = options();
  o.block_bytes = kBlockBytes;
  std::unordered_map<std::string, Block> expected;  // by record file name
  std::set<std::string> seen;                       // records found after earlier kills
  std::mt19937 rng(12345);
  int killed_mid_write = 0;
  for (int round = 0; round < kRounds; ++round) {
    auto chain = make_chain(chain_root_, kBlocksPerRound, round + 1);
    for (const Block& b : chain) expected[b.hash.hex() + ".kvb"] = b;
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        SsdStore s(o);
        for (int i = 0;; ++i) {
          put(s, chain[size_t(i) % chain.size()], kBlockBytes);
          if (i % 50 == 49) s.flush();
        }
      } catch (...) {
        ::_exit(1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 120));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited by itself (status " << status << ")";

    int tmp_files = 0;
    for (const std::string& name : files_in(ns_dir())) tmp_files += name.ends_with(".kvb.tmp");
    killed_mid_write += tmp_files > 0;
    SsdStore s(o);
    ASSERT_EQ(s.stats().skipped, tmp_files)
        << "round " << round << ": only temp files may be bad after kill -9";
    std::set<std::string> now;
    for (const std::string& name : files_in(ns_dir())) {
      auto it = expected.find(name);
      ASSERT_NE(it, expected.end()) << "unexpected file " << name;
      ASSERT_TRUE(s.contains(it->second.hash)) << name;
      ASSERT_TRUE(read_ok(s, it->second, kBlockBytes)) << name;
      now.insert(name);
    }
    EXPECT_EQ(int64_t(now.size()), s.stats().entries);
    EXPECT_TRUE(std::includes(now.begin(), now.end(), seen.begin(), seen.end()))
        << "round " << round;
    seen = std::move(now);
  }
  EXPECT_GT(seen.size(), size_t(kRounds)) << "the children hardly committed anything";
  EXPECT_GT(killed_mid_write, 0) << "no kill landed during a write: the test proved little";
}

}  // namespace
