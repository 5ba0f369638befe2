// WhisperTokenizer against openai-whisper's special-token layout. The
// expected ids follow whisper/tokenizer.py's get_encoding() (the ranks of
// gpt2.tiktoken (50256) or multilingual.tiktoken (50257), then <|endoftext|>,
// <|startoftranscript|>, the languages, six control tokens, the timestamps)
// with model.py's num_languages; they are also the ids in the Hugging Face
// checkpoints' configs (whisper-tiny: decoder_start_token_id 50258,
// eos_token_id 50257, no_timestamps_token_id 50363; whisper-tiny.en: 50257,
// 50256, 50362; whisper-large-v3: 50258, 50257, 50364). Encoding is compared
// with the reference tiktoken in tests/text/compare_whisper_tokenizer.mjs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "text/tokenizer/whisper.h"
#include "shared_audio.h"
#include "temp_dir.h"

using hearth::text::WhisperTokenizer;
using Ids = std::vector<int32_t>;

namespace {

#define LOAD_OR_SKIP(tok, file, n_vocab)                                         \
  const auto tok##_path = shared_audio(file);                                       \
  if (tok##_path.empty()) GTEST_SKIP() << "shared/audio/" << file << " missing"; \
  const auto tok = WhisperTokenizer::load_tiktoken(tok##_path, n_vocab)

}  // namespace

TEST(WhisperTokenizer, MultilingualSpecialIds) {
  LOAD_OR_SKIP(tok, "multilingual.tiktoken", 51865);
  EXPECT_TRUE(tok.multilingual());
  EXPECT_EQ(tok.num_languages(), 99);
  EXPECT_EQ(tok.eot(), 50257);
  EXPECT_EQ(tok.sot(), 50258);
  EXPECT_EQ(tok.language_token("en"), 50259);
  EXPECT_EQ(tok.translate(), 50358);
  EXPECT_EQ(tok.transcribe(), 50359);
  EXPECT_EQ(tok.sot_lm(), 50360);
  EXPECT_EQ(tok.sot_prev(), 50361);
  EXPECT_EQ(tok.no_speech(), 50362);
  EXPECT_EQ(tok.no_timestamps(), 50363);
  EXPECT_EQ(tok.timestamp_begin(), 50364);
  EXPECT_EQ(tok.vocab_size(), 51865);
  EXPECT_EQ(tok.language_token("su"), 50357);  // the 99th
  EXPECT_EQ(tok.language_token("yue"), -1);    // only in 100-language models
  EXPECT_EQ(tok.token_bytes(50364), "<|0.00|>");
  EXPECT_EQ(tok.token_bytes(51864), "<|30.00|>");
  EXPECT_EQ(tok.token_bytes(51865), "");
}

TEST(WhisperTokenizer, LargeV3SpecialIds) {
  LOAD_OR_SKIP(tok, "multilingual.tiktoken", 51866);
  EXPECT_EQ(tok.num_languages(), 100);
  EXPECT_EQ(tok.eot(), 50257);
  EXPECT_EQ(tok.sot(), 50258);
  EXPECT_EQ(tok.language_token("yue"), 50358);
  EXPECT_EQ(tok.language_token("cantonese"), 50358);
  EXPECT_EQ(tok.translate(), 50359);
  EXPECT_EQ(tok.transcribe(), 50360);
  EXPECT_EQ(tok.sot_prev(), 50362);
  EXPECT_EQ(tok.no_speech(), 50363);
  EXPECT_EQ(tok.no_timestamps(), 50364);
  EXPECT_EQ(tok.timestamp_begin(), 50365);
  EXPECT_EQ(tok.vocab_size(), 51866);
}

TEST(WhisperTokenizer, EnglishOnlySpecialIds) {
  LOAD_OR_SKIP(tok, "gpt2.tiktoken", 51864);
  EXPECT_FALSE(tok.multilingual());
  EXPECT_EQ(tok.num_languages(), 99);  // English-only models still carry the language tokens
  EXPECT_EQ(tok.eot(), 50256);
  EXPECT_EQ(tok.sot(), 50257);
  EXPECT_EQ(tok.language_token("en"), 50258);
  EXPECT_EQ(tok.translate(), 50357);
  EXPECT_EQ(tok.transcribe(), 50358);
  EXPECT_EQ(tok.sot_prev(), 50360);
  EXPECT_EQ(tok.no_speech(), 50361);
  EXPECT_EQ(tok.no_timestamps(), 50362);
  EXPECT_EQ(tok.timestamp_begin(), 50363);
  EXPECT_EQ(tok.sot_sequence(), (Ids{50257}));
  EXPECT_EQ(tok.sot_sequence("fr", "translate"), (Ids{50257}));  // get_tokenizer() drops both
  EXPECT_EQ(tok.encode("Hello world"), (Ids{15496, 995}));
}

TEST(WhisperTokenizer, SotSequenceAndLanguages) {
  LOAD_OR_SKIP(tok, "multilingual.tiktoken", 51865);
  EXPECT_EQ(tok.sot_sequence(), (Ids{50258, 50259, 50359}));
  EXPECT_EQ(tok.sot_sequence("de", "translate"), (Ids{50258, 50261, 50358}));
  EXPECT_EQ(tok.sot_sequence("German"), (Ids{50258, 50261, 50359}));
  EXPECT_THROW(tok.sot_sequence("klingon"), std::invalid_argument);
  EXPECT_THROW(tok.sot_sequence("yue"), std::invalid_argument);
  EXPECT_THROW(tok.sot_sequence("en", "summarize"), std::invalid_argument);
  EXPECT_EQ(tok.language_token("ENGLISH"), 50259);
  EXPECT_EQ(tok.language_token("castilian"), tok.language_token("es"));
  EXPECT_EQ(tok.language_token("mandarin"), 50260);
  EXPECT_EQ(tok.language_token("haitian creole"), tok.language_token("ht"));
  EXPECT_EQ(tok.language_token(""), -1);
  EXPECT_EQ(tok.language_code(50259), "en");
  EXPECT_EQ(tok.language_code(50357), "su");
  EXPECT_EQ(tok.language_code(50258), "");
  EXPECT_EQ(tok.language_code(50358), "");
  EXPECT_EQ(tok.language_code(100), "");
}

TEST(WhisperTokenizer, EncodeIgnoresSpecialsAndDecodeKeepsThem) {
  LOAD_OR_SKIP(tok, "multilingual.tiktoken", 51865);
  // encode_ordinary: "<|en|>" in a text is text.
  const Ids ids = tok.encode("<|en|>");
  EXPECT_GT(ids.size(), 1u);
  for (int32_t id : ids) EXPECT_LT(id, tok.eot());
  EXPECT_EQ(tok.decode(ids), "<|en|>");
  const std::string s = "naïve 中文 😀 it's   spaced\n\n";
  EXPECT_EQ(tok.decode(tok.encode(s)), s);
  // decode() drops timestamps only; decode_with_timestamps() keeps them.
  Ids seq{50258, 50259, 50359, 50364};
  for (int32_t id : tok.encode(" Hi")) seq.push_back(id);
  seq.push_back(50364 + 54);
  seq.push_back(50257);
  EXPECT_EQ(tok.decode(seq), "<|startoftranscript|><|en|><|transcribe|> Hi<|endoftext|>");
  EXPECT_EQ(tok.decode_with_timestamps(seq),
            "<|startoftranscript|><|en|><|transcribe|><|0.00|> Hi<|1.08|><|endoftext|>");
  // Joined bytes are decoded once: a split character is whole again, a
  // dangling lead byte becomes U+FFFD.
  const Ids emoji = tok.encode("😀");
  ASSERT_GT(emoji.size(), 1u);
  EXPECT_EQ(tok.decode(emoji), "😀");
  EXPECT_EQ(tok.decode(Ids(emoji.begin(), emoji.end() - 1)), "\uFFFD");
  // Out of range: decode() drops ids past the timestamps like any timestamp;
  // tiktoken raises for the rest.
  EXPECT_EQ(tok.decode(Ids{51865}), "");
  EXPECT_THROW(tok.decode(Ids{-1}), std::out_of_range);
  EXPECT_THROW(tok.decode_with_timestamps(Ids{51865}), std::out_of_range);
}

TEST(WhisperTokenizer, NonSpeechTokens) {
  LOAD_OR_SKIP(tok, "multilingual.tiktoken", 51865);
  const Ids& ns = tok.non_speech_tokens();
  EXPECT_TRUE(std::is_sorted(ns.begin(), ns.end()));
  EXPECT_EQ(std::adjacent_find(ns.begin(), ns.end()), ns.end());
  const auto has = [&](int32_t id) { return std::binary_search(ns.begin(), ns.end(), id); };
  // Single-byte symbols are the GPT-2 byte tokens: '"' 1, '#' 2, '(' 7, ')' 8,
  // '[' 58, '~' 93.
  for (int32_t id : {1, 2, 7, 8, 58, 93}) EXPECT_TRUE(has(id)) << id;
  EXPECT_TRUE(has(tok.encode(" -")[0]));
  EXPECT_TRUE(has(tok.encode(" '")[0]));
  EXPECT_TRUE(has(tok.encode("♪")[0]));
  // Kept: basic punctuation, and "-" and "'" inside words.
  for (const char* p : {",", ".", "?", "!", "-", "'"}) EXPECT_FALSE(has(tok.encode(p)[0])) << p;
  for (int32_t id : ns) EXPECT_LT(id, tok.eot());
}

TEST(WhisperTokenizer, BadInput) {
  EXPECT_THROW(WhisperTokenizer::load_tiktoken("/nonexistent/x.tiktoken", 51865),
               std::runtime_error);
  const hearth::TempDir dir;
  EXPECT_THROW(WhisperTokenizer::load_tiktoken(dir.write("garbled.tiktoken", "IQ== 0\nthis is not base64 and no rank\n"), 51865),
               std::runtime_error);
  EXPECT_THROW(WhisperTokenizer::load_hf(dir.write("garbled.json", "{\"model\": "), 51865), std::runtime_error);

  const auto multi = shared_audio("multilingual.tiktoken");
  if (multi.empty()) GTEST_SKIP() << "shared/audio/multilingual.tiktoken missing";
  // A vocabulary size no Whisper has, and the English-only size with the
  // multilingual ranks (one token too many).
  EXPECT_THROW(WhisperTokenizer::load_tiktoken(multi, 50000), std::runtime_error);
  EXPECT_THROW(WhisperTokenizer::load_tiktoken(multi, 51864), std::runtime_error);
  EXPECT_THROW(WhisperTokenizer::load_tiktoken(shared_audio("gpt2.tiktoken"), 51865),
               std::runtime_error);
}
