// Chat's response_format: its shapes, the 400s naming the field, and the
// compiled grammar (none for text).
#include <gtest/gtest.h>

#include "engine/grammar/matcher.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace hearth::server {
namespace {

using json = nlohmann::ordered_json;

json chat_with(const json& format) {
  return {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"response_format", format}};
}

std::string rejected_param(const json& format) {
  try {
    compile_response_format(parse_chat_request(chat_with(format)).response_format);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << format.dump();
    EXPECT_EQ(e.type, "invalid_request_error");
    return e.param;
  }
  ADD_FAILURE() << "accepted: " << format.dump();
  return "";
}

TEST(ResponseFormat, TextAndAbsentHaveNoGrammar) {
  EXPECT_EQ(parse_chat_request(chat_with({{"type", "text"}})).response_format.kind, ResponseFormat::Kind::Text);
  EXPECT_EQ(compile_response_format(parse_chat_request(chat_with(nullptr)).response_format), nullptr);
}

TEST(ResponseFormat, JsonObjectAndJsonSchemaCompile) {
  auto g = compile_response_format(parse_chat_request(chat_with({{"type", "json_object"}})).response_format);
  ASSERT_TRUE(g);
  EXPECT_TRUE(grammar::Matcher(g).accept_bytes("{\"a\": 1}"));
  const json format = json::parse(R"({"type":"json_schema","json_schema":{"name":"pt","strict":true,
      "schema":{"type":"object","properties":{"y":{"type":"integer"},"x":{"type":"integer"}},"required":["y","x"]}}})");
  const ApiRequest r = parse_chat_request(chat_with(format));
  ASSERT_EQ(r.response_format.kind, ResponseFormat::Kind::JsonSchema);
  grammar::Matcher m(compile_response_format(r.response_format));
  EXPECT_TRUE(m.accept_bytes("{\"y\":1,\"x\":2}"));  // the schema's property order, as sent
  EXPECT_TRUE(m.must_end());
}

TEST(ResponseFormat, BadShapesAndUnsupportedSchemasAre400sNamingTheField) {
  EXPECT_EQ(rejected_param("json"), "response_format");
  EXPECT_EQ(rejected_param({{"type", "xml"}}), "response_format.type");
  EXPECT_EQ(rejected_param(json::object()), "response_format.type");
  EXPECT_EQ(rejected_param({{"type", "json_schema"}}), "response_format.json_schema");
  EXPECT_EQ(rejected_param({{"type", "json_schema"}, {"json_schema", {{"schema", json::object()}}}}),
            "response_format.json_schema.name");
  EXPECT_EQ(rejected_param({{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"strict", "yes"}, {"schema", json::object()}}}}),
            "response_format.json_schema.strict");
  EXPECT_EQ(rejected_param({{"type", "json_schema"}, {"json_schema", {{"name", "n"}}}}), "response_format.json_schema.schema");
  EXPECT_EQ(rejected_param({{"type", "json_schema"},
                            {"json_schema", {{"name", "n"}, {"schema", {{"type", "string"}, {"pattern", "(?=a)"}}}}}}),
            "response_format.json_schema.schema");
}

// With tools offered (tool_choice auto) the model may call one instead of
// answering in the format, as OpenAI's may; required or named calls are
// the answer, and with tool_choice none or no tool-call format only the
// format is written.
TEST(ResponseFormat, ToolsOfferedBesideItMayBeCalled) {
  json body = chat_with(json::parse(R"({"type":"json_schema","json_schema":{"name":"a",
      "schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}})"));
  body["tools"] = json::parse(R"([{"type":"function","function":{"name":"lookup",
      "parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}])");
  const std::string answer = R"({"ok":true})";
  const std::string call = text::render_tool_call(text::ToolCallFormat::Hermes, "lookup", R"({"q":"x"})");
  auto takes = [](const std::shared_ptr<const grammar::Grammar>& g, const std::string& text) {
    grammar::Matcher m(g);
    return m.accept_bytes(text) && m.is_complete();
  };
  const auto either = compile_output_grammar(parse_chat_request(body), text::ToolCallFormat::Hermes);
  EXPECT_TRUE(takes(either, answer));
  EXPECT_TRUE(takes(either, call));
  EXPECT_FALSE(takes(either, R"({"ok":1})"));
  EXPECT_FALSE(takes(either, text::render_tool_call(text::ToolCallFormat::Hermes, "other", R"({"q":"x"})")));
  const auto no_format = compile_output_grammar(parse_chat_request(body), text::ToolCallFormat::None);
  EXPECT_TRUE(takes(no_format, answer));
  EXPECT_FALSE(takes(no_format, call));
  // A tool whose parameters the grammar cannot take (a set: uniqueItems)
  // leaves the format alone, as before tools could be called beside it.
  json unsupported = body;
  unsupported["tools"][0]["function"]["parameters"]["properties"]["q"] =
      json::parse(R"({"type":"array","items":{"type":"string"},"uniqueItems":true})");
  const auto format_only = compile_output_grammar(parse_chat_request(unsupported), text::ToolCallFormat::Hermes);
  EXPECT_TRUE(takes(format_only, answer));
  EXPECT_FALSE(takes(format_only, call));
  body["tool_choice"] = "none";
  EXPECT_FALSE(takes(compile_output_grammar(parse_chat_request(body), text::ToolCallFormat::Hermes), call));
  body["tool_choice"] = "required";
  const auto required = compile_output_grammar(parse_chat_request(body), text::ToolCallFormat::Hermes);
  EXPECT_TRUE(takes(required, call));
  EXPECT_FALSE(takes(required, answer));
}

}  // namespace
}  // namespace hearth::server
