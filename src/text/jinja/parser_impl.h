// The Jinja parser's class, shared by its two halves: statements
// (parser_statements.cpp) and expressions (parser_expressions.cpp).
// Private to the parser; parser.h is the interface.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/error.h"
#include "text/jinja/lexer.h"

namespace hearth::text::jinja::detail {

// Deeper nesting than this (brackets, unary operators, blocks) is refused
// rather than risking the stack; real templates nest a handful of levels.
constexpr int kMaxNesting = 256;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Body parse_template() {
    Body body = subparse({});
    if (cur().type != Tok::Eof) fail("unexpected token");
    return body;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return t_[i_]; }
  const Token& look() const { return t_[i_ + 1 < t_.size() ? i_ + 1 : i_]; }
  const Token& next() {
    const Token& t = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return t;
  }
  bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const std::string& msg, int line = 0) const {
    throw TemplateError(TemplateError::Kind::Syntax, msg, line ? line : cur().line);
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::Data:
        return "template data / text";
      case Tok::VarBegin:
        return "begin of print statement";
      case Tok::VarEnd:
        return "end of print statement";
      case Tok::BlockBegin:
        return "begin of statement block";
      case Tok::BlockEnd:
        return "end of statement block";
      case Tok::Eof:
        return "end of template";
      case Tok::String:
        return "string";
      case Tok::Int:
        return "integer";
      case Tok::Float:
        return "float";
      default:
        return t.text;
    }
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "', got '" + describe(cur()) + "'");
  }
  void expect_name(const char* n) {
    if (!skip_name(n)) fail(std::string("expected '") + n + "', got '" + describe(cur()) + "'");
  }
  std::string expect_any_name() {
    if (cur().type != Tok::Name) fail("expected a name, got '" + describe(cur()) + "'");
    return next().text;
  }
  void expect(Tok type) {
    if (cur().type != type) {
      Token want;
      want.type = type;
      fail("expected '" + describe(want) + "', got '" + describe(cur()) + "'");
    }
    next();
  }

  // ---- statements (parser_statements.cpp) ----
  Body subparse(const std::vector<const char*>& end_tokens);
  Body parse_statements(std::vector<const char*> end_tokens, bool drop_needle);
  void parse_statement(Body& body);
  StmtPtr parse_for();
  StmtPtr parse_if();
  StmtPtr parse_set();
  StmtPtr parse_macro();
  void parse_signature(Stmt& s);
  StmtPtr parse_call_block();
  StmtPtr parse_filter_block();
  StmtPtr parse_with();
  ExprPtr parse_assign_target(bool with_tuple, bool name_only, std::vector<const char*> extra_end,
                              bool with_namespace);

  // ---- expressions (parser_expressions.cpp) ----
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_condexpr();
  ExprPtr binary(ExprKind k, int line, ExprPtr a, ExprPtr b, std::string name = "");
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  bool is_tuple_end(const std::vector<const char*>& extra_end) const;
  ExprPtr parse_tuple(bool simplified, bool with_condexpr, std::vector<const char*> extra_end,
                      bool explicit_parentheses);
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  void parse_call_args(Expr& e);
  ExprPtr parse_call(ExprPtr node);
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);

  // Counts one level of nesting for the lifetime of the guard.
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail("template nested too deeply");
    }
    ~Nest() { --p_.depth_; }
    Parser& p_;
  };

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace hearth::text::jinja::detail
