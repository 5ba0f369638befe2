#include "text/jinja/jinja.h"

#include "text/jinja/builtins.h"
#include "text/jinja/eval.h"
#include "text/jinja/json.h"
#include "text/jinja/lexer.h"
#include "text/jinja/parser.h"
#include "text/jinja/scope.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

struct ParsedTemplate {
  Body body;
  std::vector<std::string> root_locals;
};

Template::Template(const std::string& source) {
  auto p = std::make_shared<ParsedTemplate>();
  p->body = parse(tokenize(source));
  p->root_locals = analyze_frames(p->body);
  parsed_ = std::move(p);
}

std::string Template::render(const Value& vars, const RenderLimits& limits) const {
  auto globals = std::make_shared<DictData>();
  add_global_functions(*globals);
  if (vars.is_dict())
    for (const auto& [k, v] : vars.dict_data().items) globals->set(k, v);
  Interpreter in(globals, limits);
  return in.render(parsed_->body, parsed_->root_locals);
}

std::string Template::render(const nlohmann::ordered_json& vars, const RenderLimits& limits) const {
  return render(from_json(vars), limits);
}

}  // namespace hearth::text::jinja
