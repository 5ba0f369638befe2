// The shape limits JSON from outside is held to before a value is built
// from it: request bodies, and JSON inside strings or written by the model
// (a tool call's arguments). Past them, the copies and dumps that recurse
// would overflow the stack, and lookups in ordered objects turn quadratic.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hearth::text {

// An empty array is 3 bytes of body and about 80 of parsed value (a node and
// its vector); a body of them would be 25 times its size once parsed.
constexpr size_t kMaxJsonContainers = size_t(1) << 18;
constexpr size_t kJsonContainerBytes = 80;  // what each array or object holds in memory, about

struct JsonShape {
  std::string problem;  // past a limit: nesting deeper than 64, an object of more than
                        // 4096 keys, more than `max_containers` arrays and objects in all
  std::string syntax;   // not JSON (invalid UTF-8 included): the parser's message
  size_t containers = 0;  // arrays and objects (up to the first problem)
};
JsonShape check_json_shape(std::string_view text, size_t max_containers = kMaxJsonContainers);
// Valid JSON within the limits.
bool json_within_limits(std::string_view text);

}  // namespace hearth::text
