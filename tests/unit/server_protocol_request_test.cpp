// The Anthropic Messages and OpenAI Responses bodies become the messages the
// chat templates read (no HTTP involved).
#include <gtest/gtest.h>

#include "server/anthropic_request.h"
#include "server/api_error.h"
#include "server/responses_request.h"

namespace hearth::server {
namespace {

using json = nlohmann::ordered_json;

TEST(AnthropicRequest, BlocksBecomeTemplateMessages) {
  const json body = json::parse(R"({
    "max_tokens": 10, "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "kind."}],
    "tools": [{"name": "weather", "description": "d", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
    "stop_sequences": ["END"], "thinking": {"type": "enabled", "budget_tokens": 100},
    "messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "call it", "signature": "x"},
                                        {"type": "text", "text": "Let me see."},
                                        {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Rain"}, {"type": "text", "text": "And?"}]}
    ]})");
  const ApiRequest r = parse_messages_request(body);
  EXPECT_EQ(r.endpoint, Endpoint::Messages);
  EXPECT_EQ(*r.max_tokens, 10);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.template_kwargs["enable_thinking"], true);
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::Required);
  EXPECT_FALSE(r.tool_choice.parallel);
  const json want = json::parse(R"([
    {"role": "system", "content": "Be kind."},
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "Let me see.", "reasoning_content": "call it",
     "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "tool_call_id": "t1", "content": "Rain"},
    {"role": "user", "content": "And?"}
  ])");
  EXPECT_EQ(r.messages, want) << r.messages.dump(1);
  EXPECT_EQ(r.tools, json::parse(R"([{"type": "function", "function": {"name": "weather", "description": "d", "parameters": {"type": "object"}}}])"));
}

TEST(AnthropicRequest, AUserTurnOfOnlyToolResultsAddsNoEmptyMessage) {
  const ApiRequest r = parse_messages_request(json::parse(R"({"max_tokens": 1, "messages": [
    {"role": "user", "content": "x"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}, {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "1"}]},
                                 {"type": "tool_result", "tool_use_id": "b"}]}]})"));
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[2], json::parse(R"({"role": "tool", "tool_call_id": "a", "content": "1"})"));
  EXPECT_EQ(r.messages[3], json::parse(R"({"role": "tool", "tool_call_id": "b", "content": ""})"));
}

std::string rejected_param(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.param;
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(AnthropicRequest, TopPZeroIsGreedyWhateverTheTemperature) {
  const json body = json::parse(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
                                    "top_p": 0, "temperature": 0.7})");
  EXPECT_EQ(*parse_messages_request(body).sampling.temperature, 0.0f);
  const json warm = json::parse(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}], "temperature": 0.7})");
  EXPECT_EQ(*parse_messages_request(warm).sampling.temperature, 0.7f);
}

TEST(AnthropicRequest, Rejections) {
  auto bad = [](const char* body) { return rejected_param([&] { parse_messages_request(json::parse(body)); }); };
  EXPECT_EQ(bad(R"({"messages": [{"role": "user", "content": "x"}]})"), "max_tokens");
  EXPECT_EQ(bad(R"({"max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "image"}]}]})"), "messages[0].content[0].type");
  EXPECT_EQ(bad(R"({"max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f"}]}]})"),
            "messages[0].content[0].type");
  EXPECT_EQ(bad(R"({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f", "input_schema": 3}]})"),
            "tools[0].input_schema");
  EXPECT_EQ(bad(R"({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "bash_20250124", "name": "bash"}]})"),
            "tools[0].type");
  EXPECT_EQ(bad(R"({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "any"}})"), "tool_choice");
  EXPECT_EQ(bad(R"({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}], "thinking": {"type": "on"}})"), "thinking.type");
  // count_tokens does without max_tokens.
  EXPECT_NO_THROW(parse_messages_request(json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"), true));
}

TEST(ResponsesRequest, InputItemsBecomeTemplateMessages) {
  const ResponsesRequest r = parse_responses_request(json::parse(R"({
    "instructions": "Be brief.", "max_output_tokens": 7, "previous_response_id": "resp_1", "store": false,
    "tools": [{"type": "function", "name": "weather", "parameters": {"type": "object"}}],
    "tool_choice": {"type": "function", "name": "weather"}, "reasoning": {"effort": "high"},
    "input": [
      {"role": "user", "content": [{"type": "input_text", "text": "Weather"}, {"type": "input_text", "text": "?"}]},
      {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "short"}],
       "content": [{"type": "reasoning_text", "text": "full"}]},
      {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{\"city\":\"Oslo\"}"},
      {"type": "function_call_output", "call_id": "c1", "output": "Rain"},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It rains."}]}
    ]})"));
  EXPECT_EQ(r.instructions, "Be brief.");
  EXPECT_EQ(r.previous_response_id, "resp_1");
  EXPECT_FALSE(r.store);
  EXPECT_EQ(*r.api.max_tokens, 7);
  EXPECT_EQ(r.api.tool_choice.mode, ToolChoice::Mode::Named);
  EXPECT_EQ(r.api.tool_choice.name, "weather");
  EXPECT_EQ(r.api.template_kwargs["reasoning_effort"], "high");
  const json want = json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "", "reasoning_content": "full",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "Rain"},
    {"role": "assistant", "content": "It rains."}
  ])");
  EXPECT_EQ(r.api.messages, want) << r.api.messages.dump(1);
  EXPECT_EQ(r.echo["max_output_tokens"], 7);
  EXPECT_EQ(r.echo["instructions"], "Be brief.");
}

// A stored response repeats `metadata` and `user`: OpenAI's limits keep an
// echo from being a way to fill the store.
TEST(ResponsesRequest, MetadataAndUserAreHeldToOpenAIsLimits) {
  auto with = [](json extra) {
    json body = {{"input", "hi"}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    return rejected_param([&] { parse_responses_request(body); });
  };
  json sixteen = json::object();
  for (int i = 0; i < 16; ++i) sixteen[std::string(1, 'k') += std::to_string(i)] = std::string(512, 'v');
  sixteen[std::string(64, 'k')] = "\u00e9";
  sixteen.erase("k0");
  EXPECT_NO_THROW(parse_responses_request({{"input", "hi"}, {"metadata", sixteen}, {"user", "u-1"}}));
  json seventeen = sixteen;
  seventeen["k0"] = "v";
  EXPECT_EQ(with({{"metadata", seventeen}}), "metadata");
  EXPECT_EQ(with({{"metadata", {{std::string(65, 'k'), "v"}}}}), "metadata");
  EXPECT_EQ(with({{"metadata", {{"k", std::string(513, 'v')}}}}), "metadata.k");
  EXPECT_EQ(with({{"metadata", {{"k", json::array({json::array()})}}}}), "metadata.k");
  EXPECT_EQ(with({{"metadata", "m"}}), "metadata");
  EXPECT_EQ(with({{"user", json::array({json::array()})}}), "user");
}

TEST(ResponsesRequest, AStringInputIsOneUserMessage) {
  const ResponsesRequest r = parse_responses_request(json::parse(R"({"input": "hi"})"));
  EXPECT_EQ(r.api.messages, json::parse(R"([{"role": "user", "content": "hi"}])"));
  EXPECT_TRUE(r.store);
}

}  // namespace
}  // namespace hearth::server
