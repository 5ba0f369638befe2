#include "text/jinja_parser.h"

#include <initializer_list>

#include "text/jinja_error.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

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
      case Tok::Data: return "template data / text";
      case Tok::VarBegin: return "begin of print statement";
      case Tok::VarEnd: return "end of print statement";
      case Tok::BlockBegin: return "begin of statement block";
      case Tok::BlockEnd: return "end of statement block";
      case Tok::Eof: return "end of template";
      case Tok::String: return "string";
      case Tok::Int: return "integer";
      case Tok::Float: return "float";
      default: return t.text;
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

  // ---- statements ----
  Body subparse(const std::vector<const char*>& end_tokens) {
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

  Body parse_statements(std::vector<const char*> end_tokens, bool drop_needle) {
    skip_op(":");
    expect(Tok::BlockEnd);
    Body body = subparse(end_tokens);
    if (cur().type == Tok::Eof) {
      std::string looking;
      for (const char* e : end_tokens) looking += std::string(looking.empty() ? "" : " or ") + "'" + e + "'";
      fail("Unexpected end of template. Jinja was looking for the following tags: " + looking + ".");
    }
    if (drop_needle) next();
    return body;
  }

  void parse_statement(Body& body) {
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
      body.push_back(std::make_unique<Stmt>(name == "break" ? StmtKind::Break : StmtKind::Continue, line));
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

  StmtPtr parse_for() {
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

  StmtPtr parse_if() {
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

  StmtPtr parse_set() {
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

  StmtPtr parse_macro() {
    int line = next().line;
    auto s = std::make_unique<Stmt>(StmtKind::Macro, line);
    s->text = expect_any_name();
    parse_signature(*s);
    s->body = parse_statements({"endmacro"}, true);
    return s;
  }

  void parse_signature(Stmt& s) {
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

  StmtPtr parse_call_block() {
    int line = next().line;
    auto s = std::make_unique<Stmt>(StmtKind::CallBlock, line);
    if (is_op("(")) parse_signature(*s);
    s->expr = parse_expression();
    if (s->expr->kind != ExprKind::Call) fail("expected call", line);
    s->body = parse_statements({"endcall"}, true);
    return s;
  }

  StmtPtr parse_filter_block() {
    int line = next().line;
    auto s = std::make_unique<Stmt>(StmtKind::FilterBlock, line);
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
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

  ExprPtr parse_assign_target(bool with_tuple, bool name_only, std::vector<const char*> extra_end,
                              bool with_namespace) {
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

  // ---- expressions ----
  ExprPtr parse_expression(bool with_condexpr = true) {
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
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

  ExprPtr binary(ExprKind k, int line, ExprPtr a, ExprPtr b, std::string name = "") {
    auto e = std::make_unique<Expr>(k, line);
    e->a = std::move(a);
    e->b = std::move(b);
    e->name = std::move(name);
    return e;
  }

  ExprPtr parse_or() {
    int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or")) {
      left = binary(ExprKind::Or, line, std::move(left), parse_and());
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_and() {
    int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and")) {
      left = binary(ExprKind::And, line, std::move(left), parse_not());
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_not() {
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

  ExprPtr parse_compare() {
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

  ExprPtr parse_math1() {
    int line = cur().line;
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      left = binary(ExprKind::Binary, line, std::move(left), parse_concat(), op);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = std::make_unique<Expr>(ExprKind::Concat, line);
    e->items.push_back(std::move(first));
    while (skip_op("~")) e->items.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    int line = cur().line;
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      left = binary(ExprKind::Binary, line, std::move(left), parse_pow(), op);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_pow() {
    int line = cur().line;
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) {
      left = binary(ExprKind::Binary, line, std::move(left), parse_unary(true), "**");
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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

  bool is_tuple_end(const std::vector<const char*>& extra_end) const {
    if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")")) return true;
    for (const char* e : extra_end)
      if (is_name(e)) return true;
    return false;
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, std::vector<const char*> extra_end,
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

  ExprPtr parse_postfix(ExprPtr node) {
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

  ExprPtr parse_filter_expr(ExprPtr node) {
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

  ExprPtr parse_subscript(ExprPtr node) {
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

  ExprPtr parse_subscribed() {
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

  void parse_call_args(Expr& e) {
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

  ExprPtr parse_call(ExprPtr node) {
    auto e = std::make_unique<Expr>(ExprKind::Call, cur().line);
    e->a = std::move(node);
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
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

  ExprPtr parse_test(ExprPtr node) {
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

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace hearth::text::jinja
