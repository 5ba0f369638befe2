// Ollama's API (/api/chat, /api/generate) read into the protocol-neutral
// request: the body is translated into the OpenAI chat or completions body
// it means (options -> sampling fields, format -> response_format, think ->
// enable_thinking / reasoning_effort) and parsed by that route's parser, so
// both protocols validate alike.
#pragma once

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace hearth::server {

ApiRequest parse_ollama_chat(const nlohmann::ordered_json& body);
// raw: the prompt as it is; else as the user message of a chat (with `system`).
ApiRequest parse_ollama_generate(const nlohmann::ordered_json& body);

}  // namespace hearth::server
