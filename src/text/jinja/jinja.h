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

#include "text/jinja/error.h"
#include "text/jinja/value.h"

namespace hearth::text::jinja {

struct ParsedTemplate;

// Bounds on one render, so that no template (a model's file, not a client's)
// can hold a server thread for good: past them, a TemplateError of kind
// Limit. Strings and lists have fixed size limits (value.h).
struct RenderLimits {
  // Units of work: one per expression evaluated and statement run, four
  // per loop pass, plus one per 16 bytes of text a value copies or the
  // output receives and of each list built. Chat templates spend about a
  // hundred per message plus its text's share (Command R7B's, quadratic,
  // about 6 per message squared: 900 messages take 5 million); the default
  // is a few seconds of work at most.
  int64_t max_steps = 50'000'000;
};

class Template {
 public:
  // Parses the template. Throws TemplateError (kind Syntax) with the line.
  explicit Template(const std::string& source);

  // Renders with the given variables (a dict). Throws TemplateError with the
  // line where rendering failed: raise_exception, undefined values used as
  // callables or operands, type errors, limits.
  std::string render(const Value& vars, const RenderLimits& limits = {}) const;
  std::string render(const nlohmann::ordered_json& vars, const RenderLimits& limits = {}) const;

 private:
  std::shared_ptr<const ParsedTemplate> parsed_;
};

}  // namespace hearth::text::jinja
