// The expressions of the Jinja parser, by jinja2's precedence levels.
#include "text/jinja/parser_impl.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja::detail {

ExprPtr Parser::parse_expression(bool with_condexpr) {
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  int line = cur().line;
  ExprPtr expr1 = parse_or();
  while (skip_name("if")) {
    auto e = std::make_unique<Expr>(ExprKind::CondExpr, line);
    e->a = parse_or();
    if (skip_name("else")) e->c = parse_condexpr();
    e->b = std::move(expr1);
    expr1 = std::move(e);
    line = cur().line;
  }
  return expr1;
}

ExprPtr Parser::binary(ExprKind k, int line, ExprPtr a, ExprPtr b, std::string name) {
  auto e = std::make_unique<Expr>(k, line);
  e->a = std::move(a);
  e->b = std::move(b);
  e->name = std::move(name);
  return e;
}

ExprPtr Parser::parse_or() {
  int line = cur().line;
  ExprPtr left = parse_and();
  while (skip_name("or")) {
    left = binary(ExprKind::Or, line, std::move(left), parse_and());
    line = cur().line;
  }
  return left;
}

ExprPtr Parser::parse_and() {
  int line = cur().line;
  ExprPtr left = parse_not();
  while (skip_name("and")) {
    left = binary(ExprKind::And, line, std::move(left), parse_not());
    line = cur().line;
  }
  return left;
}

ExprPtr Parser::parse_not() {
  Nest nest(*this);
  if (is_name("not")) {
    int line = next().line;
    auto e = std::make_unique<Expr>(ExprKind::Unary, line);
    e->name = "not";
    e->a = parse_not();
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  int line = cur().line;
  ExprPtr expr = parse_math1();
  std::vector<std::string> ops;
  std::vector<ExprPtr> operands;
  while (true) {
    if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                  cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
      ops.push_back(next().text);
    } else if (skip_name("in")) {
      ops.push_back("in");
    } else if (is_name("not") && look().type == Tok::Name && look().text == "in") {
      next();
      next();
      ops.push_back("notin");
    } else {
      break;
    }
    operands.push_back(parse_math1());
    line = cur().line;
  }
  if (ops.empty()) return expr;
  auto e = std::make_unique<Expr>(ExprKind::Compare, line);
  e->a = std::move(expr);
  e->ops = std::move(ops);
  e->items = std::move(operands);
  return e;
}

ExprPtr Parser::parse_math1() {
  int line = cur().line;
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    std::string op = next().text;
    left = binary(ExprKind::Binary, line, std::move(left), parse_concat(), op);
    line = cur().line;
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  int line = cur().line;
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  auto e = std::make_unique<Expr>(ExprKind::Concat, line);
  e->items.push_back(std::move(first));
  while (skip_op("~")) e->items.push_back(parse_math2());
  return e;
}

ExprPtr Parser::parse_math2() {
  int line = cur().line;
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    std::string op = next().text;
    left = binary(ExprKind::Binary, line, std::move(left), parse_pow(), op);
    line = cur().line;
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  int line = cur().line;
  ExprPtr left = parse_unary(true);
  while (skip_op("**")) {
    left = binary(ExprKind::Binary, line, std::move(left), parse_unary(true), "**");
    line = cur().line;
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  Nest nest(*this);
  int line = cur().line;
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    auto e = std::make_unique<Expr>(ExprKind::Unary, line);
    e->name = next().text;
    e->a = parse_unary(false);
    node = std::move(e);
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& tok = cur();
  int line = tok.line;
  if (tok.type == Tok::Name) {
    auto e = std::make_unique<Expr>(ExprKind::Const, line);
    const std::string& n = tok.text;
    if (n == "true" || n == "True" || n == "false" || n == "False") {
      e->value = Value(n == "true" || n == "True");
    } else if (n == "none" || n == "None") {
      e->value = Value::none();
    } else {
      e->kind = ExprKind::Name;
      e->name = n;
    }
    next();
    return e;
  }
  if (tok.type == Tok::String) {
    std::string s;
    while (cur().type == Tok::String) s += next().text;
    auto e = std::make_unique<Expr>(ExprKind::Const, line);
    e->value = Value(std::move(s));
    return e;
  }
  if (tok.type == Tok::Int || tok.type == Tok::Float) {
    auto e = std::make_unique<Expr>(ExprKind::Const, line);
    e->value = tok.type == Tok::Int ? Value(tok.ival) : Value(tok.fval);
    next();
    return e;
  }
  if (is_op("(")) {
    next();
    ExprPtr e = parse_tuple(false, true, {}, true);
    expect_op(")");
    return e;
  }
  if (is_op("[")) {
    next();
    auto e = std::make_unique<Expr>(ExprKind::List, line);
    while (!is_op("]")) {
      if (!e->items.empty()) expect_op(",");
      if (is_op("]")) break;
      e->items.push_back(parse_expression());
    }
    expect_op("]");
    return e;
  }
  if (is_op("{")) {
    next();
    auto e = std::make_unique<Expr>(ExprKind::Dict, line);
    while (!is_op("}")) {
      if (!e->items.empty()) expect_op(",");
      if (is_op("}")) break;
      e->items.push_back(parse_expression());
      expect_op(":");
      e->items.push_back(parse_expression());
    }
    expect_op("}");
    return e;
  }
  fail("unexpected '" + describe(tok) + "'");
}

bool Parser::is_tuple_end(const std::vector<const char*>& extra_end) const {
  if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")")) return true;
  for (const char* e : extra_end)
    if (is_name(e)) return true;
  return false;
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condexpr, std::vector<const char*> extra_end,
                            bool explicit_parentheses) {
  int line = cur().line;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) expect_op(",");
    if (is_tuple_end(extra_end)) break;
    if (simplified)
      args.push_back(parse_primary());
    else
      args.push_back(parse_expression(with_condexpr));
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
    line = cur().line;
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parentheses) fail("Expected an expression, got '" + describe(cur()) + "'");
  }
  auto e = std::make_unique<Expr>(ExprKind::Tuple, line);
  e->items = std::move(args);
  return e;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter(std::move(node), false);
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& tok = next();
  int line = tok.line;
  if (tok.text == ".") {
    const Token& attr = next();
    if (attr.type == Tok::Name) {
      auto e = std::make_unique<Expr>(ExprKind::Getattr, line);
      e->a = std::move(node);
      e->name = attr.text;
      return e;
    }
    if (attr.type != Tok::Int) fail("expected name or number", attr.line);
    auto e = std::make_unique<Expr>(ExprKind::Getitem, line);
    e->a = std::move(node);
    e->b = std::make_unique<Expr>(ExprKind::Const, attr.line);
    e->b->value = Value(attr.ival);
    return e;
  }
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  auto e = std::make_unique<Expr>(ExprKind::Getitem, line);
  e->a = std::move(node);
  if (args.size() == 1) {
    e->b = std::move(args[0]);
  } else {
    e->b = std::make_unique<Expr>(ExprKind::Tuple, line);
    e->b->items = std::move(args);
  }
  return e;
}

ExprPtr Parser::parse_subscribed() {
  int line = cur().line;
  auto s = std::make_unique<Expr>(ExprKind::Slice, line);
  if (is_op(":")) {
    next();
  } else {
    ExprPtr node = parse_expression();
    if (!is_op(":")) return node;
    next();
    s->a = std::move(node);
  }
  if (!is_op(":") && !is_op("]") && !is_op(",")) s->b = parse_expression();
  if (skip_op(":")) {
    if (!is_op("]") && !is_op(",")) s->c = parse_expression();
  }
  return s;
}

void Parser::parse_call_args(Expr& e) {
  int line = cur().line;
  expect_op("(");
  bool require_comma = false;
  auto ensure = [&](bool ok) {
    if (!ok) fail("invalid syntax for function call expression", line);
  };
  while (!is_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*")) {
      ensure(!e.star && !e.dstar);
      next();
      e.star = parse_expression();
    } else if (is_op("**")) {
      ensure(!e.dstar);
      next();
      e.dstar = parse_expression();
    } else if (cur().type == Tok::Name && look().type == Tok::Op && look().text == "=") {
      ensure(!e.dstar);
      std::string key = next().text;
      next();
      e.kwargs.emplace_back(key, parse_expression());
    } else {
      ensure(!e.star && !e.dstar && e.kwargs.empty());
      e.items.push_back(parse_expression());
    }
    require_comma = true;
  }
  expect_op(")");
}

ExprPtr Parser::parse_call(ExprPtr node) {
  auto e = std::make_unique<Expr>(ExprKind::Call, cur().line);
  e->a = std::move(node);
  parse_call_args(*e);
  return e;
}

ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) next();
    auto e = std::make_unique<Expr>(ExprKind::Filter, cur().line);
    e->name = expect_any_name();
    while (skip_op(".")) e->name += "." + expect_any_name();
    if (is_op("(")) parse_call_args(*e);
    e->a = std::move(node);
    node = std::move(e);
    start_inline = false;
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  int line = next().line;  // 'is'
  bool negated = skip_name("not");
  auto e = std::make_unique<Expr>(ExprKind::Test, line);
  e->name = expect_any_name();
  while (skip_op(".")) e->name += "." + expect_any_name();
  if (is_op("(")) {
    parse_call_args(*e);
  } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Int ||
              cur().type == Tok::Float || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail("You cannot chain multiple tests with is");
    e->items.push_back(parse_postfix(parse_primary()));
  }
  e->a = std::move(node);
  if (!negated) return e;
  auto n = std::make_unique<Expr>(ExprKind::Unary, line);
  n->name = "not";
  n->a = std::move(e);
  return n;
}

}  // namespace hearth::text::jinja::detail
