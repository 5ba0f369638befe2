// JSON in and out of the Jinja engine: values from nlohmann::ordered_json
// (key order kept, as Python's json.load keeps it), and a byte-exact copy of
// Python's json.dumps, which is what Hugging Face's `tojson` filter calls.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "text/jinja/value.h"

namespace hearth::text::jinja {

Value from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps indent (an int becomes that many spaces)
  std::string item_separator = ", ";  // Python's defaults: ", " without indent, "," with
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // HF's tojson passes ensure_ascii=False
};

// Python's json.dumps(value, ...). Throws TemplateError (kind Type) for
// values JSON cannot hold (Undefined, macros, namespaces...).
std::string json_dumps(const Value& v, const JsonDumpOptions& opt);

}  // namespace hearth::text::jinja
