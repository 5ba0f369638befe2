// The shape limits JSON from outside is held to before a value is built
// from it: request bodies, and JSON inside strings or written by the model
// (a tool call's arguments). Past them, the copies and dumps that recurse
// would overflow the stack, and lookups in ordered objects turn quadratic.
#pragma once

#include <string>
#include <string_view>

namespace hearth::text {

struct JsonShape {
  std::string problem;  // past a limit: nesting deeper than 64, an object of more than
                        // 4096 keys, more than 262,144 arrays and objects in all
  std::string syntax;   // not JSON (invalid UTF-8 included): the parser's message
};
JsonShape check_json_shape(std::string_view text);
// Valid JSON within the limits.
bool json_within_limits(std::string_view text);

}  // namespace hearth::text
