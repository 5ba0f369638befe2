// Request parsing and validation for the OpenAI routes (no HTTP involved).
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/openai_request.h"
#include "text/json_shape.h"

namespace hearth::server {
namespace {

using json = nlohmann::ordered_json;

json chat(json extra = json::object()) {
  json body = {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

// Returns the ApiError's param (and checks it is a 400).
std::string rejected(const json& body, bool completion = false) {
  try {
    completion ? parse_completion_request(body) : parse_chat_request(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << body.dump();
    EXPECT_EQ(e.type, "invalid_request_error");
    return e.param;
  }
  ADD_FAILURE() << "accepted: " << body.dump();
  return "";
}

TEST(ServerRequest, ChatDefaultsAndFields) {
  ApiRequest r = parse_chat_request(chat());
  EXPECT_EQ(r.endpoint, Endpoint::Chat);
  EXPECT_EQ(r.messages.size(), 1u);
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.logprobs, -1);

  r = parse_chat_request(chat({{"max_tokens", 5},
                               {"temperature", 0.5},
                               {"top_p", 0.9},
                               {"top_k", 40},
                               {"min_p", 0.05},
                               {"xtc_probability", 0.5},
                               {"xtc_threshold", 0.2},
                               {"repetition_penalty", 1.1},
                               {"repetition_context_size", 30},
                               {"presence_penalty", 0.5},
                               {"presence_context_size", 10},
                               {"frequency_penalty", -0.5},
                               {"frequency_context_size", 64},
                               {"seed", 7},
                               {"logit_bias", {{"42", -100}, {"7", 2.5}}},
                               {"stop", "END"},
                               {"stream", true},
                               {"stream_options", {{"include_usage", true}}},
                               {"logprobs", true},
                               {"top_logprobs", 4},
                               {"chat_template_kwargs", {{"enable_thinking", false}}},
                               {"reasoning_effort", "high"},
                               {"unknown_field", {1, 2, 3}}}));
  EXPECT_EQ(*r.max_tokens, 5);
  SamplingParams p;
  r.sampling.apply_to(p);
  EXPECT_FLOAT_EQ(p.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.top_p, 0.9f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.xtc_probability, 0.5f);
  EXPECT_FLOAT_EQ(p.xtc_threshold, 0.2f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
  EXPECT_EQ(p.repetition_context_size, 30);
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.5f);
  EXPECT_EQ(p.presence_context_size, 10);
  EXPECT_FLOAT_EQ(p.frequency_penalty, -0.5f);
  EXPECT_EQ(p.frequency_context_size, 64);
  EXPECT_EQ(*p.seed, 7u);
  ASSERT_EQ(p.logit_bias.size(), 2u);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.logprobs, 4);
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
  EXPECT_EQ(r.template_kwargs["reasoning_effort"], "high");
}

TEST(ServerRequest, UnsetFieldsKeepServerDefaults) {
  SamplingParams p;
  p.temperature = 0.3f;
  p.top_k = 9;
  p.repetition_penalty = 1.2f;
  parse_chat_request(chat({{"top_p", 0.5}, {"temperature", nullptr}})).sampling.apply_to(p);
  EXPECT_FLOAT_EQ(p.temperature, 0.3f);  // null counts as unset
  EXPECT_EQ(p.top_k, 9);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.2f);
  EXPECT_FLOAT_EQ(p.top_p, 0.5f);
}

TEST(ServerRequest, ContentPartsAreJoined) {
  json body = chat();
  body["messages"] = json::array({{{"role", "user"},
                                   {"content", json::array({{{"type", "text"}, {"text", "a"}},
                                                            {{"type", "text"}, {"text", "b"}}})}},
                                  {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array()}}});
  ApiRequest r = parse_chat_request(body);
  EXPECT_EQ(r.messages[0]["content"], "ab");
  EXPECT_EQ(r.messages[1]["content"], "");
  EXPECT_TRUE(r.messages[1].contains("tool_calls"));
}

// What the SDKs' model_dump() sends back: optional keys as null. Templates
// test "'tool_calls' in message" and then iterate it, which a null fails.
TEST(ServerRequest, NullKeysOfAMessageAreKeysNotSent) {
  json body = chat();
  body["messages"].push_back({{"role", "assistant"}, {"content", "Hello"}, {"tool_calls", nullptr},
                              {"name", nullptr}, {"refusal", nullptr}, {"audio", nullptr}});
  const ApiRequest r = parse_chat_request(body);
  EXPECT_EQ(r.messages[1], json({{"role", "assistant"}, {"content", "Hello"}}));
}

TEST(ServerRequest, MaxCompletionTokensWins) {
  EXPECT_EQ(*parse_chat_request(chat({{"max_tokens", 5}, {"max_completion_tokens", 9}})).max_tokens, 9);
  EXPECT_EQ(*parse_chat_request(chat({{"max_tokens", 5.0}})).max_tokens, 5);  // integral floats are integers
}

TEST(ServerRequest, TopPZeroIsGreedy) {
  SamplingParams p;
  parse_chat_request(chat({{"top_p", 0}})).sampling.apply_to(p);
  EXPECT_EQ(p.temperature, 0.0f);
}

TEST(ServerRequest, RejectsWithTheFieldName) {
  EXPECT_EQ(rejected(json{{"model", "m"}}), "messages");
  // A kwarg may add template variables, not replace the checked ones.
  for (const char* own : {"messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token"})
    EXPECT_EQ(rejected(chat({{"chat_template_kwargs", {{own, json::array()}}}})), "chat_template_kwargs") << own;
  EXPECT_EQ(rejected(chat({{"messages", json::array()}})), "messages");
  EXPECT_EQ(rejected(chat({{"messages", "hi"}})), "messages");
  EXPECT_EQ(rejected(chat({{"messages", json::array({1})}})), "messages[0]");
  EXPECT_EQ(rejected(chat({{"messages", json::array({{{"role", "x"}, {"content", "a"}}})}})), "messages[0].role");
  EXPECT_EQ(rejected(chat({{"messages", json::array({{{"role", "user"}}})}})), "messages[0].content");
  EXPECT_EQ(rejected(chat({{"messages", json::array({{{"role", "user"}, {"content", 5}}})}})), "messages[0].content");
  EXPECT_EQ(rejected(chat({{"temperature", "1"}})), "temperature");
  EXPECT_EQ(rejected(chat({{"temperature", 2.5}})), "temperature");
  EXPECT_EQ(rejected(chat({{"temperature", true}})), "temperature");
  EXPECT_EQ(rejected(chat({{"top_p", 1.01}})), "top_p");
  EXPECT_EQ(rejected(chat({{"top_k", 1.5}})), "top_k");
  EXPECT_EQ(rejected(chat({{"top_k", -2}})), "top_k");
  EXPECT_EQ(rejected(chat({{"min_p", 2}})), "min_p");
  EXPECT_EQ(rejected(chat({{"xtc_probability", -1}})), "xtc_probability");
  EXPECT_EQ(rejected(chat({{"xtc_threshold", 0.6}})), "xtc_threshold");
  EXPECT_EQ(rejected(chat({{"repetition_penalty", -0.1}})), "repetition_penalty");
  EXPECT_EQ(rejected(chat({{"presence_penalty", -2.5}})), "presence_penalty");
  EXPECT_EQ(rejected(chat({{"frequency_penalty", 9}})), "frequency_penalty");
  EXPECT_EQ(rejected(chat({{"frequency_context_size", 0}})), "frequency_context_size");
  EXPECT_EQ(rejected(chat({{"max_tokens", 0}})), "max_tokens");
  EXPECT_EQ(rejected(chat({{"max_completion_tokens", -1}})), "max_completion_tokens");
  EXPECT_EQ(rejected(chat({{"n", 3}})), "n");
  EXPECT_EQ(rejected(chat({{"seed", 1.5}})), "seed");
  EXPECT_EQ(rejected(chat({{"stop", json::array({"a", 1})}})), "stop");
  EXPECT_EQ(rejected(chat({{"stop", ""}})), "stop");
  EXPECT_EQ(rejected(chat({{"stop", json::array({"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12",
                                                 "13", "14", "15", "16", "17"})}})),
            "stop");
  EXPECT_EQ(rejected(chat({{"logit_bias", json::array()}})), "logit_bias");
  EXPECT_EQ(rejected(chat({{"functions", json::array({{{"name", "f"}}})}})), "functions");
  EXPECT_EQ(rejected(chat({{"function_call", "auto"}})), "function_call");
  EXPECT_EQ(rejected(chat({{"logit_bias", {{"-1", 1}}}})), "logit_bias");
  EXPECT_EQ(rejected(chat({{"logit_bias", {{"5x", 1}}}})), "logit_bias");
  // Other spellings of token 5 would add to its bias again.
  for (const char* key : {"+5", " 5", "05", "5 ", "", "99999999999"})
    EXPECT_EQ(rejected(chat({{"logit_bias", {{key, 1}}}})), "logit_bias") << key;
  SamplingParams two;
  parse_chat_request(chat({{"logit_bias", {{"0", 1}, {"10", 2}}}})).sampling.apply_to(two);
  EXPECT_EQ(two.logit_bias.size(), 2u);
  EXPECT_EQ(rejected(chat({{"logit_bias", {{"5", 101}}}})), "logit_bias");
  EXPECT_EQ(rejected(chat({{"logit_bias", {{"5", "1"}}}})), "logit_bias");
  EXPECT_EQ(rejected(chat({{"top_logprobs", 2}})), "top_logprobs");
  EXPECT_EQ(rejected(chat({{"logprobs", true}, {"top_logprobs", 21}})), "top_logprobs");
  EXPECT_EQ(rejected(chat({{"logprobs", 1}})), "logprobs");
  EXPECT_EQ(rejected(chat({{"stream", "yes"}})), "stream");
  EXPECT_EQ(rejected(chat({{"stream_options", 1}})), "stream_options");
  EXPECT_EQ(rejected(chat({{"model", 5}})), "model");
  EXPECT_EQ(rejected(chat({{"reasoning_effort", "max"}})), "reasoning_effort");
  EXPECT_EQ(rejected(chat({{"tools", "none"}})), "tools");
}

TEST(ServerRequest, CompletionPrompts) {
  ApiRequest r = parse_completion_request(json{{"prompt", "abc"}, {"logprobs", 3}});
  EXPECT_EQ(r.prompt_text, "abc");
  EXPECT_FALSE(r.prompt_is_ids);
  EXPECT_EQ(r.logprobs, 3);
  r = parse_completion_request(json{{"prompt", json::array({"one"})}});
  EXPECT_EQ(r.prompt_text, "one");
  r = parse_completion_request(json{{"prompt", json::array({1, 2, 3})}});
  EXPECT_TRUE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  r = parse_completion_request(json{{"prompt", json::array({json::array({4, 5})})}});
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{4, 5}));

  EXPECT_EQ(rejected(json::object(), true), "prompt");
  EXPECT_EQ(rejected(json{{"prompt", 5}}, true), "prompt");
  EXPECT_EQ(rejected(json{{"prompt", json::array()}}, true), "prompt");
  EXPECT_EQ(rejected(json{{"prompt", json::array({"a", "b"})}}, true), "prompt");
  EXPECT_EQ(rejected(json{{"prompt", json::array({1, -2})}}, true), "prompt");
  EXPECT_EQ(rejected(json{{"prompt", "a"}, {"echo", true}}, true), "echo");
  EXPECT_EQ(rejected(json{{"prompt", "a"}, {"logprobs", true}}, true), "logprobs");
}

TEST(ServerRequest, BodiesThatAreNotJsonObjects) {
  for (const char* body : {"", "{", "[1]", "\"s\"", "{\"a\":\"\\ud800\"}", "{\"a\":\"\xff\"}", "nul"}) {
    try {
      parse_body(body);
      ADD_FAILURE() << "accepted " << body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
    }
  }
  EXPECT_EQ(parse_body("{\"a\": 1}")["a"], 1);
}

// A body of many small containers would be 25 times its size once parsed.
TEST(ServerRequest, ABodyOfTooManyArraysAndObjectsIsRefusedBeforeItIsBuilt) {
  auto body_of = [](size_t n) {
    std::string b = "{\"a\":[";
    for (size_t i = 0; i < n; ++i) b += i ? ",[]" : "[]";
    return b + "]}";
  };
  EXPECT_EQ(parse_body(body_of((size_t(1) << 18) - 2))["a"].size(), (size_t(1) << 18) - 2);
  try {
    parse_body(body_of(size_t(1) << 18));
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(std::string(e.what()).find("arrays and objects"), std::string::npos) << e.what();
  }
}

// JSON inside a string (a tool call's arguments) keeps the body's limits:
// past them it stays a string, never a value nested past the stack's depth
// (copies and renders recurse) or an object of quadratic cost.
TEST(ServerRequest, ToolCallArgumentsPastTheBodyLimitsStayAString) {
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::string many = "{";
  for (int i = 0; i < 5000; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  many += "}";
  for (const std::string& text : {deep, many}) {
    EXPECT_FALSE(text::json_within_limits(text));
    const json kept = arguments_object(json(text));
    ASSERT_TRUE(kept.is_string());
    EXPECT_EQ(kept.get<std::string>(), text);
  }
  EXPECT_TRUE(text::json_within_limits("{\"city\": [[1]]}"));
  EXPECT_EQ(arguments_object(json("{\"city\": \"Paris\"}"))["city"], "Paris");
}

// Each arguments string alone is within a body's limit of 262,144 arrays and
// objects; together a request's strings may not pass it either, or ten of
// them would parse into ten bodies' worth of containers.
TEST(ServerRequest, ToolCallArgumentsShareOneContainerBudget) {
  std::string empties = "{\"a\":[";
  for (int i = 0; i < 100000; ++i) empties += i ? ",[]" : "[]";
  empties += "]}";
  json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  for (int c = 0; c < 3; ++c)
    messages.push_back({{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls", json::array({{{"type", "function"},
                                                     {"function", {{"name", "f"}, {"arguments", empties}}}}})}});
  const ApiRequest r = parse_chat_request(chat({{"messages", messages}}));
  auto arguments = [&](int turn) { return r.messages[size_t(1 + turn)]["tool_calls"][0]["function"]["arguments"]; };
  EXPECT_TRUE(arguments(0).is_object());
  EXPECT_TRUE(arguments(1).is_object());
  ASSERT_TRUE(arguments(2).is_string());  // 300,006 containers in all: the third stays as sent
  EXPECT_EQ(arguments(2).get<std::string>(), empties);
}

TEST(ServerRequest, ErrorShape) {
  ApiError e(429, "full", "resource_admission", "", "queue_full");
  auto b = e.body();
  EXPECT_EQ(b.dump(), R"({"error":{"message":"full","type":"resource_admission","param":null,"code":"queue_full"}})");
}

}  // namespace
}  // namespace hearth::server
