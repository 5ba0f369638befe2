#include "text/jinja/parser.h"

#include "text/jinja/parser_impl.h"

namespace hearth::text::jinja {

Body parse(const std::vector<Token>& tokens) {
  return detail::Parser(tokens).parse_template();
}

}  // namespace hearth::text::jinja
