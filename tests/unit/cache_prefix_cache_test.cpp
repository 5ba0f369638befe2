// The RAM prompt cache as a data structure over a small KV pool, with made-up
// token ids and no model: hash chains, lookup of the longest cached prefix,
// sharing by reference count, eviction order, the cap, sessions, and what a
// lookup tells the SSD tier.
#include "cache/prefix_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "cache/ssd_store.h"
#include "temp_dir.h"

namespace hearth::cache {
namespace {

constexpr int kBlock = 4;

struct Fixture {
  KvCache kv{KvCacheShape{1, 1, 4, kBlock, DType::F32}, 16};
  BlockHash root = root_hash("test model");

  // A sequence that "computed" `tokens`: blocks reserved, length set.
  int compute(std::span<const int32_t> tokens) {
    int seq = kv.create_sequence();
    EXPECT_TRUE(kv.reserve(seq, int64_t(tokens.size())));
    kv.set_length(seq, int64_t(tokens.size()));
    return seq;
  }
  void publish(PrefixCache& c, int seq, std::span<const int32_t> tokens, const std::string& session = {}) {
    ChainCursor cur{c.root(), 0};
    c.publish(cur, tokens, int64_t(tokens.size()), kv.blocks(seq), session);
  }
  int publish_new(PrefixCache& c, std::span<const int32_t> tokens) {  // computed, then published
    const int seq = compute(tokens);
    publish(c, seq, tokens);
    return seq;
  }
  // An SSD tier in `dir` capped at `records` of this cache's blocks (0: no
  // cap but the free space).
  SsdStoreOptions ssd_options(const std::filesystem::path& dir, uint64_t records) const {
    const uint64_t record = kv_record::Shape{root_hash("ns"), kBlock, kv.block_bytes()}.file_bytes();
    return {dir, records * record, 1 << 20, root_hash("ns"), kv.block_bytes(), kBlock};
  }
  // A later turn: attaches the blocks `m` found in RAM, computes the rest of
  // `tokens` and publishes the new blocks.
  int continue_turn(PrefixCache& c, const PrefixMatch& m, std::span<const int32_t> tokens) {
    const int seq = kv.create_sequence();
    kv.attach(seq, m.blocks);
    EXPECT_TRUE(kv.reserve(seq, int64_t(tokens.size())));
    kv.set_length(seq, int64_t(tokens.size()));
    ChainCursor cursor{m.chain[m.blocks.size() - 1], int64_t(m.blocks.size())};
    c.publish(cursor, tokens, int64_t(tokens.size()), kv.blocks(seq));
    return seq;
  }
};

std::vector<int32_t> iota(int n, int first = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

size_t cap(int blocks) { return size_t(blocks) * KvCache::block_bytes(KvCacheShape{1, 1, 4, kBlock, DType::F32}); }

TEST(BlockHash, ChainsDependOnEveryTokenAndTheParent) {
  BlockHash r = root_hash("a"), r2 = root_hash("b");
  std::vector<int32_t> t = {1, 2, 3, 4};
  EXPECT_EQ(chain_hash(r, t), chain_hash(r, t));
  EXPECT_FALSE(chain_hash(r, t) == chain_hash(r2, t));
  auto t2 = t;
  t2[3] = 5;
  EXPECT_FALSE(chain_hash(r, t) == chain_hash(r, t2));
  EXPECT_FALSE(chain_hash(chain_hash(r, t), t) == chain_hash(r, t));
  EXPECT_EQ(chain_hash(r, t).hex().size(), 32u);
}

TEST(PrefixCache, FindsTheLongestCachedRunOfWholeBlocks) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16)});
  auto tokens = iota(10);  // two full blocks and two tokens
  int seq = f.compute(tokens);
  f.publish(c, seq, tokens);
  EXPECT_EQ(c.stats().entries, 2);

  auto longer = iota(14);  // same first 10, then more
  PrefixMatch m = c.lookup(longer);
  c.count_admission(m);
  EXPECT_EQ(m.tokens, 8);
  ASSERT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.blocks[0], f.kv.blocks(seq)[0]);
  EXPECT_EQ(m.blocks[1], f.kv.blocks(seq)[1]);
  EXPECT_EQ(m.chain.size(), 3u);

  auto edited = longer;
  edited[5] = 99;  // the second block differs
  PrefixMatch second = c.lookup(edited);
  EXPECT_EQ(second.tokens, 4);
  c.count_admission(second);
  edited[0] = 99;
  PrefixMatch third = c.lookup(edited);
  EXPECT_EQ(third.tokens, 0);
  // A lookup counts only when its request is admitted (count_admission): a
  // request waiting for room looks up again at each try.
  EXPECT_EQ(c.stats().misses, 0);
  EXPECT_EQ(c.lookup(edited).tokens, 0);
  c.count_admission(third);
  // Having found none, it is a miss only once its request reused none
  // (count_reuse).
  EXPECT_EQ(c.stats().misses, 0);
  c.count_reuse(false);
  PrefixCacheStats s = c.stats();
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.prefix_scans, 4);
  EXPECT_EQ(s.hit_tokens, 12);
}

TEST(PrefixCache, OtherNamespacesNeverMatch) {
  Fixture f;
  PrefixCache a(f.kv, root_hash("model a"), {cap(16)});
  PrefixCache b(f.kv, root_hash("model b"), {cap(16)});
  auto tokens = iota(8);
  int seq = f.compute(tokens);
  f.publish(a, seq, tokens);
  EXPECT_EQ(a.lookup(tokens).tokens, 8);
  EXPECT_EQ(b.lookup(tokens).tokens, 0);
}

TEST(PrefixCache, HoldsAReferenceSoBlocksOutliveTheirSequence) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16)});
  auto tokens = iota(9);
  int seq = f.compute(tokens);
  const int32_t first = f.kv.blocks(seq)[0];
  f.publish(c, seq, tokens);
  EXPECT_EQ(f.kv.refs(first), 2);
  f.kv.release(seq);
  EXPECT_EQ(f.kv.refs(first), 1);
  EXPECT_EQ(f.kv.blocks_free(), 16 - 2);  // the partial third block went back
  EXPECT_EQ(c.reclaimable(), 2);

  // A second sequence shares them; writing into them is refused.
  int again = f.kv.create_sequence();
  PrefixMatch m = c.lookup(tokens);
  f.kv.attach(again, m.blocks);
  EXPECT_EQ(f.kv.length(again), 8);
  EXPECT_EQ(f.kv.refs(first), 2);
  EXPECT_EQ(c.reclaimable(), 0);
  EXPECT_EQ(c.evict(2), 0);  // in use: nothing to free
  std::vector<float> k(4, 1.0f), v(4, 2.0f);
  EXPECT_THROW(f.kv.store(0, again, 3, k.data(), v.data()), std::logic_error);
  f.kv.release(again);
  EXPECT_EQ(c.evict(5), 2);
  EXPECT_EQ(f.kv.blocks_free(), 16);
}

TEST(PrefixCache, ABlockComputedTwiceIsIndexedOnce) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16)});
  auto tokens = iota(8);
  int s1 = f.compute(tokens), s2 = f.compute(tokens);
  f.publish(c, s1, tokens);
  f.publish(c, s2, tokens);
  EXPECT_EQ(c.stats().entries, 2);
  EXPECT_EQ(c.lookup(tokens).blocks[0], f.kv.blocks(s1)[0]);
  f.kv.release(s1);
  f.kv.release(s2);
  EXPECT_EQ(f.kv.blocks_free(), 16 - 2);
}

// The second copy's sequence goes on: its next block is indexed under the
// first copy's, whose chain it then keeps, although only the cache holds
// that chain's blocks. reclaimable() counts what evict() can free.
TEST(PrefixCache, AChainAnotherCopyContinuesIsNotReclaimable) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16)});
  const auto prompt = iota(8), longer = iota(12);
  const int s1 = f.publish_new(c, prompt);
  const int s2 = f.publish_new(c, longer);  // its first two blocks are duplicates
  EXPECT_EQ(c.stats().entries, 3);
  f.kv.release(s1);
  EXPECT_EQ(c.reclaimable(), 0);
  EXPECT_EQ(c.evict(16), 0);
  f.kv.release(s2);
  EXPECT_EQ(c.reclaimable(), 3);
  EXPECT_EQ(c.evict(16), 3);
  EXPECT_EQ(f.kv.blocks_free(), 16);
}

TEST(PrefixCache, CopyOnWriteGivesAPrivateBlockWithTheSameContents) {
  Fixture f;
  auto tokens = iota(4);
  int seq = f.compute(tokens);
  std::vector<float> k = {1, 2, 3, 4}, v = {5, 6, 7, 8};
  f.kv.store(0, seq, 2, k.data(), v.data());
  const int32_t b = f.kv.blocks(seq)[0];
  std::optional<int32_t> copy = f.kv.copy_block(b);
  ASSERT_TRUE(copy);
  EXPECT_NE(*copy, b);
  EXPECT_EQ(f.kv.refs(*copy), 1);
  auto src = f.kv.block_data(b), dst = f.kv.block_data(*copy);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
  f.kv.unref(*copy);
}

TEST(PrefixCache, EvictsLeavesLeastRecentlyUsedFirst) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16), Retention::Lru});
  auto a = iota(12), b = iota(8, 100);  // chains of 3 and 2 blocks
  int sa = f.compute(a), sb = f.compute(b);
  f.publish(c, sa, a);
  f.publish(c, sb, b);
  f.kv.release(sa);
  f.kv.release(sb);
  c.lookup(a);  // a is now the more recent
  EXPECT_EQ(c.evict(1), 1);
  EXPECT_EQ(c.lookup(b).tokens, 4);  // b lost its leaf, not its first block
  EXPECT_EQ(c.lookup(a).tokens, 12);
  EXPECT_EQ(c.evict(1), 1);  // b's first block, now a leaf and the oldest
  EXPECT_EQ(c.lookup(b).tokens, 0);
  EXPECT_EQ(c.lookup(a).tokens, 12);
  EXPECT_EQ(c.stats().evictions, 2);
}

// A request holding a private copy of a cached block (a whole-history hit)
// publishes the next block after the cache has evicted the original: that
// child is indexed without its parent. When the parent is indexed again
// and the child goes first, the parent must still be evictable.
TEST(PrefixCache, AChildIndexedWithoutItsParentLeavesTheParentEvictable) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16), Retention::Lru});
  auto tokens = iota(8);  // two blocks
  int seq = f.compute(tokens);
  const BlockHash first = chain_hash(c.root(), std::span(tokens).first(kBlock));
  ChainCursor after_first{first, 1};  // the parent is not indexed
  c.publish(after_first, tokens, 8, f.kv.blocks(seq), {});
  EXPECT_EQ(c.stats().entries, 1);
  c.lookup(std::span(tokens).first(kBlock));  // nothing yet; then the parent comes back
  f.publish(c, seq, std::span(tokens).first(kBlock));
  EXPECT_EQ(c.stats().entries, 2);
  f.kv.release(seq);
  EXPECT_EQ(c.evict(1), 1);  // the orphan child (older)
  EXPECT_EQ(c.evict(1), 1);  // then the parent, a leaf with no children
  EXPECT_EQ(c.stats().entries, 0);
  EXPECT_EQ(f.kv.blocks_free(), f.kv.blocks_total());
}

// A block served from RAM again and again is a used one on disk too: the
// SSD tier's cap evicts another record before it.
TEST(PrefixCache, ARamHitKeepsTheBlockFreshOnDisk) {
  const TempDir dir;
  Fixture f;
  SsdStore ssd(f.ssd_options(dir, 2));
  PrefixCache c(f.kv, f.root, {cap(16)}, &ssd);
  auto a = iota(kBlock), b = iota(kBlock, 100), d = iota(kBlock, 200);
  for (const auto* t : {&a, &b}) f.kv.release(f.publish_new(c, *t));
  ssd.flush();  // a, then b, on disk
  EXPECT_EQ(c.lookup(a).tokens, kBlock);  // from RAM
  f.kv.release(f.publish_new(c, d));
  ssd.flush();  // over the cap: b, the least recently used, goes
  EXPECT_TRUE(ssd.contains(chain_hash(c.root(), a)));
  EXPECT_FALSE(ssd.contains(chain_hash(c.root(), b)));
  EXPECT_TRUE(ssd.contains(chain_hash(c.root(), d)));
}

TEST(PrefixCache, CostSizeKeepsTheLongestPrefixes) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16), Retention::CostSize});
  auto longer = iota(12), shorter = iota(8, 100);
  int s1 = f.compute(longer), s2 = f.compute(shorter);
  f.publish(c, s1, longer);
  f.publish(c, s2, shorter);
  f.kv.release(s1);
  f.kv.release(s2);
  c.lookup(shorter);  // recency does not save it
  EXPECT_EQ(c.evict(2), 2);
  EXPECT_EQ(c.lookup(shorter).tokens, 0);
  EXPECT_EQ(c.lookup(longer).tokens, 12);
}

TEST(PrefixCache, TheCapEvictsWhatOnlyTheCacheHolds) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(3)});
  auto a = iota(8), b = iota(8, 100);
  int sa = f.compute(a);
  f.publish(c, sa, a);
  f.kv.release(sa);
  int sb = f.compute(b);
  f.publish(c, sb, b);  // 4 blocks over a cap of 3: a's leaf goes
  EXPECT_EQ(c.stats().entries, 3);
  EXPECT_EQ(c.lookup(a).tokens, 4);
  EXPECT_EQ(c.lookup(b).tokens, 8);
  EXPECT_EQ(c.stats().bytes, cap(3));
  f.kv.release(sb);
}

TEST(PrefixCache, SessionsCountContinuationsAndAreEvictedLast) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16)});
  auto turn1 = iota(8);
  int s1 = f.compute(turn1);
  f.publish(c, s1, turn1, "chat-1");
  f.kv.release(s1);
  auto other = iota(8, 200);
  int s2 = f.compute(other);
  f.publish(c, s2, other);
  f.kv.release(s2);

  auto turn2 = iota(13);  // turn 1 and more
  c.count_admission(c.lookup(turn2, "chat-1"));
  auto branched = turn2;
  branched[6] = 77;
  c.count_admission(c.lookup(branched, "chat-1"));
  c.count_admission(c.lookup(turn2, "unknown"));  // a new session is neither
  PrefixCacheStats s = c.stats();
  EXPECT_EQ(s.session_hits, 1);
  EXPECT_EQ(s.session_misses, 1);
  EXPECT_EQ(s.sessions, 1);

  c.lookup(turn1);  // the session's chain is the most recent, and still goes last
  EXPECT_EQ(c.evict(2), 2);
  EXPECT_EQ(c.lookup(other).tokens, 0);
  EXPECT_EQ(c.lookup(turn1).tokens, 8);
  EXPECT_TRUE(c.close_session("chat-1"));
  EXPECT_FALSE(c.close_session("chat-1"));
  EXPECT_EQ(c.lookup(turn1).tokens, 8);  // closing keeps the blocks
}

// Session ids are the client's to make up: one whose blocks have all left
// RAM is forgotten, so they cannot pile up.
TEST(PrefixCache, ASessionWhoseBlocksAreGoneIsForgotten) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16)});
  for (int i = 0; i < 3; ++i) {
    auto tokens = iota(4, 100 * i);
    const int seq = f.compute(tokens);
    f.publish(c, seq, tokens, "made-up-" + std::to_string(i));
    f.kv.release(seq);
  }
  EXPECT_EQ(c.stats().sessions, 3);
  EXPECT_EQ(c.evict(2), 2);  // two sessions' only blocks
  EXPECT_EQ(c.stats().sessions, 3);  // noticed at the next eviction
  EXPECT_EQ(c.evict(0), 0);
  EXPECT_EQ(c.stats().sessions, 1);
}

TEST(PrefixCache, ARequestServedFromTheCacheStillSetsItsSession) {
  Fixture f;
  PrefixCache c(f.kv, f.root, {cap(16)});
  auto tokens = iota(8);
  int s1 = f.compute(tokens);
  f.publish(c, s1, tokens);
  f.kv.release(s1);
  // A second request attaches both blocks: its cursor starts past them.
  int s2 = f.kv.create_sequence();
  PrefixMatch m = c.lookup(tokens, "late");
  f.kv.attach(s2, m.blocks);
  ChainCursor cur{m.chain.back(), 2};
  c.publish(cur, tokens, 8, f.kv.blocks(s2), "late");
  EXPECT_EQ(c.stats().sessions, 1);
  auto more = iota(12);
  c.count_admission(c.lookup(more, "late"));
  EXPECT_EQ(c.stats().session_hits, 1);
  f.kv.release(s2);
}

// A fresh id on every request over the same chain: the chain is in use, so
// it never leaves RAM, and the ids are forgotten by age instead.
TEST(PrefixCache, SessionsPastTheCapAreForgottenOldestFirst) {
  Fixture f;
  PrefixCacheOptions options{cap(16)};
  options.max_sessions = 8;
  PrefixCache c(f.kv, f.root, options);
  auto tokens = iota(4);
  const int seq = f.compute(tokens);
  for (int i = 0; i < 100; ++i) f.publish(c, seq, tokens, "id-" + std::to_string(i));
  EXPECT_LE(c.stats().sessions, 8);
  EXPECT_GE(c.stats().sessions, 7);
  EXPECT_TRUE(c.close_session("id-99"));
  EXPECT_TRUE(c.close_session("id-95"));
  EXPECT_FALSE(c.close_session("id-0"));
  f.kv.release(seq);
}

// Blocks running requests hold can keep the index over its cap; the pass
// that finds nothing to free is not run again at every publish.
TEST(PrefixCache, TheCapIsEnforcedInSpacedPasses) {
  const KvCacheShape shape{1, 1, 4, kBlock, DType::F32};
  KvCache kv(shape, 400);
  const BlockHash root = root_hash("test model");
  PrefixCache c(kv, root, {128 * KvCache::block_bytes(shape)});  // 1/64 of it: 2 blocks
  auto publish = [&](int seq, std::span<const int32_t> tokens) {
    ChainCursor cur{root, 0};
    c.publish(cur, tokens, int64_t(tokens.size()), kv.blocks(seq));
  };
  auto held = iota(200 * kBlock);
  const int seq = kv.create_sequence();
  ASSERT_TRUE(kv.reserve(seq, int64_t(held.size())));
  kv.set_length(seq, int64_t(held.size()));
  publish(seq, held);
  EXPECT_EQ(c.stats().cap_passes, 1);
  EXPECT_EQ(c.stats().entries, 200);
  for (int i = 0; i < 50; ++i) publish(seq, held);  // nothing new, nothing to free
  EXPECT_EQ(c.stats().cap_passes, 1);
  kv.release(seq);
  auto one = iota(kBlock, 5000);
  const int s1 = kv.create_sequence();
  ASSERT_TRUE(kv.reserve(s1, kBlock));
  kv.set_length(s1, kBlock);
  publish(s1, one);  // 201 blocks: not yet
  EXPECT_EQ(c.stats().cap_passes, 1);
  auto two = iota(kBlock, 6000);
  const int s2 = kv.create_sequence();
  ASSERT_TRUE(kv.reserve(s2, kBlock));
  kv.set_length(s2, kBlock);
  publish(s2, two);  // 202: a pass, down to 2 below the cap
  EXPECT_EQ(c.stats().cap_passes, 2);
  EXPECT_EQ(c.stats().entries, 126);
  kv.release(s1);
  kv.release(s2);
}

// A lookup says how far the SSD tier continues past RAM; read_back fills a
// sequence's own blocks, which publishing indexes. A child kept in RAM while
// its parent left for the SSD tier counts for the parent once the parent is
// back, so the parent is not evicted before it.
TEST(PrefixCache, BlocksReadBackAreIndexedByPublishingAndAKeptChildCountsAgain) {
  const TempDir dir;
  Fixture f;
  SsdStore ssd(f.ssd_options(dir, 0));
  PrefixCache c(f.kv, f.root, {cap(16)}, &ssd);
  auto tokens = iota(2 * kBlock);
  const auto first = std::span(tokens).first(kBlock);
  const int both = f.compute(tokens);
  for (int32_t b : f.kv.blocks(both)) std::memset(f.kv.block_data(b).data(), 0x11 * (b + 1), f.kv.block_bytes());
  const int parent_seq = f.compute(first);  // the parent, from another sequence
  std::memcpy(f.kv.block_data(f.kv.blocks(parent_seq)[0]).data(), f.kv.block_data(f.kv.blocks(both)[0]).data(),
              f.kv.block_bytes());
  f.publish(c, parent_seq, first);
  f.kv.release(parent_seq);
  ssd.flush();
  EXPECT_EQ(c.evict(1), 1);  // the parent leaves RAM, durable on disk
  ChainCursor after_first{chain_hash(c.root(), first), 1};  // then the child, without it
  c.publish(after_first, tokens, 2 * kBlock, f.kv.blocks(both), {});
  ssd.flush();
  EXPECT_EQ(c.stats().entries, 1);

  PrefixMatch m = c.lookup(tokens);
  EXPECT_EQ(m.tokens, 0);
  EXPECT_EQ(m.on_disk, 2u);
  // Found on disk only: neither a hit nor a miss until the caller knows
  // whether a block read back.
  c.count_admission(m);
  EXPECT_EQ(c.stats().hits + c.stats().misses, 0);
  const int seq = f.kv.create_sequence();
  ASSERT_TRUE(f.kv.reserve(seq, 2 * kBlock));
  EXPECT_EQ(c.read_back(tokens, m.chain, 0, f.kv.blocks(seq)), 2u);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(std::memcmp(f.kv.block_data(f.kv.blocks(seq)[size_t(i)]).data(),
                          f.kv.block_data(f.kv.blocks(both)[size_t(i)]).data(), f.kv.block_bytes()),
              0);
  EXPECT_EQ(c.stats().restored_blocks, 2);
  c.count_reuse(true);
  EXPECT_EQ(c.stats().hits, 1);
  EXPECT_EQ(c.stats().misses, 0);
  f.kv.set_length(seq, 2 * kBlock);
  f.publish(c, seq, tokens);  // the parent is indexed again; the child was already
  EXPECT_EQ(c.stats().entries, 2);
  f.kv.release(seq);
  f.kv.release(both);
  EXPECT_EQ(c.evict(1), 1);  // the child first: the parent counts it now
  EXPECT_EQ(c.lookup(first).tokens, kBlock);
  EXPECT_EQ(c.evict(16), 1);
  EXPECT_EQ(f.kv.blocks_free(), f.kv.blocks_total());
}

// A block whose SSD write was dropped (a full queue) and that stays in RAM
// is never published again; the next turn's blocks, its children, put it
// (and its dropped ancestors) to the disk again before themselves, or the
// whole conversation past it would stay off the disk.
TEST(PrefixCache, ADroppedWriteIsPutAgainBeforeItsChildren) {
  const TempDir dir;
  Fixture f;
  const uint64_t queued_block = kBlock * sizeof(int32_t) + f.kv.block_bytes();  // tokens and payload
  SsdStoreOptions options = f.ssd_options(dir, 0);
  options.queue_bytes = 3 * queued_block;
  SsdStore ssd(options);
  PrefixCache c(f.kv, f.root, {cap(16)}, &ssd);
  const auto turn1 = iota(5 * kBlock), turn2 = iota(6 * kBlock);  // turn 2 continues turn 1
  ssd.set_paused(true);  // the queue holds three blocks: the last two are dropped
  const int seq1 = f.publish_new(c, turn1);
  ssd.set_paused(false);
  ssd.flush();
  const PrefixMatch m1 = c.lookup(turn1);
  EXPECT_EQ(ssd.contains_prefix(m1.chain), 3u);
  EXPECT_TRUE(ssd.awaits_put_again(m1.chain[3]));
  EXPECT_TRUE(ssd.awaits_put_again(m1.chain[4]));
  f.kv.release(seq1);

  // Turn 2 attaches turn 1's blocks from RAM and publishes its new one.
  const PrefixMatch m2 = c.lookup(turn2);
  ASSERT_EQ(m2.tokens, 5 * kBlock);
  const int seq2 = f.continue_turn(c, m2, turn2);
  ssd.flush();
  EXPECT_EQ(ssd.contains_prefix(m2.chain), 6u) << "turn 1's dropped blocks, then turn 2's";
  EXPECT_FALSE(ssd.awaits_put_again(m2.chain[4]));
  f.kv.release(seq2);
}

// A block evicted from the SSD tier (the least recently used there) that
// stays in RAM: the next turn's block, its child, puts it back first, or
// the child would be written where no lookup reads it (a chain is read
// from its start).
TEST(PrefixCache, ABlockEvictedFromDiskIsPutAgainBeforeItsChild) {
  const TempDir dir;
  Fixture f;
  SsdStore ssd(f.ssd_options(dir, 3));
  PrefixCache c(f.kv, f.root, {cap(16)}, &ssd);
  const auto turn1 = iota(kBlock), turn2 = iota(2 * kBlock), other = iota(3 * kBlock, 1000);
  f.kv.release(f.publish_new(c, turn1));
  ssd.flush();
  f.kv.release(f.publish_new(c, other));  // three records more: turn 1's goes
  ssd.flush();
  const PrefixMatch m1 = c.lookup(turn1);
  ASSERT_EQ(m1.tokens, kBlock) << "still in RAM";
  ASSERT_FALSE(ssd.contains(m1.chain[0]));

  const int seq2 = f.continue_turn(c, c.lookup(turn2), turn2);
  ssd.flush();
  EXPECT_EQ(ssd.contains_prefix(c.lookup(turn2).chain), 2u) << "turn 1's block, then turn 2's";
  f.kv.release(seq2);
}

// A sequence whose parent block is in neither RAM nor the SSD tier (its
// own copy of a block computed twice, the indexed copy evicted from both):
// its next block is not written, since no lookup would read it (a chain is
// read from its start), and it would push a readable record out.
TEST(PrefixCache, NoChildIsWrittenUnderABlockInNeitherRamNorTheTier) {
  const TempDir dir;
  Fixture f;
  SsdStore ssd(f.ssd_options(dir, 0));
  PrefixCache c(f.kv, f.root, {cap(16)}, &ssd);
  const auto tokens = iota(2 * kBlock);
  const int seq = f.compute(tokens);
  const BlockHash first = chain_hash(c.root(), std::span(tokens).first(kBlock));
  ChainCursor after_first{first, 1};  // the parent: neither indexed nor on disk
  c.publish(after_first, tokens, 2 * kBlock, f.kv.blocks(seq));
  ssd.flush();
  EXPECT_EQ(c.stats().entries, 1) << "still indexed in RAM";
  EXPECT_EQ(ssd.stats().spills, 0);
  EXPECT_FALSE(ssd.contains(chain_hash(first, std::span(tokens).subspan(kBlock))));
  f.kv.release(seq);
}

// A conversation longer than the SSD tier's cap: its end is evicted as it
// is written, and is not put back at each later turn (only to be evicted
// again: every turn would rewrite the whole overflow), nor is anything
// written under it (unreadable, it would push the chain's start out).
TEST(PrefixCache, AChainLongerThanTheDiskCapIsNotRewrittenEachTurn) {
  const TempDir dir;
  Fixture f;
  SsdStore ssd(f.ssd_options(dir, 2));
  PrefixCache c(f.kv, f.root, {cap(16)}, &ssd);
  f.kv.release(f.publish_new(c, iota(2 * kBlock)));
  for (int blocks = 3; blocks <= 6; ++blocks) {  // one block more each turn
    const auto turn = iota(blocks * kBlock);
    f.kv.release(f.continue_turn(c, c.lookup(turn), turn));
    ssd.flush();
  }
  EXPECT_EQ(ssd.stats().spills, 3) << "each block once, none past the first one evicted";
  EXPECT_EQ(ssd.contains_prefix(c.lookup(iota(6 * kBlock)).chain), 2u) << "the chain's start is kept";
}

}  // namespace
}  // namespace hearth::cache
