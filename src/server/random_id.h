// Ids for the objects the server hands out (completions, messages,
// responses, tool calls): a prefix and 24 random hex digits.
#pragma once

#include <string>

namespace hearth::server {

std::string random_id(const char* prefix);

}  // namespace hearth::server
