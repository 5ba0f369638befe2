// Parsing and validating the bodies of POST /v1/chat/completions and
// POST /v1/completions into a protocol-neutral request. Everything a client
// can get wrong is rejected here with a 400 naming the field (ApiError),
// before anything is queued. Unknown fields are ignored.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"
#include "engine/sampler.h"
#include "text/json_shape.h"
#include "text/tools/output_parser.h"

namespace hearth::server {

// Sampling fields a request (or the server's flags) may set; unset ones
// fall through to the next level of defaults.
struct SamplingOverrides {
  std::optional<float> temperature, top_p, min_p, xtc_probability, xtc_threshold;
  std::optional<int> top_k;
  std::optional<float> repetition_penalty, presence_penalty, frequency_penalty;
  std::optional<int> repetition_context_size, presence_context_size, frequency_context_size;
  std::optional<uint64_t> seed;
  std::vector<std::pair<int32_t, float>> logit_bias;

  // Writes the set fields over `params`.
  void apply_to(SamplingParams& params) const;
};

// The route a request came in on: which prompt it builds (a conversation
// or a raw prompt) and which wire format answers it.
enum class Endpoint { Chat, Completion, Messages, Responses };

// Whether and how the model may call the request's tools.
struct ToolChoice {
  enum class Mode { Auto, None, Required, Named } mode = Mode::Auto;
  std::string name;  // Named: the one tool it must call
  bool parallel = true;  // more than one call per reply
};

// Chat's response_format: free text, any JSON object, or a JSON Schema.
struct ResponseFormat {
  enum class Kind { Text, JsonObject, JsonSchema };
  Kind kind = Kind::Text;
  nlohmann::ordered_json schema;  // JsonSchema: json_schema.schema, as sent (property order kept)
  std::string schema_field = "response_format.json_schema.schema";  // what errors name
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::Chat;
  bool is_chat() const { return endpoint != Endpoint::Completion; }
  std::string model;  // as sent (only echoed in logs; the served model answers)

  // Chat: messages in OpenAI's shape with their content flattened to
  // strings and tool-call arguments as objects (what templates expect);
  // tools as OpenAI function tools.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;                      // null when absent
  ToolChoice tool_choice;
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs (+ reasoning_effort)

  // Completions: a text prompt or token ids used verbatim.
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  bool prompt_is_ids = false;

  SamplingOverrides sampling;
  std::optional<int64_t> max_tokens;  // unset: server default (else until EOS or the context ends)
  std::vector<std::string> stop;
  std::string session;  // session_id or prompt_cache_key (the server adds the headers' when unset)
  bool stream = false, include_usage = false;
  int logprobs = -1;  // -1: none; 0: the chosen token's; k: and the top k alternatives
  ResponseFormat response_format;
};

ApiRequest parse_chat_request(const nlohmann::ordered_json& body);
// The parts every protocol shares: stop strings, sessions, streaming, sampling.
void parse_common(const nlohmann::ordered_json& body, ApiRequest& r);
// A tool call's arguments as templates want them: a JSON string that holds
// an object becomes that object; anything else stays as sent. The strings
// of one request share `containers_left`, the arrays and objects they may
// still add (each string alone within a body's limit, ten of them would
// parse into ten bodies' worth); past it a string stays a string.
nlohmann::ordered_json arguments_object(const nlohmann::ordered_json& arguments, size_t& containers_left);
// The model's own calls, bounded by what it generated.
inline nlohmann::ordered_json arguments_object(const nlohmann::ordered_json& arguments) {
  size_t containers_left = text::kMaxJsonContainers;
  return arguments_object(arguments, containers_left);
}
// OpenAI function tools: [{"type": "function", "function": {"name", "parameters"?}}].
void check_function_tools(const nlohmann::ordered_json& tools, const std::string& where);
// Tools written flat, {type?, name, description?, <schema_key>} (Anthropic,
// Responses), as OpenAI function tools, errors naming the flat fields.
// check_type(type, where) refuses the "type" values the protocol does not
// serve (type is null when absent).
nlohmann::ordered_json flat_function_tools(
    const nlohmann::ordered_json& tools, const char* schema_key, bool schema_required,
    const std::function<void(const nlohmann::ordered_json* type, const std::string& where)>& check_type);
// tool_choice and parallel_tool_calls; naming a tool that is not offered is a 400.
ToolChoice parse_tool_choice(const nlohmann::ordered_json& body, const nlohmann::ordered_json& tools);
// A choice that asks for a call needs tools, and a named one a tool of that name.
void check_tool_choice(const ToolChoice& choice, const nlohmann::ordered_json& tools, const std::string& param);
// reasoning_effort (none ... xhigh) for the template, and enable_thinking
// unless the request set it.
void set_reasoning_effort(const std::string& effort, const std::string& where, ApiRequest& r);
ApiRequest parse_completion_request(const nlohmann::ordered_json& body);

// The grammar that constrains the output (null for free text): a required
// or named tool call; else the response format, or beside it a call of the
// request's tools where tool_choice is auto (either may come).
std::shared_ptr<const grammar::Grammar> compile_output_grammar(const ApiRequest& request, text::ToolCallFormat format);
// The response format alone. A schema the compiler does not support is a
// 400 naming response_format.json_schema.schema, with the keyword and its
// JSON pointer.
std::shared_ptr<const grammar::Grammar> compile_response_format(const ResponseFormat& format);
// tool_choice "required" or a named tool as a grammar of calls in the
// model's format (null when it asks for none, or the format is not
// constrained); a parameter schema it cannot compile is a 400 naming tools.
std::shared_ptr<const grammar::Grammar> compile_tool_choice(const ApiRequest& request, text::ToolCallFormat format);

// A session id from the body or a header: 1 to 256 bytes, else a 400 naming `field`.
const std::string& check_session_id(const std::string& field, const std::string& id);

}  // namespace hearth::server
