// Base64 decoding (the standard and URL-safe alphabets, padding optional),
// for tiktoken rank files and audio sent inside JSON.
#pragma once

#include <string>
#include <string_view>

namespace hearth {

// Decodes into out (reused across calls); false for a character outside
// both alphabets or a length no encoding produces.
bool base64_decode(std::string_view in, std::string& out);

}  // namespace hearth
