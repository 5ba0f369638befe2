#include "cache/prefix_cache.h"

#include <algorithm>
#include <unordered_set>

#include "core/elapsed.h"

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
  std::lock_guard lock(mutex_);
  ++stats_.prefix_scans;
  m.blocks = walk(tokens, m.chain, 0, m.chain.size());
  if (ssd_ && m.blocks.size() < m.chain.size()) m.on_disk = ssd_->contains_prefix(std::span(m.chain).subspan(m.blocks.size()));
  // Used now, also the blocks on disk: they are read back over the next
  // steps, and the store's eviction must not take them meanwhile.
  if (ssd_) ssd_->touch(std::span(m.chain).first(m.blocks.size() + m.on_disk));
  m.tokens = int64_t(m.blocks.size()) * block_tokens_;
  if (!session.empty())
    if (auto s = sessions_.find(session); s != sessions_.end()) {
      const Session& cp = s->second;
      m.continues_session = cp.blocks <= int64_t(m.chain.size()) && m.chain[size_t(cp.blocks - 1)] == cp.tip;
    }
  return m;
}

void PrefixCache::count_admission(const PrefixMatch& m) {
  std::lock_guard lock(mutex_);
  if (!m.blocks.empty()) ++stats_.hits;
  stats_.hit_tokens += m.tokens;
  if (m.continues_session) ++(*m.continues_session ? stats_.session_hits : stats_.session_misses);
}

void PrefixCache::count_reuse(bool reused) {
  std::lock_guard lock(mutex_);
  ++(reused ? stats_.hits : stats_.misses);
}

std::vector<int32_t> PrefixCache::walk(std::span<const int32_t> tokens, std::span<const BlockHash> chain, size_t from,
                                      size_t max) {
  std::vector<int32_t> run;
  const uint64_t now = ++clock_;
  const Clock::time_point at = Clock::now();
  for (size_t i = from; i < chain.size() && run.size() < max; ++i) {
    auto it = entries_.find(chain[i]);
    if (it == entries_.end()) break;
    Entry& e = it->second;
    const auto ids = tokens.subspan(i * size_t(block_tokens_), size_t(block_tokens_));
    if (e.parent != (i > 0 ? chain[i - 1] : root_) || !std::ranges::equal(e.tokens, ids)) break;
    e.used = now;
    e.used_at = at;
    run.push_back(e.block);
  }
  return run;
}

std::vector<int32_t> PrefixCache::indexed_run(std::span<const int32_t> tokens, std::span<const BlockHash> chain,
                                              size_t from, size_t max) {
  std::lock_guard lock(mutex_);
  std::vector<int32_t> run = walk(tokens, chain, from, max);
  stats_.hit_tokens += int64_t(run.size()) * block_tokens_;
  return run;
}

size_t PrefixCache::read_back(std::span<const int32_t> tokens, std::span<const BlockHash> chain, size_t from,
                              std::span<const int32_t> into) {
  if (!ssd_ || into.empty()) return 0;
  const auto t0 = Clock::now();
  // Without the cache's lock: the blocks are the caller's, and the store
  // has its own, so stats() and close_session() never wait on the disk.
  std::vector<char> ok(into.size(), 0);
  auto read = [&](int t, int) {
    const size_t i = from + size_t(t);
    ok[size_t(t)] = ssd_->read(chain[i], i > 0 ? chain[i - 1] : root_,
                               tokens.subspan(i * size_t(block_tokens_), size_t(block_tokens_)),
                               kv_.block_data(into[size_t(t)]));
  };
  // The reads run on every core: a restore is bound by copying into fresh
  // memory (the kernel zeroes each new page first) as much as by the disk.
  if (pool_) pool_->run(int(into.size()), read);
  else for (int t = 0; t < int(into.size()); ++t) read(t, 0);
  const size_t n = size_t(std::find(ok.begin(), ok.end(), 0) - ok.begin());
  std::lock_guard lock(mutex_);
  if (n > 0) {
    stats_.restored_blocks += int64_t(n);
    stats_.hit_tokens += int64_t(n) * block_tokens_;
    stats_.restore_ms_total += ms_since(t0);
  }
  return n;
}

bool PrefixCache::index(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> ids, int32_t block) {
  const auto p = entries_.find(parent);
  const bool counted = p != entries_.end();
  const int64_t depth = counted ? p->second.depth + 1 : 1;
  // Inserted first: a failed allocation leaves no reference or count behind.
  const auto [it, added] =
      entries_.try_emplace(hash, Entry{block, parent, depth, clock_, Clock::now(), 0, counted, {ids.begin(), ids.end()}});
  if (!added) {
    Entry& e = it->second;
    if (!e.counted && counted && e.parent == parent) {
      ++entries_.at(parent).children;
      e.counted = true;
      e.depth = depth;
    }
    return false;
  }
  if (counted) ++entries_.at(parent).children;  // (the insertion may have moved it)
  kv_.retain(block);
  ++blocks_indexed_;
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
    if (ssd_) {  // write-behind
      if (put_missing_again(cursor.parent)) ssd_->put(h, cursor.parent, ids, kv_.block_data(block));
    }
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

// A block found in RAM is never published again, so without this a write
// dropped for a full queue would keep every later turn of its conversation
// off the disk, and an evicted record would leave them unreadable there.
// Only once the queue has room (a full one would drop the run again at
// once), and only until the first block the queue drops again. A chain
// longer than the tier's cap cannot be held whole: its evicted end is not
// put back at every turn, only to be evicted again, and nothing is put
// under it (a record no lookup reads would push a readable one out).
bool PrefixCache::put_missing_again(const BlockHash& hash) {
  if (hash == root_ || !ssd_->awaits_put_again(hash)) return true;
  const auto last = entries_.find(hash);
  if (last == entries_.end()) return false;  // not in RAM either: its children would never be read
  if (!ssd_->holds(size_t(last->second.depth) + 1) || !ssd_->has_queue_room()) return false;
  std::vector<const std::pair<const BlockHash, Entry>*> run;  // youngest first
  for (BlockHash h = hash; h != root_ && ssd_->awaits_put_again(h);) {
    const auto it = entries_.find(h);
    if (it == entries_.end()) return false;  // not in RAM either: a future miss
    run.push_back(&*it);
    h = it->second.parent;
  }
  for (auto e = run.rbegin(); e != run.rend(); ++e)
    if (!ssd_->put((*e)->first, (*e)->second.parent, (*e)->second.tokens, kv_.block_data((*e)->second.block)))
      return false;
  return true;
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
  // A block a sequence holds keeps its indexed ancestors, as in evict():
  // those of a sequence that holds its whole chain are its own anyway, but
  // a block computed twice makes the other copy's chain the parent of the
  // later blocks of the sequence that computed it second.
  std::unordered_set<BlockHash, BlockHashHasher> kept;
  for (const auto& [h, e] : entries_) {
    if (kv_.refs(e.block) == 1) continue;
    for (const Entry* child = &e; child->counted;) {
      const auto p = entries_.find(child->parent);
      if (p == entries_.end() || !kept.insert(p->first).second) break;
      child = &p->second;
    }
  }
  int64_t n = 0;
  for (const auto& [h, e] : entries_) n += kv_.refs(e.block) == 1 && !kept.contains(h);
  return n;
}

uint64_t PrefixCache::blocks_indexed() const {
  std::lock_guard lock(mutex_);
  return blocks_indexed_;
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
