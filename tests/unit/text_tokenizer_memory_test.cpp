// What encoding a long prompt costs in memory. The pipeline hands each
// pre-token to the model as it is cut, so the heap it needs beyond the ids it
// returns is a few copies of the text (normalized, byte-mapped), not a string
// per piece: a 4 MB prompt once took ~35 times its size in pieces and matches.
//
// This binary counts the live bytes of every operator new to see that.
#include <gtest/gtest.h>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "text/tokenizer/components.h"
#include "text/tokenizer/tokenizer.h"

namespace {

std::atomic<size_t> live_bytes{0}, peak_bytes{0};

void count(size_t bytes) {
  const size_t now = live_bytes.fetch_add(bytes) + bytes;
  size_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
}

}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  count(malloc_usable_size(p));
  return p;
}
void operator delete(void* p) noexcept {
  if (!p) return;
  live_bytes.fetch_sub(malloc_usable_size(p));
  std::free(p);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }

namespace {

using hearth::text::Tokenizer;
using hearth::text::detail::json;

// A byte-level BPE over every byte, with merges that make the text's words
// single tokens, behind the given pre-tokenizer (Qwen's and GPT-2's shapes).
std::unique_ptr<Tokenizer> byte_level_bpe(const json& pre_tokenizer, const json& normalizer) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[hearth::text::detail::byte_to_unicode(static_cast<uint8_t>(b))] = b;
  json merges = json::array();
  auto merge = [&](const std::string& a, const std::string& b) {
    vocab[a + b] = static_cast<int>(vocab.size());
    merges.push_back(a + " " + b);
  };
  merge("Ġ", "f");
  merge("Ġf", "o");
  merge("Ġfo", "x");
  merge("t", "h");
  merge("th", "e");
  json tok = {{"version", "1.0"},
              {"added_tokens", json::array()},
              {"normalizer", normalizer},
              {"pre_tokenizer", pre_tokenizer},
              {"post_processor", nullptr},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
  return Tokenizer::from_json(tok.dump());
}

// The heap a call needs at its peak beyond what was live before it.
template <typename F>
size_t peak_heap_of(F&& f) {
  const size_t before = live_bytes.load();
  peak_bytes.store(before);
  f();
  return peak_bytes.load() - before;
}

void expect_bounded(const Tokenizer& tok) {
  std::string text;
  while (text.size() < (4u << 20)) text += "the fox, the fox! 12 the\n";
  std::vector<int32_t> ids;
  const size_t peak = peak_heap_of([&] { ids = tok.encode(text, false); });
  ASSERT_GT(ids.size(), text.size() / 8);
  // The ids vector grows by doubling (up to three times their bytes while it
  // moves), and the text is copied by the normalizer: a bound a string per
  // piece (32 bytes each, one piece per 2.5 bytes here) cannot meet.
  const size_t ids_bytes = ids.size() * sizeof(int32_t);
  EXPECT_LT(peak, 3 * ids_bytes + 3 * text.size()) << "text " << text.size() << " B, ids " << ids_bytes << " B";
}

}  // namespace

TEST(EncodeMemory, QwenShapeHoldsNoPiecesOfALongPrompt) {
  const json split = {{"type", "Split"},
                      {"pattern", {{"Regex", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  expect_bounded(*byte_level_bpe({{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}},
                                 {{"type", "NFC"}}));
}

TEST(EncodeMemory, Gpt2ShapeHoldsNoPiecesOfALongPrompt) {
  expect_bounded(*byte_level_bpe({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}, nullptr));
}
