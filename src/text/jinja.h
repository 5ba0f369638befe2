// A Jinja2 template engine for chat templates, configured as Hugging Face
// transformers configures jinja2 for apply_chat_template:
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
// extensions=[loopcontrols]) with HF's `tojson` filter (json.dumps with
// ensure_ascii=False, indent/separators/sort_keys passed through) and the
// `raise_exception` and `strftime_now` globals. Output is byte-identical to
// Python jinja2 for the templates of current models (see
// docs/chat-templates.md for what is covered and how it is tested).
//
// Thread safety: a Template is immutable after construction; render() may
// run concurrently from many threads.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "text/jinja_error.h"
#include "text/jinja_value.h"

namespace hearth::text::jinja {

struct ParsedTemplate;

class Template {
 public:
  // Parses the template. Throws TemplateError (kind Syntax) with the line.
  explicit Template(const std::string& source);

  // Renders with the given variables (a dict). Throws TemplateError with the
  // line where rendering failed: raise_exception, undefined values used as
  // callables or operands, type errors.
  std::string render(const Value& vars) const;
  std::string render(const nlohmann::ordered_json& vars) const;

 private:
  std::shared_ptr<const ParsedTemplate> parsed_;
};

}  // namespace hearth::text::jinja
