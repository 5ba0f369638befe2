// The engine's side of the prompt cache: attaching a request's cached
// prefix at admission, reading blocks back from the SSD tier step by step
// (the writer waits meanwhile), demotion and memory pressure, and the
// cache's stats.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_active.h"
#include "engine/memory_plan.h"

namespace hearth {

std::optional<cache::PrefixCacheStats> Engine::cache_stats() const {
  if (!cache_) return std::nullopt;
  return cache_->stats();
}

std::optional<cache::SsdStoreStats> Engine::ssd_stats() const {
  if (!ssd_) return std::nullopt;
  return ssd_->stats();
}

int64_t Engine::longest_durable_prefix_tokens() const {
  return ssd_ ? ssd_->longest_durable_prefix_tokens(cache_->root()) : 0;
}

std::optional<cache::SsdFlushResult> Engine::flush_cache() {
  if (!ssd_) return std::nullopt;
  return ssd_->flush();  // every block published before this call is queued already
}

bool Engine::close_session(const std::string& id) {
  return cache_ && cache_->close_session(id);
}

std::optional<cache::PrefixMatch> Engine::attach_cached_prefix(Active& a) {
  a.published = {cache_->root(), 0};
  // Mean and first-token pooling need the hidden state of tokens a cached
  // prefix would skip; the last token is always computed.
  if (a.request.embed && *a.request.embed != io::Pooling::Last) return std::nullopt;
  const std::span<const int32_t> tokens = a.history();
  const int64_t n = int64_t(tokens.size());
  cache::PrefixMatch m = cache_->lookup(tokens, a.request.session);
  // The last history token is always computed, for its logits: a fully
  // cached history shares all but its last block, and takes a private copy
  // of that one so its last position can be written again.
  const bool whole = m.tokens == n;
  int64_t shared = int64_t(m.blocks.size()) - (whole ? 1 : 0);
  kv_->attach(a.seq, std::span(m.blocks).first(size_t(shared)));
  if (whole) {
    const int32_t last = m.blocks.back();
    kv_->retain(last);  // not evicted while making room for its copy
    std::optional<int32_t> copy;
    try {
      if (free_blocks(1)) copy = kv_->copy_block(last);
    } catch (...) {
      kv_->unref(last);
      throw;
    }
    kv_->unref(last);
    if (copy) {
      try {
        kv_->attach(a.seq, std::span(&*copy, 1));
      } catch (...) {  // (an allocation) the copy goes back
        kv_->unref(*copy);
        throw;
      }
      kv_->unref(*copy);  // the sequence's reference is the only one
      kv_->set_length(a.seq, n - 1);
      ++shared;  // indexed already: nothing to publish
    }
  }
  a.published = {shared > 0 ? m.chain[size_t(shared - 1)] : cache_->root(), shared};
  // The rest is read back from SSD step by step where it is there
  // (plan_step), and shared where another request computes it meanwhile.
  if (!whole) {
    a.on_disk = int64_t(m.on_disk);
    a.chain = m.chain;
  }
  return m;
}

size_t Engine::share_indexed(Active& a, size_t max) {
  const int64_t block_tokens = kv_->shape().block_tokens, n = int64_t(a.history().size());
  const size_t from = size_t(a.computed / block_tokens);
  // Not the block the last history token is in: that one is written again.
  const size_t shareable = std::min(max, size_t((n - 1) / block_tokens) - from);
  const std::vector<int32_t> shared = cache_->indexed_run(a.history(), a.chain, from, shareable);
  for (size_t i = 0; i < shared.size(); ++i) kv_->share_block(a.seq, from + i, shared[i]);
  return shared.size();
}

void Engine::read_back(Active& a) {
  const int64_t block_tokens = kv_->shape().block_tokens, n = int64_t(a.history().size());
  const size_t want = size_t(a.restoring);
  // Blocks another request read back (or computed) since the lookup are
  // shared, not read again; counted before the read, which may throw.
  // (Never the block the last history token is in.)
  const size_t shared = share_indexed(a, want);
  a.computed += int64_t(shared) * block_tokens;
  kv_->set_length(a.seq, a.computed);
  count_cached(a);
  size_t read = 0;
  if (shared < want) {
    const size_t from = size_t(a.computed / block_tokens);
    read = cache_->read_back(a.history(), a.chain, from, kv_->blocks(a.seq).subspan(from, want - shared));
  }
  // A block that did not read back whole ends the run: the rest is computed.
  a.on_disk = shared + read == want ? a.on_disk - a.restoring : 0;
  // The last history token is computed again, for its logits (the block
  // it is in is the sequence's own, and published once it is).
  a.computed = std::min(a.computed + int64_t(read) * block_tokens, n - 1);
  kv_->set_length(a.seq, a.computed);
  count_cached(a);
  publish_blocks(a);
}

void Engine::share_computed(Active& a) {
  const int64_t block_tokens = kv_->shape().block_tokens;
  if (a.chain.empty() || a.computed % block_tokens != 0) return;
  const size_t got = share_indexed(a, SIZE_MAX);
  if (got == 0) return;
  a.computed += int64_t(got) * block_tokens;
  kv_->set_length(a.seq, a.computed);
  count_cached(a);  // (before publishing, which may throw)
  publish_blocks(a);
}

bool Engine::computed_by_another(const Running& running, size_t i) const {
  const Active& a = *running[i];
  const int64_t block_tokens = kv_->shape().block_tokens;
  const size_t next = size_t(a.computed / block_tokens);
  // (the block its last history token is in is its own: never shared)
  const size_t last = size_t((int64_t(a.history().size()) - 1) / block_tokens);
  if (a.computed % block_tokens != 0 || next >= std::min(a.chain.size(), last)) return false;
  const int64_t begin = a.computed, end = begin + block_tokens;  // the block it would compute next
  for (size_t j = 0; j < i; ++j) {
    const Active& other = *running[j];
    // The same hash: the same tokens, after the same prefix.
    if (other.planned > 0 && next < other.chain.size() && other.chain[next] == a.chain[next] &&
        other.computed < end && other.computed + other.planned > begin)
      return true;
  }
  return false;
}

void Engine::publish_blocks(Active& a) {
  if (cache_) cache_->publish(a.published, a.history(), a.computed, kv_->blocks(a.seq), a.request.session);
}

void Engine::count_reuse(Active& a, bool reused) {
  a.reuse_pending = false;
  cache_->count_reuse(reused);
}

void Engine::pause_ssd_writes(bool pause) {
  if (!ssd_ || pause == ssd_paused_) return;
  ssd_->set_paused(pause);
  ssd_paused_ = pause;
}

void Engine::count_cached(Active& a) {
  const int64_t taken = std::min(a.computed, a.decoding.prompt_tokens());
  if (taken <= a.accounted) return;
  if (a.reuse_pending) count_reuse(a, true);  // the first it took from the cache
  const int64_t more = taken - a.accounted;
  a.accounted = taken;
  std::lock_guard lock(mutex_);
  stats_.cached_tokens_total += more;
  a.info.cached_tokens += more;
}

void Engine::tidy_cache() {
  // Demoted blocks' pages go back to the system too: they are on disk now.
  if (ssd_) kv_->discard_free(cache_->demote_idle(options_.ssd_demote_idle_seconds));
  // Under memory pressure the cache gives blocks back, and their pages go
  // back to the system; requests are never failed for cache memory.
  const size_t total = meminfo("MemTotal:");
  size_t available = memory_available();
  const size_t floor = options_.min_available_bytes ? options_.min_available_bytes : total / 100 * 15;
  if (total == 0 || available >= floor) return;
  // The SSD tier's waiting writes are copies: they go first (their pages
  // need not go back to the system at once: measured again).
  if (ssd_ && ssd_->drop_queue() > 0) available = memory_available();
  if (available >= floor) return;
  const int64_t want = int64_t((floor - available) / kv_->block_bytes()) + 1;
  const int64_t freed = cache_->evict(want);
  kv_->discard_free(freed);
  std::lock_guard lock(mutex_);
  stats_.pressure_evictions += freed;
}

}  // namespace hearth
