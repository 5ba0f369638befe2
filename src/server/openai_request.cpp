#include "server/openai_request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "engine/grammar/json_rules.h"
#include "engine/grammar/json_schema.h"
#include "server/api_error.h"
#include "engine/grammar/tool_calls.h"
#include "text/chat.h"
#include "text/json_shape.h"
#include "server/json_fields.h"

namespace hearth::server {

using json = nlohmann::ordered_json;

namespace {

constexpr size_t kMaxStops = 16;
constexpr int kMaxTopLogprobs = 20;
constexpr size_t kMaxSessionId = 256;

void parse_sampling(const json& body, ApiRequest& r) {
  SamplingOverrides& s = r.sampling;
  constexpr double kBig = std::numeric_limits<double>::max();
  if (auto v = number(body, "temperature", 0, 2)) s.temperature = float(*v);
  if (auto v = number(body, "top_p", 0, 1)) {
    // top_p 0 leaves only the most likely token: greedy.
    if (*v == 0) s.temperature = 0.0f;
    else s.top_p = float(*v);
  }
  if (auto v = integer(body, "top_k", -1, std::numeric_limits<int32_t>::max())) s.top_k = int(std::max<int64_t>(*v, 0));
  if (auto v = number(body, "min_p", 0, 1)) s.min_p = float(*v);
  if (auto v = number(body, "xtc_probability", 0, 1)) s.xtc_probability = float(*v);
  if (auto v = number(body, "xtc_threshold", 0, 0.5)) s.xtc_threshold = float(*v);
  if (auto v = number(body, "repetition_penalty", 0, kBig)) s.repetition_penalty = float(*v);
  if (auto v = number(body, "presence_penalty", -2, 2)) s.presence_penalty = float(*v);
  if (auto v = number(body, "frequency_penalty", -2, 2)) s.frequency_penalty = float(*v);
  constexpr int64_t kMaxWindow = 1 << 20;
  if (auto v = integer(body, "repetition_context_size", 1, kMaxWindow)) s.repetition_context_size = int(*v);
  if (auto v = integer(body, "presence_context_size", 1, kMaxWindow)) s.presence_context_size = int(*v);
  if (auto v = integer(body, "frequency_context_size", 1, kMaxWindow)) s.frequency_context_size = int(*v);
  if (const json* v = field(body, "seed")) {
    if (v->is_number_unsigned()) s.seed = v->get<uint64_t>();
    else if (v->is_number_integer()) s.seed = uint64_t(v->get<int64_t>());
    else s.seed = uint64_t(*integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
  }
  if (const json* v = field(body, "logit_bias")) {
    if (!v->is_object()) wrong_type("logit_bias", "an object mapping token ids to numbers", *v);
    for (const auto& [key, bias] : v->items()) {
      // Digits only, no leading zero: "+5", " 5" and "05" would each add
      // to token 5's bias again, past the limit of 100.
      const bool digits = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos &&
                          (key == "0" || key[0] != '0');
      const long long id = digits ? std::stoll(key) : -1;
      if (id < 0 || id > std::numeric_limits<int32_t>::max())
        throw bad_request("logit_bias", "'logit_bias' keys must be token ids, got " + quote(json(key)));
      if (!bias.is_number() || !std::isfinite(bias.get<double>()) || bias.get<double>() < -100 || bias.get<double>() > 100)
        throw bad_request("logit_bias", "'logit_bias' values must be numbers in [-100, 100], got " + quote(bias) +
                                            " for token " + key);
      s.logit_bias.emplace_back(int32_t(id), bias.get<float>());
    }
  }
}

ResponseFormat parse_response_format(const json& v) {
  if (!v.is_object()) wrong_type("response_format", "an object", v);
  const json* type = field(v, "type");
  if (!type || !type->is_string())
    throw bad_request("response_format.type", "'response_format.type' must be one of text, json_object, json_schema");
  ResponseFormat f;
  if (*type == "text") return f;
  if (*type == "json_object") {
    f.kind = ResponseFormat::Kind::JsonObject;
    return f;
  }
  if (*type != "json_schema")
    throw bad_request("response_format.type",
                      "'response_format.type' must be one of text, json_object, json_schema; got " + type->dump());
  const json* spec = field(v, "json_schema");
  if (!spec) throw bad_request("response_format.json_schema", "'response_format.json_schema' is required");
  if (!spec->is_object()) wrong_type("response_format.json_schema", "an object", *spec);
  const json* name = field(*spec, "name");
  if (!name || !name->is_string() || name->get<std::string>().empty() || name->get<std::string>().size() > 64)
    throw bad_request("response_format.json_schema.name",
                      "'response_format.json_schema.name' must be a string of 1 to 64 characters");
  if (const json* strict = field(*spec, "strict"); strict && !strict->is_boolean())
    wrong_type("response_format.json_schema.strict", "a boolean", *strict);
  // strict or not, the output follows the schema: the grammar has no lax mode.
  const json* schema = field(*spec, "schema");
  if (!schema) throw bad_request("response_format.json_schema.schema", "'response_format.json_schema.schema' is required");
  if (!schema->is_object()) wrong_type("response_format.json_schema.schema", "an object", *schema);
  f.kind = ResponseFormat::Kind::JsonSchema;
  f.schema = *schema;
  return f;
}

}  // namespace

const std::string& check_session_id(const std::string& field, const std::string& id) {
  if (id.empty() || id.size() > kMaxSessionId)
    throw bad_request(field, "'" + field + "' must be 1 to " + std::to_string(kMaxSessionId) + " bytes, got " +
                                 std::to_string(id.size()));
  return id;
}

void parse_common(const json& body, ApiRequest& r) {
  if (const json* v = field(body, "model")) {
    if (!v->is_string()) wrong_type("model", "a string", *v);
    r.model = v->get<std::string>();
  }
  parse_sampling(body, r);

  // max_completion_tokens is the newer name; it wins when both are sent.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (auto v = integer(body, "max_tokens", 1, kMax)) r.max_tokens = *v;
  if (auto v = integer(body, "max_completion_tokens", 1, kMax)) r.max_tokens = *v;

  if (auto n = integer(body, "n", std::numeric_limits<int64_t>::min(), kMax); n && *n != 1)
    throw bad_request("n", "only n=1 is supported: one choice per request, got " + std::to_string(*n));
  if (auto b = integer(body, "best_of", std::numeric_limits<int64_t>::min(), kMax); b && *b != 1)
    throw bad_request("best_of", "only best_of=1 is supported");

  if (const json* v = field(body, "stop")) {
    if (v->is_string()) {
      r.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      for (const auto& s : *v) {
        if (!s.is_string()) wrong_type("stop", "a string or an array of strings", *v);
        r.stop.push_back(s.get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or an array of strings", *v);
    }
    if (r.stop.size() > kMaxStops)
      throw bad_request("stop", "at most " + std::to_string(kMaxStops) + " stop strings are allowed");
    for (const auto& s : r.stop)
      if (s.empty()) throw bad_request("stop", "stop strings must not be empty");
  }

  // The conversation, for the prompt cache: session_id wins over prompt_cache_key.
  for (const char* name : {"prompt_cache_key", "session_id"})
    if (const json* v = field(body, name)) {
      if (!v->is_string()) wrong_type(name, "a string", *v);
      r.session = check_session_id(name, v->get<std::string>());
    }

  r.stream = boolean(body, "stream").value_or(false);
  if (const json* v = field(body, "stream_options")) {
    if (!v->is_object()) wrong_type("stream_options", "an object", *v);
    if (auto u = boolean(*v, "include_usage")) r.include_usage = *u;
  }
}

namespace {

// Message content: a string, or an array of text parts joined together.
std::string flatten_content(const json& content, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(where, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!part.is_object()) wrong_type(at, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) throw bad_request(at, "'" + at + ".type' must be a string");
    if (*type != "text")
      throw bad_request(at, "content parts of type '" + type->get<std::string>() +
                                "' are not supported by this model; only 'text' is");
    auto t = part.find("text");
    if (t == part.end() || !t->is_string()) throw bad_request(at, "'" + at + ".text' must be a string");
    text += t->get<std::string>();
  }
  return text;
}

}  // namespace

void SamplingOverrides::apply_to(SamplingParams& p) const {
  if (temperature) p.temperature = *temperature;
  if (top_p) p.top_p = *top_p;
  if (top_k) p.top_k = *top_k;
  if (min_p) p.min_p = *min_p;
  if (xtc_probability) p.xtc_probability = *xtc_probability;
  if (xtc_threshold) p.xtc_threshold = *xtc_threshold;
  if (repetition_penalty) p.repetition_penalty = *repetition_penalty;
  if (repetition_context_size) p.repetition_context_size = *repetition_context_size;
  if (presence_penalty) p.presence_penalty = *presence_penalty;
  if (presence_context_size) p.presence_context_size = *presence_context_size;
  if (frequency_penalty) p.frequency_penalty = *frequency_penalty;
  if (frequency_context_size) p.frequency_context_size = *frequency_context_size;
  if (seed) p.seed = *seed;
  if (!logit_bias.empty()) p.logit_bias = logit_bias;
}

json arguments_object(const json& arguments, size_t& containers_left) {
  if (!arguments.is_string()) return arguments;
  // The body's limits apply inside the string too: it becomes part of the
  // messages, which are copied and rendered recursively.
  const std::string& text = arguments.get_ref<const std::string&>();
  const text::JsonShape shape = text::check_json_shape(text, containers_left);
  if (!shape.problem.empty() || !shape.syntax.empty()) return arguments;
  json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_object()) return arguments;
  containers_left -= shape.containers;
  return parsed;
}

// A tool's name, as Anthropic takes it (1 to 128 letters, digits, "_" and
// "-"; OpenAI's limit is 64; "." too, as MCP clients write): a name is
// written into the model's markup and a constrained call's grammar, where
// "<", ">", "(" or a space would end it early.
void check_tool_name(const std::string& name, const std::string& where) {
  const bool ok = !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
  if (!ok) throw bad_request(where, "'" + where + "' must be 1 to 128 letters, digits, '_', '-' or '.', got " + quote(json(name)));
}

void check_function_tools(const json& tools, const std::string& where) {
  if (!tools.is_array()) wrong_type(where, "an array", tools);
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const json& t = tools[i];
    if (!t.is_object()) wrong_type(at, "an object", t);
    const json* type = field(t, "type");
    if (!type || *type != "function")
      throw bad_request(at + ".type", "only tools of type 'function' are supported");
    const json* fn = field(t, "function");
    if (!fn || !fn->is_object()) throw bad_request(at + ".function", "'" + at + ".function' must be an object");
    const json* name = field(*fn, "name");
    if (!name || !name->is_string()) wrong_type(at + ".function.name", "a string", name ? *name : json());
    check_tool_name(name->get_ref<const std::string&>(), at + ".function.name");
    if (const json* p = field(*fn, "parameters"); p && !p->is_object())
      wrong_type(at + ".function.parameters", "a JSON Schema object", *p);
  }
}

json flat_function_tools(const json& tools, const char* schema_key, bool schema_required,
                         const std::function<void(const json* type, const std::string& where)>& check_type) {
  if (!tools.is_array()) wrong_type("tools", "an array", tools);
  json out = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string w = indexed("tools", i);
    const json& t = tools[i];
    if (!t.is_object()) wrong_type(w, "an object", t);
    check_type(field(t, "type"), w);
    const std::string& name = required_string(t, "name", w);
    check_tool_name(name, w + ".name");
    json fn = {{"name", name}};
    if (const json* d = field(t, "description")) {
      if (!d->is_string()) wrong_type(w + ".description", "a string", *d);
      fn["description"] = *d;
    }
    const json* schema = field(t, schema_key);
    const std::string at = w + "." + schema_key;
    if (schema_required && !schema) throw bad_request(at, "'" + at + "' must be a JSON Schema object");
    if (schema && !schema->is_object()) wrong_type(at, "a JSON Schema object", *schema);
    if (schema) fn["parameters"] = *schema;
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

ToolChoice parse_tool_choice(const json& body, const json& tools) {
  ToolChoice c;
  c.parallel = boolean(body, "parallel_tool_calls").value_or(true);
  const json* v = field(body, "tool_choice");
  if (!v) return c;
  if (v->is_string()) {
    const std::string& mode = v->get_ref<const std::string&>();
    if (mode == "auto") c.mode = ToolChoice::Mode::Auto;
    else if (mode == "none") c.mode = ToolChoice::Mode::None;
    else if (mode == "required") c.mode = ToolChoice::Mode::Required;
    else throw bad_request("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or a named function");
  } else if (v->is_object()) {
    // Chat: {"type": "function", "function": {"name": ...}}; Responses: {"type": "function", "name": ...}.
    const json* fn = field(*v, "function");
    const json* name = fn && fn->is_object() ? field(*fn, "name") : field(*v, "name");
    if (!name || !name->is_string() || field(*v, "type") == nullptr || (*v)["type"] != "function")
      throw bad_request("tool_choice", "a named 'tool_choice' is {\"type\": \"function\", \"function\": {\"name\": ...}}");
    c.mode = ToolChoice::Mode::Named;
    c.name = name->get<std::string>();
  } else {
    wrong_type("tool_choice", "a string or an object", *v);
  }
  check_tool_choice(c, tools, "tool_choice");
  return c;
}

void check_tool_choice(const ToolChoice& c, const json& tools, const std::string& param) {
  if (c.mode != ToolChoice::Mode::Required && c.mode != ToolChoice::Mode::Named) return;
  if (!tools.is_array() || tools.empty())
    throw bad_request(param, "'tool_choice' asks for a tool call, but the request has no 'tools'");
  if (c.mode == ToolChoice::Mode::Named &&
      std::none_of(tools.begin(), tools.end(), [&](const json& t) { return t["function"]["name"] == c.name; }))
    throw bad_request(param, "'tool_choice' names " + quote(json(c.name)) + ", which is not in 'tools'");
}

void set_reasoning_effort(const std::string& effort, const std::string& where, ApiRequest& r) {
  static const char* kEfforts[] = {"none", "minimal", "low", "medium", "high", "xhigh"};
  if (std::none_of(std::begin(kEfforts), std::end(kEfforts), [&](const char* k) { return effort == k; }))
    throw bad_request(where, "'" + where + "' must be one of none, minimal, low, medium, high, xhigh");
  r.template_kwargs["reasoning_effort"] = effort;
  // Templates with a thinking switch (Qwen3) read enable_thinking; "none" turns it off.
  if (!r.template_kwargs.contains("enable_thinking")) r.template_kwargs["enable_thinking"] = effort != "none";
}

ApiRequest parse_chat_request(const json& body) {
  ApiRequest r;
  r.endpoint = Endpoint::Chat;
  parse_common(body, r);

  // OpenAI's deprecated spelling of tools: ignored like an unknown field,
  // the model would never see the functions nor be held to a call.
  for (const char* legacy : {"functions", "function_call"})
    if (field(body, legacy))
      throw bad_request(legacy, std::string("'") + legacy + "' is not supported; use 'tools' and 'tool_choice'");
  const json* messages = field(body, "messages");
  if (!messages) throw bad_request("messages", "'messages' is required");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) throw bad_request("messages", "'messages' must not be empty");
  static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool"};
  size_t arguments_containers = text::kMaxJsonContainers;
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(at, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) throw bad_request(at + ".role", "'" + at + ".role' must be a string");
    if (std::none_of(std::begin(kRoles), std::end(kRoles), [&](const char* k) { return *role == k; }))
      throw bad_request(at + ".role", "'" + at + ".role' must be one of system, developer, user, assistant, tool; got " +
                                          quote(*role));
    json out = m;
    // A key sent as null is a key not sent (the SDKs' model_dump() writes
    // "tool_calls": null): templates test for presence, then iterate.
    for (auto it = out.begin(); it != out.end();) it = it->is_null() ? out.erase(it) : std::next(it);
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      if (*role != "assistant") throw bad_request(at + ".content", "'" + at + ".content' is required");
      out["content"] = "";  // an assistant turn that only calls tools
    } else {
      out["content"] = flatten_content(*content, i);
    }
    if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
      if (*role != "assistant") throw bad_request(at + ".tool_calls", "only assistant messages carry 'tool_calls'");
      if (!calls->is_array()) wrong_type(at + ".tool_calls", "an array", *calls);
      for (size_t c = 0; c < calls->size(); ++c) {
        const std::string cat = at + ".tool_calls[" + std::to_string(c) + "]";
        const json& call = (*calls)[c];
        const json* fn = call.is_object() ? field(call, "function") : nullptr;
        if (!fn || !fn->is_object() || !field(*fn, "name") || !(*fn)["name"].is_string())
          throw bad_request(cat, "'" + cat + "' must be {\"type\": \"function\", \"function\": {\"name\": ..., \"arguments\": ...}}");
        if (const json* a = field(*fn, "arguments")) out["tool_calls"][c]["function"]["arguments"] = arguments_object(*a, arguments_containers);
      }
    }
    r.messages.push_back(std::move(out));
  }

  if (const json* v = field(body, "tools")) {
    check_function_tools(*v, "tools");
    r.tools = *v;
  }
  r.tool_choice = parse_tool_choice(body, r.tools);
  if (const json* v = field(body, "chat_template_kwargs")) {
    if (!v->is_object()) wrong_type("chat_template_kwargs", "an object", *v);
    // The request's own fields say these; a kwarg would bypass their checks.
    for (std::string_view name : text::kRenderVariables)
      if (v->contains(name))
        throw bad_request("chat_template_kwargs", "'chat_template_kwargs." + std::string(name) +
                                                      "' is set by the request itself and cannot be a template kwarg");
    r.template_kwargs = *v;
  }
  if (const json* v = field(body, "reasoning_effort")) {
    if (!v->is_string()) wrong_type("reasoning_effort", "a string", *v);
    set_reasoning_effort(v->get<std::string>(), "reasoning_effort", r);
  }

  if (const json* v = field(body, "response_format")) r.response_format = parse_response_format(*v);

  const bool logprobs = boolean(body, "logprobs").value_or(false);
  auto top = integer(body, "top_logprobs", 0, kMaxTopLogprobs);
  if (top && !logprobs) throw bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  if (logprobs) r.logprobs = int(top.value_or(0));
  return r;
}

namespace {

// The response format's value as an expression of b; nullopt for text.
std::optional<grammar::Expr> response_format_value(grammar::GrammarBuilder& b, const ResponseFormat& format) {
  switch (format.kind) {
    case ResponseFormat::Kind::Text: return std::nullopt;
    case ResponseFormat::Kind::JsonObject: return grammar::json_rules::any_object(b);
    case ResponseFormat::Kind::JsonSchema: return grammar::json_schema(b, format.schema);
  }
  return std::nullopt;
}

// The response format's grammar, with calls of `tools` (null: none) in
// call_format beside it; null for text. Throws GrammarError.
std::shared_ptr<const grammar::Grammar> format_grammar(const ResponseFormat& format, const json* tools,
                                                       text::ToolCallFormat call_format, bool parallel) {
  grammar::GrammarBuilder b;
  const std::optional<grammar::Expr> answer = response_format_value(b, format);
  if (!answer) return nullptr;
  std::optional<grammar::Expr> calls;
  if (tools) calls = grammar::tool_calls(b, call_format, *tools, "", parallel);
  return b.build(calls ? b.choice({*answer, *calls}) : *answer);
}

}  // namespace

std::shared_ptr<const grammar::Grammar> compile_response_format(const ResponseFormat& format) {
  try {
    return format_grammar(format, nullptr, text::ToolCallFormat::None, false);
  } catch (const grammar::GrammarError& e) {
    const std::string& at = format.schema_field;
    throw bad_request(at, "'" + at + "' is not supported: " + e.what());
  }
}

std::shared_ptr<const grammar::Grammar> compile_output_grammar(const ApiRequest& r, text::ToolCallFormat format) {
  if (auto calls = compile_tool_choice(r, format)) return calls;  // the call is the answer
  // Tools offered beside a response format (tool_choice auto): a call, or
  // the answer in the format, as OpenAI's models may (the final answer
  // keeps to it).
  if (r.tools.is_array() && !r.tools.empty() && r.tool_choice.mode == ToolChoice::Mode::Auto &&
      format != text::ToolCallFormat::None) {
    try {
      return format_grammar(r.response_format, &r.tools, format, r.tool_choice.parallel);
    } catch (const grammar::GrammarError&) {
      // A tool's parameters the grammar cannot take (uniqueItems, a
      // tuple...): the format alone; a format it cannot take is a 400 there.
    }
  }
  return compile_response_format(r.response_format);
}

std::shared_ptr<const grammar::Grammar> compile_tool_choice(const ApiRequest& r, text::ToolCallFormat format) {
  const ToolChoice& c = r.tool_choice;
  if (c.mode != ToolChoice::Mode::Required && c.mode != ToolChoice::Mode::Named) return nullptr;
  if (format == text::ToolCallFormat::None)
    throw bad_request("tool_choice", "this model's chat template has no tool-call format, so a required or "
                                     "named tool call cannot be enforced; use tool_choice \"auto\"");
  try {
    return grammar::compile_tool_calls(format, r.tools, c.mode == ToolChoice::Mode::Named ? c.name : "", c.parallel);
  } catch (const grammar::GrammarError& e) {
    throw bad_request("tools", std::string("a tool's parameters are not supported for tool_choice: ") + e.what());
  }
}

ApiRequest parse_completion_request(const json& body) {
  ApiRequest r;
  r.endpoint = Endpoint::Completion;
  parse_common(body, r);

  const json* prompt = field(body, "prompt");
  if (!prompt) throw bad_request("prompt", "'prompt' is required");
  auto ids_from = [&](const json& arr) {
    for (const auto& t : arr) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
        throw bad_request("prompt", "a token-id prompt must hold non-negative integers");
      r.prompt_ids.push_back(int32_t(t.get<int64_t>()));
    }
    r.prompt_is_ids = true;
  };
  if (prompt->is_string()) {
    r.prompt_text = prompt->get<std::string>();
  } else if (prompt->is_array()) {
    if (prompt->empty()) throw bad_request("prompt", "'prompt' must not be empty");
    const json& first = (*prompt)[0];
    if (first.is_string() || first.is_array()) {
      if (prompt->size() != 1) throw bad_request("prompt", "only one prompt per request is supported");
      if (first.is_string()) r.prompt_text = first.get<std::string>();
      else ids_from(first);
    } else {
      ids_from(*prompt);
    }
    if (r.prompt_is_ids && r.prompt_ids.empty()) throw bad_request("prompt", "'prompt' must not be empty");
  } else {
    wrong_type("prompt", "a string, an array of token ids, or an array holding one of those", *prompt);
  }
  if (auto v = integer(body, "logprobs", 0, kMaxTopLogprobs)) r.logprobs = int(*v);
  // Not OpenAI's completions field; vLLM's and llama.cpp's servers take it, and Ollama's raw `format` is it.
  if (const json* v = field(body, "response_format")) r.response_format = parse_response_format(*v);
  if (boolean(body, "echo").value_or(false)) throw bad_request("echo", "'echo' is not supported");
  if (const json* v = field(body, "suffix"); v && !(v->is_string() && v->get<std::string>().empty()))
    throw bad_request("suffix", "'suffix' is not supported");
  return r;
}

}  // namespace hearth::server
