// Parsing the body of POST /v1/messages (Anthropic's Messages API) into the
// protocol-neutral request: system text and content blocks become messages
// in the OpenAI shape the chat templates read (tool_use blocks become
// tool_calls, tool_result blocks tool messages, thinking blocks
// reasoning_content), Anthropic tools become function tools.
#pragma once

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace hearth::server {

// count_tokens: the same body without max_tokens (which /v1/messages requires).
ApiRequest parse_messages_request(const nlohmann::ordered_json& body, bool count_tokens = false);

}  // namespace hearth::server
