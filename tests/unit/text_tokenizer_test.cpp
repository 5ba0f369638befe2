#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "text/tokenizer/tokenizer.h"

using hearth::text::StreamDecoder;
using hearth::text::Tokenizer;

namespace {

const std::string kStories = std::string(HEARTH_SOURCE_DIR) + "/models/stories260k/tokenizer.json";

const Tokenizer& stories() {
  static auto tok = Tokenizer::load(kStories);
  return *tok;
}

std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip = false) {
  StreamDecoder sd(tok, skip);
  std::string out;
  for (int32_t id : ids) out += sd.push(id);
  out += sd.flush();
  return out;
}

}  // namespace

TEST(Stories260k, EncodesLikeSentencePiece) {
  const auto& tok = stories();
  EXPECT_EQ(tok.encode("Once upon a time"), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok.encode("Once upon a time", false), (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(tok.encode(""), (std::vector<int32_t>{1}));
}

TEST(Stories260k, DecodesAndRoundTrips) {
  const auto& tok = stories();
  const std::vector<int32_t> ids{1, 403, 407, 261, 378};
  EXPECT_EQ(tok.decode(ids, true), "Once upon a time");
  for (const std::string s : {"Hello, world!", "  two  spaces", "emoji 😀 and 中文", "tab\tnew\nline", "x"}) {
    const auto enc = tok.encode(s, false);
    EXPECT_EQ(tok.decode(enc), s) << s;
    EXPECT_EQ(stream_all(tok, enc), tok.decode(enc)) << s;
  }
}

TEST(Stories260k, SpecialTokensAndConfig) {
  const auto& tok = stories();
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_EQ(tok.bos_token(), "<s>");
  EXPECT_EQ(tok.eos_token(), "</s>");
  EXPECT_EQ(tok.vocab_size(), 512u);
  EXPECT_EQ(tok.token_to_id("<unk>"), 0);
  EXPECT_EQ(tok.id_to_token(1), "<s>");
  EXPECT_EQ(tok.id_to_token(100000), "");
  EXPECT_EQ(tok.id_to_token(-1), "");
  // "</s>" inside user text is the special token.
  const auto ids = tok.encode("a</s>b", false);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 2), ids.end());
  EXPECT_EQ(ids, (std::vector<int32_t>{261, 2, 268}));  // "b" gets its own ▁ like the reference
  EXPECT_EQ(tok.decode(ids, true), "a b");
}

TEST(Stories260k, InvalidUtf8IsReplaced) {
  const auto& tok = stories();
  const std::string bad = "ab\xff\xc3(\xe2\x82";
  const auto ids = tok.encode(bad, false);
  EXPECT_EQ(tok.encode("ab\xEF\xBF\xBD\xEF\xBF\xBD(\xEF\xBF\xBD", false), ids);
  EXPECT_EQ(tok.decode(ids), "ab\xEF\xBF\xBD\xEF\xBF\xBD(\xEF\xBF\xBD");
}

TEST(Stories260k, StreamHoldsIncompleteUtf8) {
  const auto& tok = stories();
  const auto ids = tok.encode("😀", false);  // byte-fallback tokens
  ASSERT_GE(ids.size(), 4u);
  StreamDecoder sd(tok);
  std::string out;
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    const std::string piece = sd.push(ids[i]);
    EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos);
    out += piece;
  }
  out += sd.push(ids.back());
  out += sd.flush();
  EXPECT_EQ(out, tok.decode(ids));
}

TEST(Tokenizer, BadFileNamesTheFile) {
  try {
    Tokenizer::from_json("{\"model\": 3}", "", "/x/tokenizer.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/x/tokenizer.json"), std::string::npos);
  }
  EXPECT_THROW(Tokenizer::load("/nonexistent/tokenizer.json"), std::runtime_error);
  EXPECT_THROW(Tokenizer::from_json("{not json", ""), std::runtime_error);
}

// The models read their integer settings as the other components do: a
// float or a negative count is refused by name, not converted.
TEST(Tokenizer, AModelSettingThatIsNoCountIsRefused) {
  for (const char* bad : {"-3", "3.5"}) {
    const std::string json = std::string(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1},)") +
                             R"( "max_input_chars_per_word": )" + bad + "}}";
    try {
      Tokenizer::from_json(json, "");
      FAIL() << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("max_input_chars_per_word"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(Tokenizer::from_json(
      R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}, "max_input_chars_per_word": 3}})", ""));
}

TEST(Tokenizer, ConcurrentEncodeAgrees) {
  // The word cache and regex match state are shared / per-thread; results
  // must not depend on which thread encodes.
  const auto& tok = stories();
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back("Once upon a time " + std::to_string(i * 7919) + " there was a cat named Tom" + std::string(i % 5, ' '));
  std::vector<std::vector<int32_t>> want;
  for (const auto& t : texts) want.push_back(tok.encode(t));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int th = 0; th < 4; ++th)
    threads.emplace_back([&, th] {
      for (int round = 0; round < 5; ++round)
        for (size_t i = (th * 37) % texts.size(), n = 0; n < texts.size(); ++n, i = (i + 1) % texts.size())
          if (tok.encode(texts[i]) != want[i]) ++mismatches;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}
