#include "cache/prefix_cache.h"

#include <algorithm>
#include <unordered_set>

namespace hearth::cache {

std::optional<Retention> parse_retention(std::string_view name) {
  if (name == "lru") return Retention::Lru;
  if (name == "cost-size") return Retention::CostSize;
  return std::nullopt;
}

PrefixCache::PrefixCache(KvCache& kv, BlockHash root, PrefixCacheOptions options)
    : kv_(kv), root_(root), block_tokens_(kv.shape().block_tokens), opt_(options) {
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
  const uint64_t now = ++clock_;
  for (const BlockHash& h : m.chain) {
    auto it = entries_.find(h);
    if (it == entries_.end()) break;
    it->second.used = now;
    m.blocks.push_back(it->second.block);
  }
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

bool PrefixCache::index(const BlockHash& hash, const BlockHash& parent, int32_t block) {
  if (entries_.contains(hash)) return false;
  int64_t depth = 1;
  if (auto p = entries_.find(parent); p != entries_.end()) {
    depth = p->second.depth + 1;
    ++p->second.children;
  }
  kv_.retain(block);
  entries_.emplace(hash, Entry{block, parent, depth, clock_, 0});
  return true;
}

void PrefixCache::publish(ChainCursor& cursor, std::span<const int32_t> tokens, int64_t filled,
                          std::span<const int32_t> blocks, const std::string& session) {
  std::lock_guard lock(mutex_);
  ++clock_;
  const int64_t before = cursor.blocks;
  while ((cursor.blocks + 1) * block_tokens_ <= filled) {
    const size_t at = size_t(cursor.blocks * block_tokens_);
    const BlockHash h = chain_hash(cursor.parent, tokens.subspan(at, size_t(block_tokens_)));
    index(h, cursor.parent, blocks[size_t(cursor.blocks)]);
    if (auto it = entries_.find(h); it != entries_.end()) it->second.used = clock_;
    cursor.parent = h;
    ++cursor.blocks;
  }
  if (!session.empty() && cursor.blocks > 0 && cursor.blocks != before)
    sessions_[session] = Session{cursor.parent, cursor.blocks};
  enforce_cap();
}

bool PrefixCache::insert(const BlockHash& hash, const BlockHash& parent, int32_t block) {
  std::lock_guard lock(mutex_);
  ++clock_;
  bool added = index(hash, parent, block);
  enforce_cap();
  return added;
}

bool PrefixCache::contains(const BlockHash& hash) const {
  std::lock_guard lock(mutex_);
  return entries_.contains(hash);
}

void PrefixCache::enforce_cap() {
  const size_t block_bytes = kv_.block_bytes();
  const int64_t over = int64_t(entries_.size()) - int64_t(opt_.max_bytes / block_bytes);
  if (over > 0) evict_locked(over);
}

int64_t PrefixCache::evict(int64_t n) {
  std::lock_guard lock(mutex_);
  return evict_locked(n);
}

int64_t PrefixCache::evict_locked(int64_t n) {
  // Blocks on a session's chain go last.
  std::unordered_set<BlockHash, BlockHashHasher> kept;
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
  // A heap of the evictable leaves, worst to keep on top; freeing a leaf can
  // make its parent one.
  auto after = [&](const Candidate& a, const Candidate& b) {
    if (a.session != b.session) return a.session;
    if (opt_.retention == Retention::CostSize && a.depth != b.depth) return a.depth > b.depth;
    return a.used > b.used;
  };
  std::vector<Candidate> heap;
  for (const auto& [h, e] : entries_)
    if (e.children == 0 && kv_.refs(e.block) == 1) heap.push_back(candidate(h, e));
  std::make_heap(heap.begin(), heap.end(), after);
  int64_t freed = 0;
  while (freed < n && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    auto it = entries_.find(heap.back().hash);
    heap.pop_back();
    const BlockHash parent = it->second.parent;
    kv_.unref(it->second.block);
    entries_.erase(it);
    ++freed;
    if (auto p = entries_.find(parent); p != entries_.end() && --p->second.children == 0 &&
                                        kv_.refs(p->second.block) == 1) {
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
