// Ids for the objects the server hands out (completions, messages,
// responses, tool calls): a prefix and 32 hex digits of 128 random bits.
#pragma once

#include <string>

namespace hearth::server {

std::string random_id(const char* prefix);
// n random letters and digits: a tool call's id where a chat template asks
// for that shape (Mistral's: 9 of them).
std::string random_alnum(size_t n);

}  // namespace hearth::server
