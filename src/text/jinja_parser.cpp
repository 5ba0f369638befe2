#include "text/jinja_parser.h"

#include "text/jinja_parser_impl.h"

namespace hearth::text::jinja {

Body parse(const std::vector<Token>& tokens) {
  return detail::Parser(tokens).parse_template();
}

}  // namespace hearth::text::jinja
