// The statements of the Jinja parser: the template body and its tags.
#include "text/jinja/parser_impl.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja::detail {

Body Parser::subparse(const std::vector<const char*>& end_tokens) {
  Nest nest(*this);
  Body body;
  while (cur().type != Tok::Eof) {
    const Token& tok = cur();
    if (tok.type == Tok::Data) {
      auto s = std::make_unique<Stmt>(StmtKind::Text, tok.line);
      s->text = tok.text;
      body.push_back(std::move(s));
      next();
    } else if (tok.type == Tok::VarBegin) {
      next();
      auto s = std::make_unique<Stmt>(StmtKind::Output, tok.line);
      s->expr = parse_tuple(false, true, {}, false);
      expect(Tok::VarEnd);
      body.push_back(std::move(s));
    } else if (tok.type == Tok::BlockBegin) {
      next();
      for (const char* e : end_tokens)
        if (is_name(e)) return body;
      parse_statement(body);
      expect(Tok::BlockEnd);
    } else {
      fail("unexpected '" + describe(tok) + "'");
    }
  }
  return body;
}

Body Parser::parse_statements(std::vector<const char*> end_tokens, bool drop_needle) {
  skip_op(":");
  expect(Tok::BlockEnd);
  Body body = subparse(end_tokens);
  if (cur().type == Tok::Eof) {
    std::string looking;
    for (const char* e : end_tokens)
      looking += std::string(looking.empty() ? "" : " or ") + "'" + e + "'";
    fail("Unexpected end of template. Jinja was looking for the following tags: " + looking + ".");
  }
  if (drop_needle) next();
  return body;
}

void Parser::parse_statement(Body& body) {
  if (cur().type != Tok::Name) fail("tag name expected");
  const std::string name = cur().text;
  int line = cur().line;
  if (name == "for") return body.push_back(parse_for());
  if (name == "if") return body.push_back(parse_if());
  if (name == "set") return body.push_back(parse_set());
  if (name == "macro") return body.push_back(parse_macro());
  if (name == "call") return body.push_back(parse_call_block());
  if (name == "filter") return body.push_back(parse_filter_block());
  if (name == "with") return body.push_back(parse_with());
  if (name == "break" || name == "continue") {
    next();
    body.push_back(
        std::make_unique<Stmt>(name == "break" ? StmtKind::Break : StmtKind::Continue, line));
    return;
  }
  if (name == "generation") {
    next();
    auto s = std::make_unique<Stmt>(StmtKind::Generation, line);
    s->body = parse_statements({"endgeneration"}, true);
    body.push_back(std::move(s));
    return;
  }
  if (name == "print") {
    next();
    bool first = true;
    while (cur().type != Tok::BlockEnd) {
      if (!first) expect_op(",");
      first = false;
      auto s = std::make_unique<Stmt>(StmtKind::Output, line);
      s->expr = parse_expression();
      body.push_back(std::move(s));
    }
    return;
  }
  if (name == "block" || name == "extends" || name == "include" || name == "import" ||
      name == "from" || name == "autoescape" || name == "do")
    fail("the '" + name + "' tag is not supported in chat templates");
  fail("Encountered unknown tag '" + name + "'.");
}

StmtPtr Parser::parse_for() {
  int line = next().line;
  auto s = std::make_unique<Stmt>(StmtKind::For, line);
  s->target = parse_assign_target(true, false, {"in"}, false);
  expect_name("in");
  s->expr = parse_tuple(false, false, {"recursive"}, false);
  if (skip_name("if")) s->cond = parse_expression();
  s->recursive = skip_name("recursive");
  s->body = parse_statements({"endfor", "else"}, false);
  if (next().text == "else") s->else_body = parse_statements({"endfor"}, true);
  return s;
}

StmtPtr Parser::parse_if() {
  int line = next().line;
  auto s = std::make_unique<Stmt>(StmtKind::If, line);
  s->expr = parse_tuple(false, false, {}, false);
  s->body = parse_statements({"elif", "else", "endif"}, false);
  const Token& tok = next();
  if (tok.text == "elif") {
    // Re-enter as a nested if, which consumes the rest of the chain.
    --i_;
    s->else_body.push_back(parse_if());
  } else if (tok.text == "else") {
    s->else_body = parse_statements({"endif"}, true);
  }
  return s;
}

StmtPtr Parser::parse_set() {
  int line = next().line;
  ExprPtr target = parse_assign_target(true, false, {}, true);
  if (skip_op("=")) {
    auto s = std::make_unique<Stmt>(StmtKind::Set, line);
    s->target = std::move(target);
    s->expr = parse_tuple(false, true, {}, false);
    return s;
  }
  auto s = std::make_unique<Stmt>(StmtKind::SetBlock, line);
  s->target = std::move(target);
  s->filter = parse_filter(nullptr, false);
  s->body = parse_statements({"endset"}, true);
  return s;
}

StmtPtr Parser::parse_macro() {
  int line = next().line;
  auto s = std::make_unique<Stmt>(StmtKind::Macro, line);
  s->text = expect_any_name();
  parse_signature(*s);
  s->body = parse_statements({"endmacro"}, true);
  return s;
}

void Parser::parse_signature(Stmt& s) {
  expect_op("(");
  while (!is_op(")")) {
    if (!s.params.empty()) expect_op(",");
    if (is_op(")")) break;
    s.params.push_back(expect_any_name());
    if (skip_op("=")) {
      s.defaults.push_back(parse_expression());
    } else if (!s.defaults.empty()) {
      fail("non-default argument follows default argument");
    }
  }
  expect_op(")");
}

StmtPtr Parser::parse_call_block() {
  int line = next().line;
  auto s = std::make_unique<Stmt>(StmtKind::CallBlock, line);
  if (is_op("(")) parse_signature(*s);
  s->expr = parse_expression();
  if (s->expr->kind != ExprKind::Call) fail("expected call", line);
  s->body = parse_statements({"endcall"}, true);
  return s;
}

StmtPtr Parser::parse_filter_block() {
  int line = next().line;
  auto s = std::make_unique<Stmt>(StmtKind::FilterBlock, line);
  s->filter = parse_filter(nullptr, true);
  s->body = parse_statements({"endfilter"}, true);
  return s;
}

StmtPtr Parser::parse_with() {
  int line = next().line;
  auto s = std::make_unique<Stmt>(StmtKind::With, line);
  while (cur().type != Tok::BlockEnd) {
    if (!s->params.empty()) expect_op(",");
    s->params.push_back(expect_any_name());
    expect_op("=");
    s->defaults.push_back(parse_expression());
  }
  s->body = parse_statements({"endwith"}, true);
  return s;
}

ExprPtr Parser::parse_assign_target(bool with_tuple, bool name_only,
                                    std::vector<const char*> extra_end, bool with_namespace) {
  if (with_namespace && look().type == Tok::Op && look().text == ".") {
    int line = cur().line;
    auto e = std::make_unique<Expr>(ExprKind::NSRef, line);
    e->name = expect_any_name();
    next();  // dot
    e->attr = expect_any_name();
    return e;
  }
  ExprPtr target;
  if (name_only) {
    target = std::make_unique<Expr>(ExprKind::Name, cur().line);
    target->name = expect_any_name();
  } else if (with_tuple) {
    target = parse_tuple(true, true, extra_end, false);
  } else {
    target = parse_primary();
  }
  auto assignable = [](const Expr& e) { return e.kind == ExprKind::Name; };
  bool ok = assignable(*target);
  if (target->kind == ExprKind::Tuple) {
    ok = true;
    for (const auto& x : target->items) ok = ok && assignable(*x);
  }
  if (!ok) fail("can't assign to this expression", target->line);
  return target;
}

}  // namespace hearth::text::jinja::detail
