// Ids for the objects the server hands out (completions, messages,
// responses, tool calls): a prefix and 32 hex digits of 128 random bits.
#pragma once

#include <string>

namespace hearth::server {

std::string random_id(const char* prefix);

}  // namespace hearth::server
