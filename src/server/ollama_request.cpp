#include "server/ollama_request.h"

#include "server/api_error.h"
#include "server/json_fields.h"

namespace hearth::server {

namespace {

// Ollama's fields and options under their OpenAI names.
json openai_body(const json& body) {
  json out = json::object();
  out["stream"] = boolean(body, "stream").value_or(true);  // Ollama streams unless told not to
  if (const json* v = field(body, "model")) out["model"] = *v;
  if (const json* options = field(body, "options")) {
    if (!options->is_object()) wrong_type("options", "an object", *options);
    static const std::pair<const char*, const char*> kNames[] = {
        {"temperature", "temperature"}, {"top_p", "top_p"}, {"top_k", "top_k"}, {"min_p", "min_p"}, {"seed", "seed"},
        {"stop", "stop"}, {"repeat_penalty", "repetition_penalty"}, {"presence_penalty", "presence_penalty"},
        {"frequency_penalty", "frequency_penalty"}};
    for (const auto& [from, to] : kNames)
      if (const json* v = field(*options, from)) out[to] = *v;
    // One window for the three penalties, as in llama.cpp's sampler: 0 turns
    // them off, -1 is the whole context.
    if (const json* v = field(*options, "repeat_last_n")) {
      if (!v->is_number_integer() || v->get<int64_t>() < -1)
        throw bad_request("repeat_last_n", "'options.repeat_last_n' must be an integer, -1 or more");
      const int64_t n = v->get<int64_t>();
      for (const char* penalty : {"repetition", "presence", "frequency"}) {
        const std::string key = std::string(penalty) + "_penalty";
        if (n == 0) out.erase(key);
        else if (out.contains(key)) out[std::string(penalty) + "_context_size"] = n < 0 ? int64_t(1) << 20 : n;
      }
    }
    // num_predict -1 (or -2, "until the context fills") is no limit.
    if (const json* v = field(*options, "num_predict"); v && !(v->is_number() && v->get<double>() < 0))
      out["max_tokens"] = *v;
  }
  if (const json* v = field(body, "format")) {
    if (*v == "json") out["response_format"] = {{"type", "json_object"}};
    else if (v->is_object()) out["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", *v}}}};
    else if (!(v->is_string() && v->get_ref<const std::string&>().empty()))
      throw bad_request("format", "'format' must be \"json\" or a JSON Schema object");
  }
  if (const json* v = field(body, "think")) {
    if (v->is_boolean()) out["chat_template_kwargs"] = {{"enable_thinking", *v}};
    else if (v->is_string()) out["reasoning_effort"] = *v;
    else wrong_type("think", "a boolean or \"low\", \"medium\", \"high\"", *v);
  }
  if (const json* v = field(body, "tools")) out["tools"] = *v;
  return out;
}

// Ollama messages: tool calls without ids and with object arguments,
// `thinking` for the reasoning, `tool_name` on tool results.
json openai_messages(const json& messages) {
  if (!messages.is_array()) wrong_type("messages", "an array", messages);
  json out = json::array();
  int call = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    if (!m.is_object()) wrong_type("messages[" + std::to_string(i) + "]", "an object", m);
    json o = m;
    o.erase("images");
    if (const json* images = field(m, "images"); images && !(images->is_array() && images->empty()))
      throw bad_request("messages[" + std::to_string(i) + "].images", "this model does not take images");
    if (const json* t = field(m, "thinking")) o["reasoning_content"] = *t, o.erase("thinking");
    if (const json* n = field(m, "tool_name")) o["name"] = *n, o.erase("tool_name");
    if (const json* calls = field(m, "tool_calls"); calls && calls->is_array())
      for (auto& c : o["tool_calls"])
        if (c.is_object()) c["id"] = "call_" + std::to_string(call++), c["type"] = "function";
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

ApiRequest parse_ollama_chat(const json& body) {
  json oa = openai_body(body);
  const json* messages = field(body, "messages");
  if (!messages) throw bad_request("messages", "'messages' is required");
  oa["messages"] = openai_messages(*messages);
  return parse_chat_request(oa);
}

ApiRequest parse_ollama_generate(const json& body) {
  json oa = openai_body(body);
  const std::string prompt = string(body, "prompt").value_or("");
  if (const json* v = field(body, "images"); v && !(v->is_array() && v->empty()))
    throw bad_request("images", "this model does not take images");
  if (boolean(body, "raw").value_or(false)) {
    oa["prompt"] = prompt;
    return parse_completion_request(oa);
  }
  oa["messages"] = json::array();
  if (auto system = string(body, "system")) oa["messages"].push_back({{"role", "system"}, {"content", *system}});
  oa["messages"].push_back({{"role", "user"}, {"content", prompt}});
  return parse_chat_request(oa);
}

}  // namespace hearth::server
