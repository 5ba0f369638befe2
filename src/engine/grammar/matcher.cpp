#include "engine/grammar/matcher.h"

#include <algorithm>
#include <string>

namespace hearth::grammar {

namespace {

// Past its minimum, an unbounded repetition's count no longer matters:
// held there, stacks that differ only in it are one stack (a* a*, or a
// pattern's free prefix, would otherwise keep one stack per split point).
int32_t counted(const Element& e, int32_t count) { return e.max < 0 && count > e.min ? e.min : count; }

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary,
                 int64_t max_work)
    : grammar_(std::move(grammar)), vocab_(std::move(vocabulary)), max_work_(max_work) {
  Stacks start;
  const int32_t root = grammar_->root();
  for (size_t a = 0; a < grammar_->rule(root).alternatives.size(); ++a) expand({root, int32_t(a), 0, 0, -1}, start);
  tops_ = std::move(start.tops);
  complete_ = start.complete;
  top_index_.of = nullptr;  // it indexed `start`
}

bool Matcher::same_stack(int32_t a, int32_t b) const {
  while (a != b) {
    if (a < 0 || b < 0) return false;
    const Frame &x = frames_[size_t(a)], &y = frames_[size_t(b)];
    if (x.rule != y.rule || x.alt != y.alt || x.pos != y.pos || x.count != y.count) return false;
    a = x.parent;
    b = y.parent;
  }
  return true;
}

uint64_t Matcher::stack_hash(int32_t top) const {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int32_t f = top; f >= 0; f = frames_[size_t(f)].parent) {
    const Frame& x = frames_[size_t(f)];
    for (const int32_t v : {x.rule, x.alt, x.pos, x.count}) {
      h ^= uint64_t(uint32_t(v)) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
      h *= 0xBF58476D1CE4E5B9ull;
    }
  }
  return h;
}

void Matcher::add_top(Frame f, Stacks& out) {
  frames_.push_back(f);
  const int32_t top = int32_t(frames_.size() - 1);
  // A duplicate: another path reached the same stack. The few tops of a
  // usual grammar are compared in turn (the mask's hot path); many are
  // looked up by a hash of their frames, down to the root.
  constexpr size_t kScanned = 16;
  if (out.tops.size() < kScanned) {
    for (int32_t t : out.tops)
      if (same_stack(t, top)) {
        frames_.pop_back();
        return;
      }
  } else {
    auto& index = top_index_.by_hash;
    if (top_index_.of != &out) {
      if (!index.empty()) index.clear();  // clear() sweeps every bucket, even when empty
      for (int32_t t : out.tops) index.emplace(stack_hash(t), t);
      top_index_.of = &out;
    }
    const uint64_t hash = stack_hash(top);
    for (auto [it, end] = index.equal_range(hash); it != end; ++it)
      if (same_stack(it->second, top)) {
        frames_.pop_back();
        return;
      }
    index.emplace(hash, top);
  }
  if (out.tops.size() == kMaxStacks)
    throw GrammarError("the schema is too ambiguous: the output so far can be read in more than " +
                       std::to_string(kMaxStacks) + " ways");
  out.tops.push_back(top);
}

void Matcher::count_step() {
  if (++work_ > max_work_)
    throw GrammarError("the schema is too ambiguous: one token's choices took more than " + std::to_string(max_work_) +
                       " steps to follow");
}

void Matcher::expand(Frame f, Stacks& out) {
  count_step();
  const auto& alt = grammar_->rule(f.rule).alternatives[size_t(f.alt)];
  if (size_t(f.pos) == alt.size()) {
    // The alternative is done: continue in the parent, one repetition more.
    if (f.parent < 0) {
      out.complete = true;
      return;
    }
    Frame up = frames_[size_t(f.parent)];
    up.count = counted(element(up), up.count + 1);
    expand(up, out);
    return;
  }
  const Element& e = alt[size_t(f.pos)];
  const bool rule = e.kind == Element::Kind::Rule;
  if (f.count >= e.min)
    expand({f.rule, f.alt, f.pos + 1, 0, f.parent}, out);
  else if (rule && grammar_->nullable(e.index))  // one repetition that matches nothing
    expand({f.rule, f.alt, f.pos, f.count + 1, f.parent}, out);
  if (e.max >= 0 && f.count >= e.max) return;
  if (!rule || grammar_->first(e.index).any()) add_top(f, out);
}

void Matcher::take(Frame f, int32_t self, uint8_t byte, Stacks& out, bool entering) {
  count_step();
  const auto& alt = grammar_->rule(f.rule).alternatives[size_t(f.alt)];
  if (size_t(f.pos) == alt.size()) return;  // an empty match: expand() took that path
  const Element& e = alt[size_t(f.pos)];
  const bool rule = e.kind == Element::Kind::Rule;
  const bool fits = (rule ? grammar_->first(e.index) : grammar_->set(e.index)).test(byte);
  if (fits && (e.max < 0 || f.count < e.max)) {
    if (!rule) {
      Frame next = f;
      next.count = counted(e, next.count + 1);
      expand(next, out);
    } else {
      if (self < 0) {
        frames_.push_back(f);
        self = int32_t(frames_.size() - 1);
      }
      for (size_t a = 0; a < grammar_->rule(e.index).alternatives.size(); ++a)
        if (grammar_->first(e.index, int32_t(a)).test(byte)) take({e.index, int32_t(a), 0, 0, self}, -1, byte, out, true);
    }
  }
  if (entering && grammar_->skippable(e)) take({f.rule, f.alt, f.pos + 1, 0, f.parent}, -1, byte, out, true);
}

void Matcher::advance(const std::vector<int32_t>& from, uint8_t byte, Stacks& out) {
  out.tops.clear();
  out.complete = false;
  top_index_.of = nullptr;
  for (int32_t t : from) take(frames_[size_t(t)], t, byte, out, false);
}

bool Matcher::step(uint8_t byte) {
  advance(tops_, byte, next_);
  if (next_.tops.empty() && !next_.complete) return false;
  std::swap(tops_, next_.tops);
  complete_ = next_.complete;
  return true;
}

bool Matcher::accept_bytes(std::string_view bytes) {
  work_ = 0;
  const size_t mark = frames_.size();
  const std::vector<int32_t> saved = tops_;
  const bool saved_complete = complete_;
  for (unsigned char c : bytes) {
    if (!step(c)) {
      tops_ = saved;
      complete_ = saved_complete;
      frames_.resize(mark);
      return false;
    }
  }
  // Each byte adds a few frames; most are garbage once read past.
  if (frames_.size() > 2 * compacted_size_ + 4096) compact();
  return true;
}

bool Matcher::accept(int32_t token) {
  if (!vocab_ || token < 0 || size_t(token) >= vocab_->size()) return false;
  const std::string& bytes = vocab_->bytes(token);
  return !bytes.empty() && accept_bytes(bytes);
}

void Matcher::compact() {
  // Copies the frames the stacks still reach, parents first.
  std::vector<int32_t> moved(frames_.size(), -1);
  std::vector<Frame> kept;
  std::vector<int32_t> chain;
  for (int32_t& top : tops_) {
    chain.clear();
    for (int32_t f = top; f >= 0 && moved[size_t(f)] < 0; f = frames_[size_t(f)].parent) chain.push_back(f);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      Frame f = frames_[size_t(*it)];
      if (f.parent >= 0) f.parent = moved[size_t(f.parent)];
      moved[size_t(*it)] = int32_t(kept.size());
      kept.push_back(f);
    }
    top = moved[size_t(top)];
  }
  frames_ = std::move(kept);
  compacted_size_ = frames_.size();
}

}  // namespace hearth::grammar
