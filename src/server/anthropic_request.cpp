#include "server/anthropic_request.h"

#include "server/api_error.h"
#include "server/json_fields.h"

namespace hearth::server {

namespace {

constexpr size_t kMaxStopSequences = 16;

const std::string& block_type(const json& block, const std::string& where) {
  if (!block.is_object()) wrong_type(where, "a content block object", block);
  const json* type = field(block, "type");
  if (!type || !type->is_string()) throw bad_request(where + ".type", "'" + where + ".type' must be a string");
  return type->get_ref<const std::string&>();
}

// A string, or text blocks joined (system prompts, tool results).
std::string text_content(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(where, "a string or an array of text blocks", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string w = indexed(where, i);
    const std::string& type = block_type(content[i], w);
    if (type != "text") throw bad_request(w + ".type", "only text blocks are supported here, not " + quote(json(type)));
    text += required_string(content[i], "text", w);
  }
  return text;
}

// One Anthropic message as OpenAI-shaped messages: a user message's
// tool_result blocks each become a tool message (before its text), an
// assistant message's tool_use blocks its tool_calls.
void convert_message(const json& m, size_t index, json& out) {
  const std::string where = indexed("messages", index);
  if (!m.is_object()) wrong_type(where, "an object", m);
  const json* role = field(m, "role");
  if (!role || !(*role == "user" || *role == "assistant"))
    throw bad_request(where + ".role", "'" + where + ".role' must be \"user\" or \"assistant\"");
  const bool assistant = *role == "assistant";
  const json* content = field(m, "content");
  if (!content) throw bad_request(where + ".content", "'" + where + ".content' is required");
  json msg = {{"role", *role}, {"content", ""}};
  if (content->is_string()) {
    msg["content"] = *content;
    out.push_back(std::move(msg));
    return;
  }
  if (!content->is_array()) wrong_type(where + ".content", "a string or an array of content blocks", *content);
  std::string text, reasoning;
  json calls = json::array();
  for (size_t i = 0; i < content->size(); ++i) {
    const json& b = (*content)[i];
    const std::string w = indexed(where + ".content", i);
    const std::string& type = block_type(b, w);
    if (type == "text") {
      text += required_string(b, "text", w);
    } else if (type == "tool_use" && assistant) {
      const json* input = field(b, "input");
      if (input && !input->is_object()) wrong_type(w + ".input", "an object", *input);
      calls.push_back({{"id", required_string(b, "id", w)},
                       {"type", "function"},
                       {"function", {{"name", required_string(b, "name", w)}, {"arguments", input ? *input : json::object()}}}});
    } else if (type == "tool_result" && !assistant) {
      json result = {{"role", "tool"}, {"tool_call_id", required_string(b, "tool_use_id", w)}, {"content", ""}};
      if (const json* c = field(b, "content")) result["content"] = text_content(*c, w + ".content");
      out.push_back(std::move(result));
    } else if (type == "thinking" && assistant) {
      reasoning += required_string(b, "thinking", w);
    } else if (type == "redacted_thinking" && assistant) {
      // Encrypted by another server: nothing here can read it.
    } else {
      throw bad_request(w + ".type", "content blocks of type " + quote(json(type)) + " are not supported in " +
                                         (assistant ? "assistant" : "user") + " messages here");
    }
  }
  if (assistant || !text.empty() || calls.empty()) {
    // A user turn that only returns tool results adds no empty user message.
    if (!assistant && text.empty() && !out.empty() && out.back()["role"] == "tool") return;
    msg["content"] = text;
    if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    out.push_back(std::move(msg));
  }
}

// Anthropic tools ({name, description, input_schema}) as OpenAI function tools.
json convert_tools(const json& tools) {
  return flat_function_tools(tools, "input_schema", true, [](const json* type, const std::string& where) {
    if (type && *type != "custom")
      throw bad_request(where + ".type", "server tools (" + quote(*type) + ") are not supported; only client tools");
  });
}

ToolChoice convert_tool_choice(const json& body, const json& tools) {
  ToolChoice c;
  const json* v = field(body, "tool_choice");
  if (!v) return c;
  if (!v->is_object()) wrong_type("tool_choice", "an object", *v);
  const json* type = field(*v, "type");
  if (!type || !type->is_string()) throw bad_request("tool_choice.type", "'tool_choice.type' must be a string");
  if (*type == "auto") c.mode = ToolChoice::Mode::Auto;
  else if (*type == "any") c.mode = ToolChoice::Mode::Required;
  else if (*type == "none") c.mode = ToolChoice::Mode::None;
  else if (*type == "tool") c.mode = ToolChoice::Mode::Named, c.name = required_string(*v, "name", "tool_choice");
  else throw bad_request("tool_choice.type", "'tool_choice.type' must be auto, any, tool or none");
  c.parallel = !boolean(*v, "disable_parallel_tool_use").value_or(false);
  check_tool_choice(c, tools, c.mode == ToolChoice::Mode::Named ? "tool_choice.name" : "tool_choice");
  return c;
}

}  // namespace

ApiRequest parse_messages_request(const json& body, bool count_tokens) {
  ApiRequest r;
  r.endpoint = Endpoint::Messages;
  parse_common(body, r);  // sampling (temperature, top_p, top_k, ...), max_tokens, stream, sessions
  if (!count_tokens && !r.max_tokens) throw bad_request("max_tokens", "'max_tokens' is required");
  // Anthropic's range; parse_common has applied the value (or top_p 0's greedy).
  number(body, "temperature", 0, 1);

  if (const json* v = field(body, "stop_sequences")) {
    if (!v->is_array()) wrong_type("stop_sequences", "an array of strings", *v);
    for (const auto& s : *v) {
      if (!s.is_string() || s.get_ref<const std::string&>().empty())
        throw bad_request("stop_sequences", "'stop_sequences' must hold non-empty strings");
      r.stop.push_back(s.get<std::string>());
    }
    if (r.stop.size() > kMaxStopSequences)
      throw bad_request("stop_sequences", "at most " + std::to_string(kMaxStopSequences) + " stop sequences are allowed");
  }
  if (const json* v = field(body, "metadata"); v && !v->is_object()) wrong_type("metadata", "an object", *v);

  if (const json* v = field(body, "system")) {
    std::string system = text_content(*v, "system");
    if (!system.empty()) r.messages.push_back({{"role", "system"}, {"content", std::move(system)}});
  }
  const json* messages = field(body, "messages");
  if (!messages) throw bad_request("messages", "'messages' is required");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) throw bad_request("messages", "'messages' must not be empty");
  for (size_t i = 0; i < messages->size(); ++i) convert_message((*messages)[i], i, r.messages);

  if (const json* v = field(body, "tools")) r.tools = convert_tools(*v);
  r.tool_choice = convert_tool_choice(body, r.tools);
  if (const json* v = field(body, "thinking")) {
    if (!v->is_object()) wrong_type("thinking", "an object", *v);
    const json* type = field(*v, "type");
    if (!type || !(*type == "enabled" || *type == "disabled" || *type == "adaptive"))
      throw bad_request("thinking.type", "'thinking.type' must be \"enabled\", \"adaptive\" or \"disabled\"");
    r.template_kwargs["enable_thinking"] = *type != "disabled";
  }
  return r;
}

}  // namespace hearth::server
