#include "server/responses_request.h"

#include "server/api_error.h"
#include "server/json_fields.h"
#include "text/unicode.h"

namespace hearth::server {

namespace {

// Message content: a string, or input_text / output_text parts joined.
std::string content_text(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(where, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string w = indexed(where, i);
    const json& part = content[i];
    if (!part.is_object()) wrong_type(w, "an object", part);
    const std::string& type = required_string(part, "type", w);
    if (type == "input_text" || type == "output_text" || type == "text") text += required_string(part, "text", w);
    else if (type == "refusal") text += required_string(part, "refusal", w);
    else throw bad_request(w + ".type", "content parts of type " + quote(json(type)) + " are not supported by this model");
  }
  return text;
}

// The assistant message that function calls and reasoning attach to: the
// last message when it is an assistant turn, else a new one.
json& assistant_turn(json& messages) {
  if (messages.empty() || messages.back()["role"] != "assistant")
    messages.push_back({{"role", "assistant"}, {"content", ""}});
  return messages.back();
}

void convert_input(const json& input, json& messages) {
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return;
  }
  if (!input.is_array()) wrong_type("input", "a string or an array of input items", input);
  std::string reasoning;  // a reasoning item belongs to the assistant turn after it
  size_t arguments_containers = text::kMaxJsonContainers;
  for (size_t i = 0; i < input.size(); ++i) {
    const std::string w = indexed("input", i);
    const json& item = input[i];
    if (!item.is_object()) wrong_type(w, "an object", item);
    const json* type_v = field(item, "type");
    if (type_v && !type_v->is_string()) wrong_type(w + ".type", "a string", *type_v);
    const std::string type = type_v ? type_v->get<std::string>() : "message";
    if (type == "message") {
      const std::string& role = required_string(item, "role", w);
      if (role != "user" && role != "assistant" && role != "system" && role != "developer")
        throw bad_request(w + ".role", "'" + w + ".role' must be user, assistant, system or developer");
      const json* content = field(item, "content");
      if (!content) throw bad_request(w + ".content", "'" + w + ".content' is required");
      json m = {{"role", role}, {"content", content_text(*content, w + ".content")}};
      if (role == "assistant" && !reasoning.empty()) m["reasoning_content"] = std::exchange(reasoning, {});
      messages.push_back(std::move(m));
    } else if (type == "function_call") {
      json& turn = assistant_turn(messages);
      if (!reasoning.empty()) turn["reasoning_content"] = std::exchange(reasoning, {});
      turn["tool_calls"].push_back(
          {{"id", required_string(item, "call_id", w)},
           {"type", "function"},
           {"function", {{"name", required_string(item, "name", w)}, {"arguments", arguments_object(json(required_string(item, "arguments", w)), arguments_containers)}}}});
    } else if (type == "function_call_output") {
      const json* output = field(item, "output");
      if (!output) throw bad_request(w + ".output", "'" + w + ".output' is required");
      messages.push_back(
          {{"role", "tool"}, {"tool_call_id", required_string(item, "call_id", w)}, {"content", content_text(*output, w + ".output")}});
    } else if (type == "reasoning") {
      for (const char* key : {"content", "summary"})
        if (const json* parts = field(item, key)) {
          if (!parts->is_array()) wrong_type(w + "." + key, "an array", *parts);
          for (size_t p = 0; p < parts->size(); ++p) reasoning += required_string((*parts)[p], "text", indexed(w + "." + key, p));
          if (!parts->empty()) break;  // the full reasoning when present, else its summary
        }
    } else {
      throw bad_request(w + ".type", "input items of type " + quote(json(type)) + " are not supported");
    }
  }
}

// Responses function tools ({type, name, description, parameters}) as chat tools.
json convert_tools(const json& tools) {
  return flat_function_tools(tools, "parameters", false, [](const json* type, const std::string& where) {
    if (!type || !type->is_string()) throw bad_request(where + ".type", "'" + where + ".type' must be a string");
    if (*type != "function")
      throw bad_request(where + ".type", "tools of type " + quote(*type) + " are not supported; only 'function'");
  });
}

// text.format: {"type": "text" | "json_object" | "json_schema", "name", "schema", "strict"}.
ResponseFormat parse_text_format(const json& f) {
  if (!f.is_object()) wrong_type("text.format", "an object", f);
  const std::string& type = required_string(f, "type", "text.format");
  ResponseFormat r;
  r.schema_field = "text.format.schema";
  if (type == "text") return r;
  if (type == "json_object") {
    r.kind = ResponseFormat::Kind::JsonObject;
    return r;
  }
  if (type != "json_schema")
    throw bad_request("text.format.type", "'text.format.type' must be text, json_object or json_schema");
  const json* schema = field(f, "schema");
  if (!schema || !schema->is_object()) throw bad_request("text.format.schema", "'text.format.schema' must be a JSON Schema object");
  r.kind = ResponseFormat::Kind::JsonSchema;
  r.schema = *schema;
  return r;
}

// OpenAI's limits on `metadata`, which a stored response repeats: at most 16
// pairs, keys of up to 64 characters, string values of up to 512.
void check_metadata(const json& metadata) {
  if (!metadata.is_object()) wrong_type("metadata", "an object", metadata);
  if (metadata.size() > 16) throw bad_request("metadata", "'metadata' holds at most 16 pairs");
  using text::unicode::count_code_points;
  for (const auto& [key, value] : metadata.items()) {
    if (count_code_points(key) > 64) throw bad_request("metadata", "a 'metadata' key has at most 64 characters");
    if (!value.is_string()) wrong_type("metadata." + key, "a string", value);
    if (count_code_points(value.get_ref<const std::string&>()) > 512)
      throw bad_request("metadata." + key, "a 'metadata' value has at most 512 characters");
  }
}

}  // namespace

ResponsesRequest parse_responses_request(const json& body) {
  ResponsesRequest r;
  ApiRequest& api = r.api;
  api.endpoint = Endpoint::Responses;
  parse_common(body, api);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (auto v = integer(body, "max_output_tokens", 1, kMax)) api.max_tokens = *v;
  if (auto v = string(body, "instructions")) r.instructions = *v;
  if (auto v = string(body, "previous_response_id")) r.previous_response_id = *v;
  r.store = boolean(body, "store").value_or(true);
  if (boolean(body, "background").value_or(false))
    throw bad_request("background", "background responses are not supported");
  if (const json* v = field(body, "metadata")) check_metadata(*v);
  if (const json* v = field(body, "user"); v && !v->is_string()) wrong_type("user", "a string", *v);

  const json* input = field(body, "input");
  if (!input) throw bad_request("input", "'input' is required");
  convert_input(*input, api.messages);
  if (api.messages.empty()) throw bad_request("input", "'input' must not be empty");

  if (const json* v = field(body, "tools")) api.tools = convert_tools(*v);
  api.tool_choice = parse_tool_choice(body, api.tools);
  if (const json* v = field(body, "reasoning")) {
    if (!v->is_object()) wrong_type("reasoning", "an object", *v);
    if (auto effort = string(*v, "effort")) set_reasoning_effort(*effort, "reasoning.effort", api);
  }
  if (const json* v = field(body, "text")) {
    if (!v->is_object()) wrong_type("text", "an object", *v);
    if (const json* f = field(*v, "format")) api.response_format = parse_text_format(*f);
  }
  for (const char* key : {"tools", "tool_choice", "text", "temperature", "top_p", "max_output_tokens", "metadata",
                          "parallel_tool_calls", "reasoning", "instructions", "user"})
    if (const json* v = field(body, key)) r.echo[key] = *v;
  return r;
}

}  // namespace hearth::server
