// tokenizer.json (and tokenizer_config.json) from fuzzed bytes, loaded as a
// model directory's are, then used. The input is tokenizer.json, optionally
// followed by a line "\n---config---\n" and tokenizer_config.json.
// Bad files must be refused with std::runtime_error (text/tokenizer/tokenizer.h); a
// tokenizer that loads must encode and decode without failing.
#include <cstdint>
#include <exception>
#include <stdexcept>

#include "fuzz_support.h"
#include "text/tokenizer/tokenizer.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size), config;
  constexpr std::string_view kSeparator = "\n---config---\n";
  if (auto at = json.find(kSeparator); at != std::string_view::npos) {
    config = json.substr(at + kSeparator.size());
    json = json.substr(0, at);
  }
  std::unique_ptr<text::Tokenizer> tok;
  try {
    tok = text::Tokenizer::from_json(json, config);
  } catch (const std::runtime_error&) {
    return 0;  // refused, naming the file
  } catch (const std::exception& e) {
    fuzz::unexpected("Tokenizer::from_json", e.what());
  }
  try {
    for (std::string_view text : {std::string_view("Hello, world! It's 2024: naïve café, 日本語 😀\n\t  x"), json.substr(0, 64)}) {
      const auto ids = tok->encode(text, true);
      for (int32_t id : ids) HEARTH_FUZZ_CHECK(id >= 0 && size_t(id) < tok->vocab_size());
      (void)tok->decode(ids, false);
      (void)tok->decode(ids, true);
      text::StreamDecoder stream(*tok);
      std::string streamed;
      for (int32_t id : ids) streamed += stream.push(id);
      streamed += stream.flush();
      HEARTH_FUZZ_CHECK(streamed == tok->decode(ids, false));
    }
    const int32_t n = int32_t(std::min<size_t>(tok->vocab_size(), 64));
    for (int32_t id = -1; id <= n; ++id) {
      (void)tok->id_to_token(id);
      (void)tok->token_bytes(id);
    }
    (void)tok->bos_id(), (void)tok->eos_id(), (void)tok->unk_id(), (void)tok->pad_id();
  } catch (const std::exception& e) {
    fuzz::unexpected("a tokenizer that loaded", e.what());
  }
  return 0;
}
