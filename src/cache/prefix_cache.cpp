#include "cache/prefix_cache.h"

#include <algorithm>
#include <unordered_set>

namespace hearth::cache {

std::optional<Retention> parse_retention(std::string_view name) {
  if (name == "lru") return Retention::Lru;
  if (name == "cost-size") return Retention::CostSize;
  return std::nullopt;
}

PrefixCache::PrefixCache(KvCache& kv, BlockHash root, PrefixCacheOptions options, SsdStore* ssd,
                         ThreadPool* pool)
    : kv_(kv), root_(root), block_tokens_(kv.shape().block_tokens), opt_(options), ssd_(ssd), pool_(pool) {
  stats_.max_bytes = opt_.max_bytes;
}

PrefixCache::~PrefixCache() {
  for (const auto& [hash, e] : entries_) kv_.unref(e.block);
}

std::vector<BlockHash> PrefixCache::chain(std::span<const int32_t> tokens) const {
  std::vector<BlockHash> out;
  BlockHash parent = root_;
  for (size_t at = 0; at + size_t(block_tokens_) <= tokens.size(); at += size_t(block_tokens_)) {
    parent = chain_hash(parent, tokens.subspan(at, size_t(block_tokens_)));
    out.push_back(parent);
  }
  return out;
}

PrefixMatch PrefixCache::lookup(std::span<const int32_t> tokens, const std::string& session) {
  PrefixMatch m;
  m.chain = chain(tokens);
  std::unique_lock lock(mutex_);
  ++stats_.prefix_scans;
  const uint64_t now = ++clock_;
  const Clock::time_point at = Clock::now();
  for (size_t i = 0; i < m.chain.size(); ++i) {
    auto it = entries_.find(m.chain[i]);
    if (it == entries_.end()) break;
    Entry& e = it->second;
    const auto ids = tokens.subspan(i * size_t(block_tokens_), size_t(block_tokens_));
    if (e.parent != (i > 0 ? m.chain[i - 1] : root_) || !std::ranges::equal(e.tokens, ids)) break;
    e.used = now;
    e.used_at = at;
    m.blocks.push_back(e.block);
  }
  if (ssd_ && !m.blocks.empty()) ssd_->touch(std::span(m.chain).first(m.blocks.size()));
  if (ssd_ && m.blocks.size() < m.chain.size()) restore(tokens, m, lock);
  m.tokens = int64_t(m.blocks.size()) * block_tokens_;
  ++(m.blocks.empty() ? stats_.misses : stats_.hits);
  stats_.hit_tokens += m.tokens;
  if (!session.empty())
    if (auto s = sessions_.find(session); s != sessions_.end()) {
      const Session& cp = s->second;
      const bool continues = cp.blocks <= int64_t(m.chain.size()) && m.chain[size_t(cp.blocks - 1)] == cp.tip;
      ++(continues ? stats_.session_hits : stats_.session_misses);
    }
  return m;
}

void PrefixCache::restore(std::span<const int32_t> tokens, PrefixMatch& m, std::unique_lock<std::mutex>& lock) {
  const size_t from = m.blocks.size();
  const size_t on_disk = ssd_->contains_prefix(std::span(m.chain).subspan(from));
  if (on_disk == 0) return;
  const auto t0 = Clock::now();
  // Held while reading, so that making room for one block never evicts
  // another of this match.
  for (int32_t b : m.blocks) kv_.retain(b);
  std::vector<int32_t> blocks, run;  // read into; the run found, each with a reference of ours
  auto give_back = [&] {
    for (int32_t b : m.blocks) kv_.unref(b);
    for (int32_t b : blocks) kv_.unref(b);
    for (int32_t b : run) kv_.unref(b);
  };
  try {
    // One eviction for all of them: each eviction scans the whole index.
    if (const int64_t short_by = int64_t(on_disk) - kv_.blocks_free(); short_by > 0) evict_locked(short_by);
    blocks.reserve(on_disk);  // no push_back can fail holding a block no list has
    run.reserve(on_disk);
    for (size_t i = 0; i < on_disk; ++i) {
      std::optional<int32_t> block = kv_.allocate();
      if (!block) break;
      blocks.push_back(*block);
    }
    // The reads run on every core: a restore is bound by copying into fresh
    // memory (the kernel zeroes each new page first) as much as by the disk.
    auto parent_of = [&](size_t i) { return i > 0 ? m.chain[i - 1] : root_; };
    std::vector<char> ok(blocks.size(), 0);
    auto ids_of = [&](size_t i) { return tokens.subspan(i * size_t(block_tokens_), size_t(block_tokens_)); };
    auto read = [&](int t, int) {
      const size_t i = from + size_t(t);
      ok[size_t(t)] = ssd_->read(m.chain[i], parent_of(i), ids_of(i), kv_.block_data(blocks[size_t(t)]));
    };
    // Read without the lock, so that stats() and close_session() on other
    // threads do not wait on the disk. The index cannot change meanwhile:
    // only this thread looks up, publishes and evicts; and the blocks read
    // into hold only our references.
    lock.unlock();
    try {
      if (pool_) pool_->run(int(blocks.size()), read);
      else for (int t = 0; t < int(blocks.size()); ++t) read(t, 0);
    } catch (...) {
      lock.lock();
      throw;
    }
    lock.lock();
    // The run that read back whole from the start is indexed; a corrupt
    // block (counted and removed by the store) ends it. A block RAM has
    // already (a child kept while its parent was evicted) continues it with
    // the copy in RAM, now counted as the restored parent's child.
    for (size_t t = 0; t < blocks.size() && ok[t]; ++t) {
      const BlockHash& hash = m.chain[from + t];
      if (!index(hash, parent_of(from + t), ids_of(from + t), blocks[t])) {
        Entry& e = entries_.at(hash);
        if (!e.counted)
          if (auto p = entries_.find(e.parent); p != entries_.end()) ++p->second.children, e.counted = true;
        e.used = clock_, e.used_at = Clock::now();
        kv_.unref(blocks[t]);  // the copy read is not needed
        blocks[t] = e.block;
        kv_.retain(e.block);
      }
      run.push_back(blocks[t]);
      blocks[t] = -1;
    }
  } catch (...) {  // (allocation only: a failed read is a miss)
    std::erase(blocks, -1);
    give_back();
    throw;
  }
  const size_t n = run.size();
  m.blocks.insert(m.blocks.end(), run.begin(), run.end());
  std::erase(blocks, -1);
  run.clear();
  give_back();  // the cache's own references remain
  if (n > 0) {
    stats_.restored_blocks += int64_t(n);
    stats_.restore_ms_last = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
}

bool PrefixCache::index(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> ids, int32_t block) {
  const auto p = entries_.find(parent);
  const bool counted = p != entries_.end();
  const int64_t depth = counted ? p->second.depth + 1 : 1;
  // Inserted first: a failed allocation leaves no reference or count behind.
  if (!entries_.try_emplace(hash, Entry{block, parent, depth, clock_, Clock::now(), 0, counted, {ids.begin(), ids.end()}})
           .second)
    return false;
  if (counted) ++entries_.at(parent).children;  // (the insertion may have moved it)
  kv_.retain(block);
  return true;
}

void PrefixCache::publish(ChainCursor& cursor, std::span<const int32_t> tokens, int64_t filled,
                          std::span<const int32_t> blocks, const std::string& session) {
  std::lock_guard lock(mutex_);
  ++clock_;
  while ((cursor.blocks + 1) * block_tokens_ <= filled) {
    const size_t at = size_t(cursor.blocks * block_tokens_);
    const auto ids = tokens.subspan(at, size_t(block_tokens_));
    const BlockHash h = chain_hash(cursor.parent, ids);
    const int32_t block = blocks[size_t(cursor.blocks)];
    index(h, cursor.parent, ids, block);
    if (auto it = entries_.find(h); it != entries_.end()) it->second.used = clock_;
    if (ssd_) ssd_->put(h, cursor.parent, ids, kv_.block_data(block));  // write-behind
    cursor.parent = h;
    ++cursor.blocks;
  }
  // Also when nothing new filled: a request served from the cache still
  // moves its session to what it reused.
  if (!session.empty() && cursor.blocks > 0) {
    const auto [it, added] = sessions_.try_emplace(session);
    it->second = Session{cursor.parent, cursor.blocks, clock_};
    if (added && sessions_.size() > opt_.max_sessions) forget_oldest_sessions();
  }
  enforce_cap();
}

// Many sessions can share one chain (a fresh id on each request with the
// same system prompt), and a chain in use never leaves RAM: so ids are
// also forgotten by age, the oldest eighth at a time.
void PrefixCache::forget_oldest_sessions() {
  std::vector<std::pair<uint64_t, std::string>> by_age;
  by_age.reserve(sessions_.size());
  for (const auto& [id, s] : sessions_) by_age.emplace_back(s.set, id);
  const size_t drop = std::max<size_t>(1, by_age.size() / 8);
  std::nth_element(by_age.begin(), by_age.begin() + ptrdiff_t(drop - 1), by_age.end());
  for (size_t i = 0; i < drop; ++i) sessions_.erase(by_age[i].second);
}

// publish() runs at every step of every request and a pass walks the whole
// index, so passes are spaced: one frees down to 1/64 below the cap, and
// one that cannot reach the cap (running requests hold the blocks) waits
// for the index to grow by as much before the next.
void PrefixCache::enforce_cap() {
  const int64_t cap = int64_t(opt_.max_bytes / kv_.block_bytes()), size = int64_t(entries_.size());
  if (size <= cap || size < next_cap_pass_) return;
  const int64_t slack = cap / 64;
  evict_locked(size - cap + slack);
  ++stats_.cap_passes;
  const int64_t left = int64_t(entries_.size());
  next_cap_pass_ = left > cap ? left + std::max<int64_t>(slack, 1) : 0;
}

int64_t PrefixCache::evict(int64_t n) {
  std::lock_guard lock(mutex_);
  return evict_locked(n);
}

int64_t PrefixCache::demote_idle(double idle_seconds) {
  if (!ssd_) return 0;
  std::lock_guard lock(mutex_);
  const auto cutoff = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(idle_seconds));
  // Leaves only, like eviction: a parent goes once its idle children have.
  const int64_t n = evict_locked(INT64_MAX, [&](const BlockHash& h, const Entry& e) {
    return e.used_at <= cutoff && ssd_->contains(h);
  });
  stats_.evictions -= n;  // counted as demotions instead
  stats_.demotions += n;
  return n;
}

int64_t PrefixCache::evict_locked(int64_t n, const std::function<bool(const BlockHash&, const Entry&)>& may_go) {
  // Blocks on a session's chain go last. A session whose last block has
  // left RAM is forgotten: it protects nothing, and ids a client makes up
  // would otherwise pile up, each walked here.
  std::unordered_set<BlockHash, BlockHashHasher> kept;
  std::erase_if(sessions_, [&](const auto& item) { return !entries_.contains(item.second.tip); });
  for (const auto& [id, s] : sessions_)
    for (BlockHash h = s.tip;;) {
      auto it = entries_.find(h);
      if (it == entries_.end() || !kept.insert(h).second) break;
      h = it->second.parent;
    }
  struct Candidate {
    bool session;
    int64_t depth;
    uint64_t used;
    BlockHash hash;
  };
  auto candidate = [&](const BlockHash& h, const Entry& e) {
    return Candidate{kept.contains(h), e.depth, e.used, h};
  };
  auto evictable = [&](const BlockHash& h, const Entry& e) {
    return e.children == 0 && kv_.refs(e.block) == 1 && (!may_go || may_go(h, e));
  };
  // A heap of the evictable leaves, worst to keep on top; freeing a leaf can
  // make its parent one.
  auto after = [&](const Candidate& a, const Candidate& b) {
    if (a.session != b.session) return a.session;
    if (opt_.retention == Retention::CostSize && a.depth != b.depth) return a.depth > b.depth;
    return a.used > b.used;
  };
  std::vector<Candidate> heap;
  for (const auto& [h, e] : entries_)
    if (evictable(h, e)) heap.push_back(candidate(h, e));
  std::make_heap(heap.begin(), heap.end(), after);
  int64_t freed = 0;
  while (freed < n && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    auto it = entries_.find(heap.back().hash);
    heap.pop_back();
    const BlockHash parent = it->second.parent;
    const bool counted = it->second.counted;
    kv_.unref(it->second.block);
    entries_.erase(it);
    ++freed;
    if (!counted) continue;
    if (auto p = entries_.find(parent); p != entries_.end() && --p->second.children == 0 &&
                                        evictable(parent, p->second)) {
      heap.push_back(candidate(parent, p->second));
      std::push_heap(heap.begin(), heap.end(), after);
    }
  }
  stats_.evictions += freed;
  return freed;
}

int64_t PrefixCache::reclaimable() const {
  std::lock_guard lock(mutex_);
  int64_t n = 0;
  for (const auto& [h, e] : entries_) n += kv_.refs(e.block) == 1;
  return n;
}

bool PrefixCache::close_session(const std::string& id) {
  std::lock_guard lock(mutex_);
  return sessions_.erase(id) > 0;
}

PrefixCacheStats PrefixCache::stats() const {
  std::lock_guard lock(mutex_);
  PrefixCacheStats s = stats_;
  s.entries = int64_t(entries_.size());
  s.bytes = entries_.size() * kv_.block_bytes();
  s.sessions = int64_t(sessions_.size());
  return s;
}

}  // namespace hearth::cache
