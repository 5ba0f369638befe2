// Builds the syntax tree of a Jinja template from its tokens, following
// jinja2's grammar (parser.py): operator precedence, tuples, filters and
// tests, and the statements chat templates use (if/for/set/macro/call/
// filter/with, break/continue from the loopcontrols extension, and HF's
// {% generation %}). Template inheritance and includes are not supported.
#pragma once

#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace hearth::text::jinja {

// Throws TemplateError (kind Syntax) with the line of the problem.
Body parse(const std::vector<Token>& tokens);

}  // namespace hearth::text::jinja
