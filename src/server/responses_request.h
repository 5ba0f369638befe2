// Parsing the body of POST /v1/responses (OpenAI's Responses API) into the
// protocol-neutral request. `input` (a string, or message, function_call,
// function_call_output and reasoning items) becomes messages in the shape
// the chat templates read; Responses function tools become chat function
// tools. The stored conversation of previous_response_id and the
// instructions are put in front by the route, which owns the store.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace hearth::server {

struct ResponsesRequest {
  ApiRequest api;  // messages: this request's input only
  std::string instructions;
  std::string previous_response_id;
  bool store = true;
  nlohmann::ordered_json echo;  // request fields the response object repeats (tools, text, ...)
};

ResponsesRequest parse_responses_request(const nlohmann::ordered_json& body);

}  // namespace hearth::server
