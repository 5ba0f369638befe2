// Tests of hearth::text::ChatTemplate: finding a model's template the way
// transformers does, and the variables a template sees.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "text/chat.h"
#include "text/chat_prompt.h"
#include "text/tokenizer/tokenizer.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using hearth::TempDir;
using hearth::text::ChatTemplate;
using hearth::text::TemplateError;
using json = nlohmann::ordered_json;

const json kMessages = json::parse(R"([{"role": "user", "content": "hi"}])");

TEST(TextChat, LoadsStringTemplateAndSpecialTokens) {
  TempDir d;
  d.write("tokenizer_config.json", R"({
    "bos_token": "<s>",
    "eos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": false},
    "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}"
  })");
  auto t = ChatTemplate::load(d.path());
  EXPECT_EQ(t.bos_token(), "<s>");
  EXPECT_EQ(t.eos_token(), "</s>");
  EXPECT_EQ(t.render(kMessages, nullptr, false), "<s>[user]hi</s>");
}

TEST(TextChat, NamedTemplatesPickDefaultOrByName) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"chat_template": [
    {"name": "default", "template": "default"},
    {"name": "tool_use", "template": "tools: {{ tools|length }}"}
  ]})");
  EXPECT_EQ(ChatTemplate::load(d.path()).render(kMessages, nullptr, false), "default");
  EXPECT_EQ(ChatTemplate::load(d.path(), "tool_use").render(kMessages, json::parse("[1, 2]"), false), "tools: 2");
  EXPECT_THROW(ChatTemplate::load(d.path(), "rag"), std::runtime_error);
}

TEST(TextChat, ChatTemplateJinjaFileWins) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"chat_template": "from config", "eos_token": "E"})");
  d.write("chat_template.jinja", "from file {{ eos_token }}\n");
  EXPECT_EQ(ChatTemplate::load(d.path()).render(kMessages, nullptr, false), "from file E");
}

TEST(TextChat, MissingTemplateIsAnError) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"eos_token": "E"})");
  EXPECT_THROW(ChatTemplate::load(d.path()), std::runtime_error);
  EXPECT_THROW(ChatTemplate::load(d.path() / "nonexistent"), std::runtime_error);
}

TEST(TextChat, VariablesMatchTransformers) {
  auto t = ChatTemplate::from_string(
      "{{ bos_token is defined }}|{{ eos_token }}|{{ tools is none }}|{{ documents is none }}|"
      "{{ add_generation_prompt }}|{{ enable_thinking | default('unset') }}",
      "", "<eos>");
  EXPECT_EQ(t.render(kMessages, nullptr, true), "False|<eos>|True|True|True|unset");
  EXPECT_EQ(t.render(kMessages, nullptr, false, json::parse(R"({"enable_thinking": false})")),
            "False|<eos>|True|True|False|False");
}

TEST(TextChat, KeepsKeyOrderInToolSchemas) {
  auto t = ChatTemplate::from_string("{{ tools[0] | tojson }}");
  json tools = json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2.0}}}])");
  EXPECT_EQ(t.render(kMessages, tools, false),
            R"({"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2.0}}})");
}

TEST(TextChat, ErrorsAreTemplateErrorsWithLines) {
  auto t = ChatTemplate::from_string(
      "{% for m in messages %}\n"
      "{% if m.role == 'user' and loop.index0 % 2 != 0 %}\n"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}\n"
      "{% endif %}{% endfor %}");
  json two_users = json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  try {
    t.render(two_users, nullptr, false);
    FAIL() << "expected a TemplateError";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Raised);
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.message(), "Conversation roles must alternate user/assistant/user/assistant/...");
  }
  EXPECT_THROW(ChatTemplate::from_string("{% if %}"), TemplateError);
}

// Known ids (an assistant turn the server generated) replace the tokens of
// their text; the text around them is tokenized as before.
TEST(TextChatPrompt, KnownIdsReplaceTheirTextInThePrompt) {
  const fs::path model = fs::path(HEARTH_SOURCE_DIR) / "models/stories260k";
  auto tok = hearth::text::Tokenizer::load(model / "tokenizer.json");
  ChatTemplate tmpl = ChatTemplate::load(model);
  hearth::text::ChatPrompt prompt(tmpl, *tok);
  const json messages = json::parse(
      R"([{"role": "user", "content": "Tell a story."}, {"role": "assistant", "content": "The dog ran."},
          {"role": "user", "content": "More!"}])");
  const std::string rendered = prompt.render(messages, nullptr, true);
  const std::string reply = "The dog ran.";
  const size_t at = rendered.find(reply);
  ASSERT_NE(at, std::string::npos);
  // The reply spelled one id per byte, as a model may sample it.
  std::vector<int32_t> spelled;
  for (char c : reply) spelled.push_back(tok->encode(std::string(1, c), false).back());
  const hearth::text::ChatPrompt::KnownIds known[] = {{reply, spelled}};
  const std::vector<int32_t> got = prompt.tokenize(rendered, known);

  std::vector<int32_t> want = prompt.tokenize(rendered.substr(0, at));  // BOS rule included
  want.insert(want.end(), spelled.begin(), spelled.end());
  const auto rest = tok->encode(rendered.substr(at + reply.size()), false);
  want.insert(want.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, want);
  EXPECT_NE(got, prompt.tokenize(rendered));
  // Text the template does not print is skipped.
  const hearth::text::ChatPrompt::KnownIds absent[] = {{"not in the prompt", spelled}};
  EXPECT_EQ(prompt.tokenize(rendered, absent), prompt.tokenize(rendered));
}

}  // namespace
