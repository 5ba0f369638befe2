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

}  // namespace
}  // namespace hearth::server
