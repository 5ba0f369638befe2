// The syntax tree of a parsed Jinja template (see parser.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace hearth::text::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  Const,     // value
  Name,      // name
  List,      // items
  Tuple,     // items
  Dict,      // items: key0, value0, key1, value1, ...
  Getattr,   // a.name
  Getitem,   // a[b]
  Slice,     // a:b:c inside [] (any may be null)
  Call,      // a(items..., kwargs..., *star, **dstar)
  Filter,    // a|name(items..., kwargs...); a is null in filter blocks / set blocks
  Test,      // a is name(items..., kwargs...)
  Unary,     // name in {"-", "+", "not"} applied to a
  Binary,    // a name b, name in {+ - * / // % **}
  Compare,   // a ops[0] items[0] ops[1] items[1] ... (chained, Python-style)
  And,       // a and b
  Or,        // a or b
  CondExpr,  // b if a else c (c may be null)
  Concat,    // items joined with ~
  NSRef,     // name.attr as an assignment target (set ns.attr = ...)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;
  std::string attr;  // NSRef attribute
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<std::string> ops;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr star, dstar;  // *args and **kwargs of a call

  Expr(ExprKind k, int l) : kind(k), line(l) {}
};

enum class StmtKind {
  Text,         // text
  Output,       // expr
  If,           // expr test, body, else_body (elif becomes a nested If there)
  For,          // target, expr iterable, cond filter, body, else_body, recursive
  Set,          // target = expr
  SetBlock,     // target, filter (Filter chain with null subject) or null, body
  Macro,        // name, params, defaults, body
  CallBlock,    // expr (a Call), params, defaults, body
  FilterBlock,  // filter, body
  With,         // targets / values in params + defaults, body
  Break,
  Continue,
  Generation,   // {% generation %} of HF's AssistantTracker: renders its body
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;  // Text; Macro name
  ExprPtr expr;      // Output, If test, For iterable, Set value, CallBlock call
  ExprPtr target;    // For, Set, SetBlock
  ExprPtr cond;      // For inline filter
  ExprPtr filter;    // SetBlock / FilterBlock
  Body body, else_body;
  bool recursive = false;
  std::vector<std::string> params;  // Macro / CallBlock parameters; With targets
  std::vector<ExprPtr> defaults;    // defaults of the last params; With values (all)
  // Names that start undefined in this statement's body frame (and in a for
  // loop's else frame); see scope.h.
  std::vector<std::string> frame_locals, else_locals;

  Stmt(StmtKind k, int l) : kind(k), line(l) {}
};

}  // namespace hearth::text::jinja
