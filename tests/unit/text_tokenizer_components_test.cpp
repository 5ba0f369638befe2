// Component tests for the tokenizer pipeline, with the Rust `tokenizers`
// semantics (including the parts the JS reference port does not implement:
// every Split behavior, invert, Metaspace split, single_word).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "text/tokenizer/tokenizer.h"
#include "shared_audio.h"
#include "text/tokenizer/components.h"
#include "text/tokenizer/regex.h"
#include "text/unicode.h"
#include "temp_dir.h"

using namespace hearth::text;
using detail::json;
using Pieces = std::vector<std::string>;

namespace {

Pieces pre(const json& config, const std::string& text, int section = 0) {
  auto p = detail::make_pre_tokenizer(config);
  Pieces pieces;
  p->split(text, section, [&](std::string_view piece) { pieces.emplace_back(piece); });
  return pieces;
}

std::string norm(const json& config, const std::string& text) { return detail::make_normalizer(config)->normalize(text); }

Pieces dec(const json& config, Pieces tokens) {
  detail::make_decoder(config, std::make_shared<detail::Vocab>())->decode_chain(tokens);
  return tokens;
}

json split(const std::string& pattern, const std::string& behavior, bool invert = false, bool regex = false) {
  return json{{"type", "Split"},
              {"pattern", {{regex ? "Regex" : "String", pattern}}},
              {"behavior", behavior},
              {"invert", invert}};
}

}  // namespace

TEST(PreTokenizer, SplitBehaviors) {
  const std::string t = "the-final--countdown";
  EXPECT_EQ(pre(split("-", "Removed"), t), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(pre(split("-", "Isolated"), t), (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(pre(split("-", "MergedWithPrevious"), t), (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(pre(split("-", "MergedWithNext"), t), (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(pre(split("-", "Contiguous"), t), (Pieces{"the", "-", "final", "--", "countdown"}));
}

TEST(PreTokenizer, SplitInvert) {
  EXPECT_EQ(pre(split("\\w+", "Removed", true, true), "Hello, how are you?"),
            (Pieces{"Hello", "how", "are", "you"}));
  EXPECT_EQ(pre(split("\\w+", "Isolated", true, true), "Hi, you"), (Pieces{"Hi", ", ", "you"}));
  EXPECT_EQ(pre(split(" ", "MergedWithPrevious", true), "a b"), (Pieces{"a", " b"}));
}

TEST(PreTokenizer, DigitsPunctuationWhitespace) {
  EXPECT_EQ(pre({{"type", "Digits"}, {"individual_digits", true}}, "Call 123 please"),
            (Pieces{"Call ", "1", "2", "3", " please"}));
  EXPECT_EQ(pre({{"type", "Digits"}, {"individual_digits", false}}, "Call 123 please"),
            (Pieces{"Call ", "123", " please"}));
  EXPECT_EQ(pre({{"type", "Punctuation"}}, "Hey friend!!  How are you?!?"),
            (Pieces{"Hey friend", "!", "!", "  How are you", "?", "!", "?"}));
  EXPECT_EQ(pre({{"type", "Punctuation"}, {"behavior", "contiguous"}}, "Hey!!"), (Pieces{"Hey", "!!"}));
  EXPECT_EQ(pre({{"type", "Whitespace"}}, "How are you doing?"), (Pieces{"How", "are", "you", "doing", "?"}));
  EXPECT_EQ(pre({{"type", "Whitespace"}}, "café über-cool"), (Pieces{"café", "über", "-", "cool"}));
  EXPECT_EQ(pre({{"type", "WhitespaceSplit"}}, "Hey man!\t ok"), (Pieces{"Hey", "man!", "ok"}));
  EXPECT_EQ(pre({{"type", "BertPreTokenizer"}}, "Hey friend!     How are you?!?"),
            (Pieces{"Hey", "friend", "!", "How", "are", "you", "?", "!", "?"}));
  EXPECT_EQ(pre({{"type", "CharDelimiterSplit"}, {"delimiter", "x"}}, "axbxxc"), (Pieces{"a", "b", "c"}));
}

TEST(PreTokenizer, Metaspace) {
  const json always = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(pre(always, "Hey friend!"), (Pieces{"▁Hey", "▁friend!"}));
  EXPECT_EQ(pre(always, "Hey   friend"), (Pieces{"▁Hey", "▁", "▁", "▁friend"}));
  const json nosplit = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", false}};
  EXPECT_EQ(pre(nosplit, "Hey friend"), (Pieces{"▁Hey▁friend"}));
  const json first = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", true}};
  EXPECT_EQ(pre(first, "Hey", 0), (Pieces{"▁Hey"}));
  EXPECT_EQ(pre(first, "Hey", 2), (Pieces{"Hey"}));
  const json never = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "never"}, {"split", true}};
  EXPECT_EQ(pre(never, "Hey friend"), (Pieces{"Hey", "▁friend"}));
  const json legacy = {{"type", "Metaspace"}, {"replacement", "▁"}, {"add_prefix_space", false}};
  EXPECT_EQ(pre(legacy, "a b"), (Pieces{"a", "▁b"}));
}

TEST(PreTokenizer, ByteLevel) {
  EXPECT_EQ(pre({{"type", "ByteLevel"}, {"add_prefix_space", false}}, "Hello my friend, how is your day going?"),
            (Pieces{"Hello", "Ġmy", "Ġfriend", ",", "Ġhow", "Ġis", "Ġyour", "Ġday", "Ġgoing", "?"}));
  EXPECT_EQ(pre({{"type", "ByteLevel"}, {"add_prefix_space", true}}, "Hi"), (Pieces{"ĠHi"}));
  EXPECT_EQ(pre({{"type", "ByteLevel"}, {"use_regex", false}}, "a b\n"), (Pieces{"aĠbĊ"}));
  EXPECT_EQ(pre({{"type", "ByteLevel"}, {"add_prefix_space", false}}, "é"), (Pieces{"Ã©"}));
  // Trailing spaces stay apart from the next word (the \s+(?!\S) rule).
  EXPECT_EQ(pre({{"type", "ByteLevel"}, {"add_prefix_space", false}}, "a   b"), (Pieces{"a", "ĠĠ", "Ġb"}));
}

TEST(PreTokenizer, SequenceAndFixedLength) {
  const json seq = {{"type", "Sequence"},
                    {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Digits"}, {"individual_digits", true}}}}};
  EXPECT_EQ(pre(seq, "ab12 c3"), (Pieces{"ab", "1", "2", "c", "3"}));
  EXPECT_EQ(pre({{"type", "FixedLength"}, {"length", 2}}, "abcdé"), (Pieces{"ab", "cd", "é"}));
}

TEST(Normalizer, UnicodeForms) {
  EXPECT_EQ(norm({{"type", "NFD"}}, "é"), "e\u0301");
  EXPECT_EQ(norm({{"type", "NFC"}}, "e\u0301"), "é");
  EXPECT_EQ(norm({{"type", "NFKC"}}, "ﬁ①"), "fi1");
  EXPECT_EQ(norm({{"type", "NFKD"}}, "é½"), "e\u03011\u20442");
  // Stable runs are copied, but a stable character still composes with a
  // following mark, and Hangul syllables with trailing jamo.
  EXPECT_EQ(norm({{"type", "NFC"}}, "abc e\u0301 中文 \u1100\u1161\u11A8 \uAC00\u11A8 x"), "abc é 中文 각 각 x");
  EXPECT_EQ(norm({{"type", "NFD"}}, "각 é"), "\u1100\u1161\u11A8 e\u0301");
  EXPECT_EQ(norm({{"type", "NFKC"}}, "a\u00A0b ｱ"), "a b ア");
  EXPECT_EQ(norm({{"type", "NFC"}}, "\u0041\u030A\u0301 \u212B"), "\u01FA \u00C5");
}

TEST(Normalizer, CaseAccentsStripReplacePrepend) {
  EXPECT_EQ(norm({{"type", "Lowercase"}}, "HeLLo ÀÉ"), "hello àé");
  EXPECT_EQ(norm({{"type", "Lowercase"}}, "ΟΔΥΣΣΕΥΣ"), "οδυσσευς");  // final sigma
  EXPECT_EQ(norm({{"type", "Lowercase"}}, "İ"), "i\u0307");
  EXPECT_EQ(norm({{"type", "StripAccents"}}, "e\u0301a\u0300"), "ea");
  EXPECT_EQ(norm({{"type", "Strip"}, {"left", true}, {"right", true}}, "  hi \n"), "hi");
  EXPECT_EQ(norm({{"type", "Strip"}, {"left", false}, {"right", true}}, "  hi \n"), "  hi");
  EXPECT_EQ(norm({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}, "a b c"), "a▁b▁c");
  EXPECT_EQ(norm({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}, "a \t\n b"), "a b");
  EXPECT_EQ(norm({{"type", "Prepend"}, {"prepend", "▁"}}, "x"), "▁x");
  EXPECT_EQ(norm({{"type", "Prepend"}, {"prepend", "▁"}}, ""), "");
  const json seq = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}}}}};
  EXPECT_EQ(norm(seq, "Crème Brûlée"), "creme brulee");
  const json bert = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"lowercase", true}};
  EXPECT_EQ(norm(bert, "Héllo\x01 世界\tX"), "hello  世  界  x");
}

TEST(Decoder, Components) {
  EXPECT_EQ(dec({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 1}}, {"  a  ", "b"}), (Pieces{" a ", "b"}));
  EXPECT_EQ(dec({{"type", "Fuse"}}, {"a", "b", "c"}), (Pieces{"abc"}));
  EXPECT_EQ(dec({{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}}, {"▁a▁b"}), (Pieces{" a b"}));
  EXPECT_EQ(dec({{"type", "ByteFallback"}}, {"<0xE4>", "<0xB8>", "<0xAD>", "x", "<0xFF>"}), (Pieces{"中", "x", "\uFFFD"}));
  EXPECT_EQ(dec({{"type", "ByteFallback"}}, {"<0xE4>", "<0xB8>"}), (Pieces{"\uFFFD"}));  // incomplete
  EXPECT_EQ(dec({{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}, {"hel", "##lo", "world", "."}),
            (Pieces{"hel", "lo", " world", "."}));
  EXPECT_EQ(dec({{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}}, {"▁Hey", "▁friend"}),
            (Pieces{"Hey", " friend"}));
  EXPECT_EQ(dec({{"type", "BPEDecoder"}, {"suffix", "</w>"}}, {"hel", "lo</w>", "you</w>"}), (Pieces{"hel", "lo ", "you"}));
  EXPECT_EQ(dec({{"type", "CTC"}, {"pad_token", "<pad>"}, {"word_delimiter_token", "|"}, {"cleanup", true}},
                {"h", "h", "<pad>", "i", "|", "y", "o", "o"}),
            (Pieces{"hi yo"}));
  EXPECT_EQ(dec({{"type", "ByteLevel"}}, {"Hello", "Ġworld", "Ã©"}), (Pieces{"Hello worldé"}));
}

TEST(Regex, OnigurumaTranslation) {
  Regex s(translate_oniguruma("\\s"));
  EXPECT_TRUE(s.full_match("\u0085"));   // White_Space, as in Oniguruma
  EXPECT_FALSE(s.full_match("\uFEFF"));  // not White_Space
  Regex ci(translate_oniguruma("(?i:'s|'t)"));
  EXPECT_TRUE(ci.full_match("'S"));
  EXPECT_FALSE(ci.full_match("'\u017F"));  // ASCII folding only, like the reference
  Regex rep(translate_oniguruma("\\p{N}{1,3}+"));  // Oniguruma: a repeated interval, not possessive
  EXPECT_TRUE(rep.full_match("12345"));
  Regex dot(translate_oniguruma("a.b"));
  EXPECT_TRUE(dot.full_match("a\rb"));
  EXPECT_FALSE(dot.full_match("a\nb"));
  Regex hex(translate_oniguruma("\\h+"));
  EXPECT_TRUE(hex.full_match("0aF9"));
  EXPECT_FALSE(hex.full_match(" "));
  Regex cls(translate_oniguruma("[^\\s\\p{L}]+"));
  EXPECT_TRUE(cls.full_match("12!"));
  Regex uesc(translate_oniguruma("\\u00e9"));
  EXPECT_TRUE(uesc.full_match("é"));
  EXPECT_THROW(Regex("("), std::runtime_error);
  // for_each_match: JavaScript matchAll semantics for empty matches.
  Regex empty("x*");
  std::vector<std::pair<size_t, size_t>> matches;
  empty.for_each_match("axb", [&](size_t s, size_t e) { matches.emplace_back(s, e); });
  EXPECT_EQ(matches, (std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 2}, {2, 2}, {3, 3}}));
}

// A whitespace run longer than PCRE2's default match limit of 10 million
// steps (the body limit can be raised past it): one match, not an error.
TEST(Regex, LongWhitespaceRun) {
  Regex ws(translate_oniguruma("\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"));  // the whitespace alternatives of Llama 3 and Qwen
  const size_t n = 12'000'000;
  std::vector<std::pair<size_t, size_t>> matches;
  ws.for_each_match(std::string(n, ' ') + "a", [&](size_t s, size_t e) { matches.emplace_back(s, e); });
  // The last space is left for the word, as in the reference.
  EXPECT_EQ(matches, (std::vector<std::pair<size_t, size_t>>{{0, n - 1}, {n - 1, n}}));
}

namespace {

std::string tiny_bpe(const std::string& extra) {
  return R"({"version":"1.0","added_tokens":[)" + extra + R"(],
    "normalizer":null,"pre_tokenizer":{"type":"WhitespaceSplit"},"post_processor":null,"decoder":null,
    "model":{"type":"BPE","unk_token":"[UNK]","fuse_unk":true,"vocab":{"[UNK]":0,"h":1,"e":2,"l":3,"o":4,"he":5,"ll":6,"hell":7,"hello":8,"<x>":9},
    "merges":["h e","l l","he ll","hell o"]}})";
}

}  // namespace

TEST(Model, BpeMergesUnknownsAndFuse) {
  auto tok = Tokenizer::from_json(tiny_bpe(""));
  EXPECT_EQ(tok->encode("hello"), (std::vector<int32_t>{8}));
  EXPECT_EQ(tok->encode("hel"), (std::vector<int32_t>{5, 3}));
  EXPECT_EQ(tok->encode("hzzo"), (std::vector<int32_t>{1, 0, 4}));  // fused unknowns
  EXPECT_EQ(tok->decode(std::vector<int32_t>{1, 2}), "h e");          // no decoder: joined by spaces
}

TEST(Model, BpeMetaspaceCutsRespectSpanningTokens) {
  // Long SentencePiece-style words are cut before "▁"; a token holding "a▁"
  // must still be found across such a cut.
  auto tok = Tokenizer::from_json(R"({"added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,
    "decoder":null,"model":{"type":"BPE","vocab":{"▁":0,"a":1,"b":2,"x":3,"a▁":4,"a▁b":5,"▁b":6,"xx":7,"▁x":8},
    "merges":["a ▁","a▁ b","▁ b","x x","▁ x"]}})");
  EXPECT_EQ(tok->encode("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxa▁bxxxx▁xx"),
            (std::vector<int32_t>{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 5, 7, 7, 0, 7}));  // "x x" outranks "▁ x"
  EXPECT_EQ(tok->encode("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxb▁bxxxx"),
            (std::vector<int32_t>{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 2, 6, 7, 7}));
}

TEST(AddedTokens, SingleWordAndStrip) {
  auto sw = Tokenizer::from_json(tiny_bpe(
      R"({"id":9,"content":"<x>","single_word":true,"lstrip":false,"rstrip":false,"normalized":false,"special":true})"));
  EXPECT_EQ(sw->encode("he <x> o"), (std::vector<int32_t>{5, 9, 4}));
  EXPECT_EQ(sw->encode("he<x>o"), (std::vector<int32_t>{5, 0, 4}));  // not a single word: plain text, "<x>" fused to one unknown
  auto strip = Tokenizer::from_json(tiny_bpe(
      R"({"id":9,"content":"<x>","single_word":false,"lstrip":true,"rstrip":true,"normalized":false,"special":true})"));
  EXPECT_EQ(strip->encode("he   <x>   o"), (std::vector<int32_t>{5, 9, 4}));
  EXPECT_TRUE(strip->is_special(9));
  EXPECT_EQ(strip->decode(std::vector<int32_t>{5, 9, 4}, true), "he o");
}

TEST(Model, WordPiece) {
  auto tok = Tokenizer::from_json(R"({"added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"BertPreTokenizer"},
    "post_processor":null,"decoder":{"type":"WordPiece","prefix":"##","cleanup":true},
    "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":5,
    "vocab":{"[UNK]":0,"un":1,"##aff":2,"##able":3,"!":4,"a":5}}})");
  EXPECT_EQ(tok->encode("unaffable!"), (std::vector<int32_t>{0, 4}));  // too long → [UNK]
  EXPECT_EQ(tok->encode("unaff a!"), (std::vector<int32_t>{1, 2, 5, 4}));
  EXPECT_EQ(tok->encode("unx"), (std::vector<int32_t>{0}));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{1, 2, 5, 4}), "unaff a!");
}

TEST(Model, Unigram) {
  auto tok = Tokenizer::from_json(R"({"added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,
    "decoder":null,"model":{"type":"Unigram","unk_id":0,"byte_fallback":false,
    "vocab":[["<unk>",0],["a",-1],["b",-1],["ab",-1.5],["abc",-4],["c",-2]]}})");
  EXPECT_EQ(tok->encode("ab"), (std::vector<int32_t>{3}));        // -1.5 beats -2
  EXPECT_EQ(tok->encode("abc"), (std::vector<int32_t>{3, 5}));    // -3.5 beats -4
  EXPECT_EQ(tok->encode("axxb"), (std::vector<int32_t>{1, 0, 2}));  // unknowns fused
}

TEST(Model, WordLevel) {
  auto tok = Tokenizer::from_json(R"({"added_tokens":[],"normalizer":{"type":"Lowercase"},
    "pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
    "model":{"type":"WordLevel","unk_token":"<unk>","vocab":{"<unk>":0,"hello":1,"world":2,"!":3}}})",
                                  R"({"unk_token":{"content":"<unk>"},"pad_token":"<unk>"})");
  EXPECT_EQ(tok->encode("Hello, World!"), (std::vector<int32_t>{1, 0, 2, 3}));
  EXPECT_EQ(tok->unk_id(), 0);
  EXPECT_EQ(tok->pad_id(), 0);
  EXPECT_EQ(tok->bos_id(), std::nullopt);
}

TEST(PostProcessor, RobertaAndBert) {
  auto make = [](const std::string& post) {
    return Tokenizer::from_json(R"({"added_tokens":[],"normalizer":null,"pre_tokenizer":null,"decoder":null,
      "post_processor":)" + post + R"(,"model":{"type":"BPE","vocab":{"a":0,"<s>":1,"</s>":2},"merges":[]}})");
  };
  auto r = make(R"({"type":"RobertaProcessing","sep":["</s>",2],"cls":["<s>",1]})");
  EXPECT_EQ(r->encode("a"), (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(r->encode("a", false), (std::vector<int32_t>{0}));
  auto seq = make(R"({"type":"Sequence","processors":[{"type":"ByteLevel"},{"type":"BertProcessing","sep":["</s>",2],"cls":["<s>",1]}]})");
  EXPECT_EQ(seq->encode("a"), (std::vector<int32_t>{1, 0, 2}));
}

// tests/fuzz/text_tokenizer_json_fuzz found encode() handing out a
// post-processor's id that the vocabulary does not have; ids and counts a
// malformed file gives are now refused at load, not used or allocated for.
TEST(Tokenizer, IdsOutsideTheVocabularyAreRefused) {
  auto make = [](const std::string& vocab, const std::string& added, const std::string& post) {
    return Tokenizer::from_json(R"({"normalizer":null,"pre_tokenizer":null,"decoder":null,"added_tokens":)" + added +
                                R"(,"post_processor":)" + post + R"(,"model":{"type":"BPE","vocab":)" + vocab +
                                R"(,"merges":[]}})");
  };
  const std::string vocab = R"({"a":0,"<s>":1,"</s>":2})";
  EXPECT_NO_THROW(make(vocab, "[]", R"({"type":"RobertaProcessing","sep":["</s>",2],"cls":["<s>",1]})"));
  EXPECT_THROW(make(vocab, "[]", R"({"type":"RobertaProcessing","sep":["</s>",549560],"cls":["<s>",1]})"),
               std::runtime_error);
  EXPECT_THROW(make(vocab, "[]", R"({"type":"BertProcessing","sep":["</s>",2],"cls":["<s>",-1]})"), std::runtime_error);
  EXPECT_THROW(make(vocab, "[]", R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},
                    {"Sequence":{"id":"A"}}],"special_tokens":{"<s>":{"id":"<s>","ids":[7],"tokens":["<s>"]}}})"),
               std::runtime_error);
  EXPECT_THROW(make(vocab, "[]", R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}}],
                    "special_tokens":{"<s>":{"id":"<s>","ids":[1e300],"tokens":["<s>"]}}})"),
               std::runtime_error);
  // A table of two billion ids is not allocated for one id.
  EXPECT_THROW(make(R"({"a":0,"b":2000000000})", "[]", "null"), std::runtime_error);
  EXPECT_THROW(make(R"({"a":0,"b":1e30})", "[]", "null"), std::runtime_error);
  EXPECT_THROW(make(R"({"a":0,"b":1.5})", "[]", "null"), std::runtime_error);
  EXPECT_EQ(make(R"({"a":0.0,"b":1})", "[]", "null")->encode("ab"), (std::vector<int32_t>{0, 1}));
  EXPECT_THROW(make(vocab, R"([{"id":2000000000,"content":"<x>","special":true}])", "null"), std::runtime_error);
  EXPECT_THROW(make(vocab, R"([{"id":4294967299,"content":"<x>","special":true}])", "null"), std::runtime_error);
  EXPECT_THROW(make(vocab, R"([{"id":1.5,"content":"<x>","special":true}])", "null"), std::runtime_error);
  EXPECT_EQ(make(vocab, R"([{"id":3,"content":"<x>","special":true}])", "null")->encode("a<x>"),
            (std::vector<int32_t>{0, 3}));
  // Numbers where a component wants a count are integers in range.
  EXPECT_THROW(dec(json{{"type", "Strip"}, {"content", " "}, {"start", 1.5}, {"stop", 0}}, {"a"}), std::runtime_error);
  EXPECT_THROW(dec(json{{"type", "Strip"}, {"content", " "}, {"start", 0}, {"stop", -1}}, {"a"}), std::runtime_error);
  EXPECT_THROW(pre(json{{"type", "FixedLength"}, {"length", 1e300}}, "abc"), std::runtime_error);
  EXPECT_EQ(dec(json{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}, {"  a "}), (Pieces{" a "}));
}

TEST(Tiktoken, SyntheticRanks) {
  const hearth::TempDir dir;
  const auto path = dir / "tiny.tiktoken";
  {
    // All 256 single bytes, then "ab" (256), "abc" (257), " a" (258).
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    auto enc = [&](const std::string& s) {
      std::string out;
      size_t i = 0;
      for (; i + 2 < s.size(); i += 3) {
        const unsigned v = (unsigned char)s[i] << 16 | (unsigned char)s[i + 1] << 8 | (unsigned char)s[i + 2];
        out += {b64[v >> 18], b64[(v >> 12) & 63], b64[(v >> 6) & 63], b64[v & 63]};
      }
      if (s.size() - i == 1) {
        const unsigned v = (unsigned char)s[i] << 16;
        out += {b64[v >> 18], b64[(v >> 12) & 63], '=', '='};
      } else if (s.size() - i == 2) {
        const unsigned v = (unsigned char)s[i] << 16 | (unsigned char)s[i + 1] << 8;
        out += {b64[v >> 18], b64[(v >> 12) & 63], b64[(v >> 6) & 63], '='};
      }
      return out;
    };
    for (int b = 0; b < 256; ++b) std::fprintf(f, "%s %d\n", enc(std::string(1, static_cast<char>(b))).c_str(), b);
    std::fprintf(f, "%s 256\n%s 257\n%s 258\n", enc("ab").c_str(), enc("abc").c_str(), enc(" a").c_str());
    std::fclose(f);
  }
  auto tok = Tokenizer::load_tiktoken(path, R"( ?\p{L}+| ?\p{N}+|\s+)", {{"<|end|>", 300}});
  EXPECT_EQ(tok->encode("abc"), (std::vector<int32_t>{257}));
  EXPECT_EQ(tok->encode("abd ab"), (std::vector<int32_t>{256, 'd', ' ', 256}));  // "ab" (256) outranks " a" (258)
  EXPECT_EQ(tok->encode("x<|end|>"), (std::vector<int32_t>{'x', 300}));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{256, 'd', 300}), "abd<|end|>");
  EXPECT_EQ(tok->vocab_size(), 301u);
}

TEST(Tiktoken, Gpt2RankFile) {
  const std::filesystem::path path = shared_audio("gpt2.tiktoken");
  if (path.empty()) GTEST_SKIP() << "shared/audio/gpt2.tiktoken not present";
  const char* gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  auto tok = Tokenizer::load_tiktoken(path, gpt2, {{"<|endoftext|>", 50256}});
  EXPECT_EQ(tok->encode("Hello world"), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(tok->encode("<|endoftext|>"), (std::vector<int32_t>{50256}));
  const std::string s = "naïve 中文 😀 it's   spaced\n\n";
  EXPECT_EQ(tok->decode(tok->encode(s)), s);
}

TEST(StreamDecoder, RandomIdsMatchFullDecode) {
  auto tok = Tokenizer::load(std::string(HEARTH_SOURCE_DIR) + "/models/stories260k/tokenizer.json");
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<int32_t> ids;
    // Past StreamDecoder::kMaxHeld ids held, the window restarts.
    const int n = 1 + static_cast<int>(rng() % (round % 3 ? 40 : 300));
    for (int i = 0; i < n; ++i) {
      // Favour byte-fallback tokens (3..258) to stress partial UTF-8; every
      // fourth round mostly continuation bytes (0x80..0xBF), where a cut
      // must not take one from the character it finishes.
      const int32_t byte = round % 4 == 3 && rng() % 5 ? 0x80 + static_cast<int32_t>(rng() % 64) : static_cast<int32_t>(rng() % 256);
      ids.push_back(rng() % 3 ? 3 + byte : static_cast<int32_t>(rng() % 520));
    }
    for (bool skip : {false, true}) {
      StreamDecoder sd(*tok, skip);
      std::string out;
      for (int32_t id : ids) {
        const std::string piece = sd.push(id);
        EXPECT_TRUE(unicode::is_valid(piece));
        out += piece;
      }
      out += sd.flush();
      EXPECT_EQ(out, tok->decode(ids, skip)) << "round " << round;
    }
  }
}

// A run that keeps the decoded text's end held (invalid bytes end it in
// U+FFFD, clean-up holds a trailing space) used to hold it all until the
// run ended, re-decoding the whole run at every push. It streams now, from
// a bounded window, and still adds up to the full decode.
TEST(StreamDecoder, HeldRunsStreamOutFromABoundedWindow) {
  auto stories = Tokenizer::load(std::string(HEARTH_SOURCE_DIR) + "/models/stories260k/tokenizer.json");
  const int32_t ff = *stories->token_to_id("<0xFF>");
  const std::vector<int32_t> zhong = stories->encode("\u00e9\u4e2d", false);  // é中: byte-fallback tokens
  auto cleanup = Tokenizer::from_json(R"({"added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,
    "decoder":null,"model":{"type":"BPE","vocab":{"a":0," ":1,".":2},"merges":[]}})",
                                      R"({"clean_up_tokenization_spaces": true})");
  struct Case {
    const Tokenizer* tok;
    std::vector<int32_t> ids;
    size_t run_from;  // where the held run starts
  };
  std::vector<Case> cases;
  {
    std::vector<int32_t> ids = stories->encode("Once", false);
    const size_t from = ids.size();
    ids.insert(ids.end(), 2000, ff);
    ids.insert(ids.end(), zhong.begin(), zhong.end());
    ids.push_back(ff);
    ids.insert(ids.end(), zhong.begin(), zhong.end());
    for (int32_t id : stories->encode(" upon", false)) ids.push_back(id);
    cases.push_back({stories.get(), ids, from});
    // Continuation bytes: a cut may come before one once three ids hold no
    // lead byte, as no character begun before it can take it.
    ids.assign(2000, *stories->token_to_id("<0x80>"));
    ids.insert(ids.begin(), *stories->token_to_id("<0xE4>"));
    ids.insert(ids.end(), zhong.begin(), zhong.end());
    cases.push_back({stories.get(), ids, 1});
  }
  {
    std::vector<int32_t> ids{0};
    ids.insert(ids.end(), 2000, 1);
    ids.push_back(2);  // " ." becomes "." under clean-up: the last space was rightly held
    ids.push_back(0);
    cases.push_back({cleanup.get(), ids, 1});
  }
  for (const Case& c : cases) {
    StreamDecoder sd(*c.tok);
    std::string out, before_run;
    size_t widest = 0;
    for (size_t i = 0; i < c.ids.size(); ++i) {
      if (i == c.run_from) before_run = out;
      out += sd.push(c.ids[i]);
      widest = std::max(widest, sd.window());
      if (i == c.run_from + 1500) {
        // Midway, the run's text has come out as it went, all but a window.
        const std::string so_far = c.tok->decode(std::span(c.ids).subspan(0, i + 1));
        EXPECT_GT(out.size() + 3 * StreamDecoder::kMaxHeld + 8, so_far.size());
        EXPECT_GT(out.size(), before_run.size() + 1000);
      }
    }
    out += sd.flush();
    EXPECT_EQ(out, c.tok->decode(c.ids));
    EXPECT_LE(widest, 2 * StreamDecoder::kMaxHeld);
  }
  // A restart must keep a character still incomplete held: here the last
  // few ids (a skipped special token, then three bytes of a four-byte
  // character) decode to nothing but the U+FFFD that stands for it.
  std::vector<int32_t> ids(29, *stories->token_to_id("<0x80>"));
  ids.push_back(*stories->token_to_id("</s>"));
  for (const char* b : {"<0xF0>", "<0x9F>", "<0x98>", "<0x80>"}) ids.push_back(*stories->token_to_id(b));
  StreamDecoder sd(*stories, true);
  std::string out;
  for (int32_t id : ids) out += sd.push(id);
  out += sd.flush();
  EXPECT_EQ(out, stories->decode(ids, true));
  EXPECT_TRUE(out.ends_with("\xF0\x9F\x98\x80")) << out;
}

// tests/fuzz/text_tokenizer_json_fuzz: with a decoder that strips two
// spaces from the text's start, a context of one space decoded to nothing
// and the next space was stripped too; the streamed text lost it.
TEST(StreamDecoder, ContextThatDecodesToNothingIsKept) {
  auto tok = Tokenizer::from_json(R"({"added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,
    "decoder":{"type":"Sequence","decoders":[{"type":"Fuse"},{"type":"Strip","content":" ","start":2,"stop":0}]},
    "model":{"type":"BPE","vocab":{"a":0," ":1,"x":2},"merges":[]}})",
                                  R"({"clean_up_tokenization_spaces": false})");
  for (const std::vector<int32_t>& ids : {std::vector<int32_t>{0, 1, 1, 2}, std::vector<int32_t>{1, 1, 1, 2, 1, 1, 0},
                                          std::vector<int32_t>{0, 1, 1, 1, 1, 2}}) {
    StreamDecoder sd(*tok);
    std::string out;
    for (int32_t id : ids) out += sd.push(id);
    out += sd.flush();
    EXPECT_EQ(out, tok->decode(ids));
  }
}

TEST(Encode, ArbitraryBytesNeverCrash) {
  auto tok = Tokenizer::load(std::string(HEARTH_SOURCE_DIR) + "/models/stories260k/tokenizer.json");
  std::mt19937 rng(11);
  for (int round = 0; round < 500; ++round) {
    std::string s;
    const int n = static_cast<int>(rng() % 64);
    for (int i = 0; i < n; ++i) {
      unsigned char b = static_cast<unsigned char>(rng());
      if (b == 0xEF) b = 'x';  // keep BOM runs out: the decoder drops a leading BOM like TextDecoder
      s.push_back(static_cast<char>(b));
    }
    const auto ids = tok->encode(s, false);
    const std::string clean = unicode::sanitize(s);
    EXPECT_EQ(tok->encode(clean, false), ids);
    // Prepend ▁ + Strip(1) make the round trip exact except for the leading space rule.
    const std::string back = tok->decode(ids);
    EXPECT_EQ(back, clean) << round;
  }
}

TEST(Unicode, Utf8Helpers) {
  EXPECT_EQ(unicode::sanitize("a\xC3"), "a\uFFFD");
  EXPECT_EQ(unicode::sanitize("\xE2\x82\x41"), "\uFFFDA");        // maximal subpart
  EXPECT_EQ(unicode::sanitize("\xF0\x80\x80"), "\uFFFD\uFFFD\uFFFD");  // overlong: each byte
  EXPECT_EQ(unicode::sanitize("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // surrogate
  EXPECT_TRUE(unicode::is_valid("\uFFFD ok"));
  EXPECT_EQ(unicode::complete_prefix("ab\xE4\xB8"), 2u);
  EXPECT_EQ(unicode::complete_prefix("ab\xE4\xB8\xAD"), 5u);
  EXPECT_EQ(unicode::js_trim(" \t x \u3000"), "x");
}
