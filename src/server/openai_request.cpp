#include "server/openai_request.h"

#include <cmath>
#include <limits>

#include "engine/grammar/json_schema.h"
#include "server/api_error.h"

namespace hearth::server {

using json = nlohmann::ordered_json;

namespace {

constexpr size_t kMaxStops = 16;
constexpr int kMaxTopLogprobs = 20;
constexpr size_t kMaxSessionId = 256;
constexpr int kMaxDepth = 64;
constexpr size_t kMaxKeys = 4096;

const char* type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const json& v) {
  throw bad_request(field, "'" + field + "' must be " + expected + ", not " + type_name(v));
}

// A field that is absent or null counts as unset.
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number(const json& body, const char* name, double lo, double hi, bool lo_open = false) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo)) {
    std::string range = (lo_open ? "(" : "[") + json(lo).dump() + ", " + json(hi).dump() + "]";
    if (hi == std::numeric_limits<double>::max()) range = (lo_open ? "> " : ">= ") + json(lo).dump();
    throw bad_request(name, "'" + std::string(name) + "' must be " + range + ", got " + v->dump());
  }
  return x;
}

// Integers may arrive as 5 or 5.0; anything fractional is a type error.
std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  int64_t x;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      x = std::numeric_limits<int64_t>::max();
    else
      x = v->get<int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) && std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9e18) {
    x = int64_t(v->get<double>());
  } else {
    wrong_type(name, "an integer", *v);
  }
  if (x < lo || x > hi) {
    std::string range = hi == std::numeric_limits<int64_t>::max() ? ">= " + std::to_string(lo)
                                                                   : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    throw bad_request(name, "'" + std::string(name) + "' must be " + range + ", got " + v->dump());
  }
  return x;
}

std::optional<bool> boolean(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

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
      size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != key.size() || id < 0 || id > std::numeric_limits<int32_t>::max())
        throw bad_request("logit_bias", "'logit_bias' keys must be token ids, got \"" + key + "\"");
      if (!bias.is_number() || !std::isfinite(bias.get<double>()) || bias.get<double>() < -100 || bias.get<double>() > 100)
        throw bad_request("logit_bias", "'logit_bias' values must be numbers in [-100, 100], got " + bias.dump() +
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

namespace {

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

json parse_body(const std::string& body) {
  // Bounds checked while parsing, so a hostile body fails fast: deep nesting
  // would overflow the stack in the recursive copies and dumps that follow,
  // and an object with very many keys costs quadratic time (ordered_json
  // looks every key up linearly).
  std::vector<size_t> keys;  // per open object, the keys seen so far
  auto limits = [&](int depth, json::parse_event_t event, json&) {
    if (depth > kMaxDepth)
      throw ApiError(400, "the request body nests deeper than " + std::to_string(kMaxDepth) + " levels",
                     "invalid_request_error", {}, "invalid_json");
    if (event == json::parse_event_t::object_start) keys.push_back(0);
    else if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty() && ++keys.back() > kMaxKeys)
      throw ApiError(400, "an object in the request body has more than " + std::to_string(kMaxKeys) + " keys",
                     "invalid_request_error", {}, "invalid_json");
    return true;
  };
  json parsed;
  try {
    parsed = json::parse(body, limits);
  } catch (const json::exception& e) {
    // Syntax errors, invalid UTF-8, unpaired surrogates, numbers out of range (1e400).
    std::string what = e.what();
    if (auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    throw ApiError(400, "the request body is not valid JSON: " + what, "invalid_request_error", {}, "invalid_json");
  }
  if (!parsed.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_request_error");
  return parsed;
}

ApiRequest parse_chat_request(const json& body) {
  ApiRequest r;
  r.endpoint = Endpoint::Chat;
  parse_common(body, r);

  const json* messages = field(body, "messages");
  if (!messages) throw bad_request("messages", "'messages' is required");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) throw bad_request("messages", "'messages' must not be empty");
  static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool"};
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(at, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) throw bad_request(at + ".role", "'" + at + ".role' must be a string");
    if (std::none_of(std::begin(kRoles), std::end(kRoles), [&](const char* k) { return *role == k; }))
      throw bad_request(at + ".role", "'" + at + ".role' must be one of system, developer, user, assistant, tool; got " +
                                          role->dump());
    json out = m;
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      if (*role != "assistant") throw bad_request(at + ".content", "'" + at + ".content' is required");
      out["content"] = "";  // an assistant turn that only calls tools
    } else {
      out["content"] = flatten_content(*content, i);
    }
    r.messages.push_back(std::move(out));
  }

  if (const json* v = field(body, "tools")) {
    if (!v->is_array()) wrong_type("tools", "an array", *v);
    r.tools = *v;
  }
  if (const json* v = field(body, "chat_template_kwargs")) {
    if (!v->is_object()) wrong_type("chat_template_kwargs", "an object", *v);
    r.template_kwargs = *v;
  }
  if (const json* v = field(body, "reasoning_effort")) {
    static const char* kEfforts[] = {"none", "minimal", "low", "medium", "high"};
    if (!v->is_string() || std::none_of(std::begin(kEfforts), std::end(kEfforts), [&](const char* k) { return *v == k; }))
      throw bad_request("reasoning_effort", "'reasoning_effort' must be one of none, minimal, low, medium, high");
    r.template_kwargs["reasoning_effort"] = *v;
  }

  if (const json* v = field(body, "response_format")) r.response_format = parse_response_format(*v);

  const bool logprobs = boolean(body, "logprobs").value_or(false);
  auto top = integer(body, "top_logprobs", 0, kMaxTopLogprobs);
  if (top && !logprobs) throw bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  if (logprobs) r.logprobs = int(top.value_or(0));
  return r;
}

std::shared_ptr<const grammar::Grammar> compile_response_format(const ResponseFormat& format) {
  switch (format.kind) {
    case ResponseFormat::Kind::Text:
      return nullptr;
    case ResponseFormat::Kind::JsonObject:
      return grammar::compile_json_object();
    case ResponseFormat::Kind::JsonSchema:
      break;
  }
  const std::string at = "response_format.json_schema.schema";
  try {
    return grammar::compile_json_schema(format.schema);
  } catch (const grammar::GrammarError& e) {
    throw bad_request(at, "'" + at + "' is not supported: " + e.what());
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
  if (boolean(body, "echo").value_or(false)) throw bad_request("echo", "'echo' is not supported");
  if (const json* v = field(body, "suffix"); v && !(v->is_string() && v->get<std::string>().empty()))
    throw bad_request("suffix", "'suffix' is not supported");
  return r;
}

}  // namespace hearth::server
