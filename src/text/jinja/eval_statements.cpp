// The interpreter's statements, macros and loops, and the namespace object
// (eval_expressions.cpp evaluates the expressions).
#include "text/jinja/eval.h"

#include <new>
#include <unordered_set>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

constexpr int kMaxCallDepth = 200;

// Does the body mention `name` (as a variable)? jinja2 lets a macro take
// extra positional / keyword arguments only when it uses varargs / kwargs.
bool mentions(const Expr* e, const std::string& name);
bool mentions(const Body& body, const std::string& name);

bool mentions(const Expr* e, const std::string& name) {
  if (!e) return false;
  if (e->kind == ExprKind::Name && e->name == name) return true;
  if (mentions(e->a.get(), name) || mentions(e->b.get(), name) || mentions(e->c.get(), name) ||
      mentions(e->star.get(), name) || mentions(e->dstar.get(), name))
    return true;
  for (const auto& x : e->items)
    if (mentions(x.get(), name)) return true;
  for (const auto& kv : e->kwargs)
    if (mentions(kv.second.get(), name)) return true;
  return false;
}

bool mentions(const Body& body, const std::string& name) {
  for (const auto& s : body) {
    if (mentions(s->expr.get(), name) || mentions(s->cond.get(), name) ||
        mentions(s->filter.get(), name) || mentions(s->body, name) || mentions(s->else_body, name))
      return true;
    for (const auto& d : s->defaults)
      if (mentions(d.get(), name)) return true;
  }
  return false;
}

// A macro, or the `caller` of a call block.
class Macro : public Object {
 public:
  Macro(const Stmt* def, ScopePtr scope, std::string name)
      : def_(def), scope_(std::move(scope)), name_(std::move(name)) {}
  std::string type_name() const override { return "Macro"; }
  std::string repr() const override { return "<Macro '" + name_ + "'>"; }
  bool callable() const override { return true; }
  std::optional<Value> getattr(const std::string& name) const override {
    if (name == "name") return Value(name_);
    if (name == "arguments") {
      std::vector<Value> v(def_->params.begin(), def_->params.end());
      return Value::tuple(std::move(v));
    }
    return std::nullopt;
  }
  Value call(Interpreter& in, CallArgs& args) override {
    Value caller;
    for (auto it = args.kwargs.begin(); it != args.kwargs.end(); ++it) {
      if (it->first == "caller") {
        caller = it->second;
        args.kwargs.erase(it);
        break;
      }
    }
    return in.call_macro(*def_, scope_, args, caller);
  }
  const std::string& name() const { return name_; }

 private:
  const Stmt* def_;
  ScopePtr scope_;
  std::string name_;
};

class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
 public:
  LoopObject(std::vector<Value> items, int depth, const Stmt* stmt, ScopePtr scope)
      : items_(std::move(items)), depth_(depth), stmt_(stmt), scope_(std::move(scope)) {}
  std::string type_name() const override { return "LoopContext"; }
  const std::vector<Value>& items() const { return items_; }
  std::string repr() const override {
    return "<LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(items_.size()) + ">";
  }
  bool callable() const override { return true; }

  std::optional<Value> getattr(const std::string& name) const override {
    int64_t n = static_cast<int64_t>(items_.size()), i = static_cast<int64_t>(index0);
    if (name == "index") return Value(i + 1);
    if (name == "index0") return Value(i);
    if (name == "revindex") return Value(n - i);
    if (name == "revindex0") return Value(n - i - 1);
    if (name == "first") return Value(i == 0);
    if (name == "last") return Value(i == n - 1);
    if (name == "length") return Value(n);
    if (name == "depth") return Value(static_cast<int64_t>(depth_));
    if (name == "depth0") return Value(static_cast<int64_t>(depth_ - 1));
    if (name == "previtem")
      return i > 0 ? items_[i - 1] : Value::undefined("there is no previous item");
    if (name == "nextitem")
      return i + 1 < n ? items_[i + 1] : Value::undefined("there is no next item");
    if (name == "cycle" || name == "changed") {
      auto self = std::const_pointer_cast<LoopObject>(shared_from_this());
      return Value::object(std::make_shared<Method>(self, name));
    }
    return std::nullopt;
  }

  Value call(Interpreter& in, CallArgs& args) override {
    if (!stmt_->recursive)
      throw_type_error("Tried to call non recursive loop. Maybe you forgot the 'recursive' modifier.");
    if (args.args.size() != 1) throw_type_error("loop() takes exactly one argument");
    std::string out;
    in.run_recursive_loop(*stmt_, args.args[0], scope_, out, depth_ + 1);
    return Value(out);
  }

  size_t index0 = 0;

 private:
  class Method : public Object {
   public:
    Method(std::shared_ptr<LoopObject> loop, std::string name) : loop_(std::move(loop)), name_(std::move(name)) {}
    std::string type_name() const override { return "method"; }
    bool callable() const override { return true; }
    Value call(Interpreter&, CallArgs& args) override {
      if (name_ == "cycle") {
        if (args.args.empty()) throw_type_error("no items for cycling given");
        return args.args[loop_->index0 % args.args.size()];
      }
      Value v = Value::tuple(args.args);
      if (!loop_->has_last_ || !equals(v, loop_->last_changed_)) {
        loop_->has_last_ = true;
        loop_->last_changed_ = v;
        return Value(true);
      }
      return Value(false);
    }

   private:
    std::shared_ptr<LoopObject> loop_;
    std::string name_;
  };

  std::vector<Value> items_;
  int depth_;
  const Stmt* stmt_;
  ScopePtr scope_;
  bool has_last_ = false;
  Value last_changed_;
};

}  // namespace

// ---- Namespace ----

std::string Namespace::repr() const {
  std::string out = "<Namespace {";
  bool first = true;
  for (const auto& [k, v] : attrs_->items) {
    if (!first) out += ", ";
    first = false;
    out += k.repr() + ": " + v.repr();
  }
  return out + "}>";
}

std::optional<Value> Namespace::getattr(const std::string& name) const {
  if (const Value* v = attrs_->find(name)) return *v;
  return std::nullopt;
}

// Whether `target` is reachable from v (through lists, dicts, namespaces).
static bool reaches(const Value& v, const Object* target, std::unordered_set<const void*>& seen) {
  if (v.depth() == 0 && !v.is_object()) return false;
  switch (v.kind()) {
    case Kind::List:
      if (!seen.insert(&v.items()).second) return false;
      for (const auto& x : v.items())
        if (reaches(x, target, seen)) return true;
      return false;
    case Kind::Dict:
      if (!seen.insert(v.dict_ptr().get()).second) return false;
      for (const auto& [k, x] : v.dict_data().items)
        if (reaches(x, target, seen)) return true;
      return false;
    case Kind::Object: {
      if (v.obj_ptr().get() == target) return true;
      auto* ns = dynamic_cast<Namespace*>(v.obj_ptr().get());
      if (!ns || !seen.insert(ns).second) return false;
      for (const auto& [k, x] : ns->attrs().items)
        if (reaches(x, target, seen)) return true;
      return false;
    }
    default:
      return false;
  }
}

bool Namespace::setattr(const std::string& name, const Value& v) {
  std::unordered_set<const void*> seen;
  if (reaches(v, this, seen))
    throw TemplateError(TemplateError::Kind::Limit, "a namespace cannot contain itself");
  attrs_->set(Value(name), v);
  return true;
}

// ---- statements ----

void Interpreter::assign(const Expr& target, const Value& v, const ScopePtr& scope) {
  if (target.kind == ExprKind::Name) {
    scope->vars[target.name] = v;
    return;
  }
  if (target.kind == ExprKind::NSRef) {
    Value ns = lookup(target.name, scope);
    if (!ns.is_object() || !ns.obj().setattr(target.attr, v))
      throw_type_error("cannot assign attribute on non-namespace object");
    return;
  }
  // Tuple unpacking.
  std::vector<Value> items = v.is_undefined() ? (v.fail_undefined(), std::vector<Value>{}) : iterate(v);
  size_t n = target.items.size();
  if (items.size() > n)
    throw_type_error("too many values to unpack (expected " + std::to_string(n) + ")");
  if (items.size() < n)
    throw_type_error("not enough values to unpack (expected " + std::to_string(n) + ", got " +
                     std::to_string(items.size()) + ")");
  for (size_t i = 0; i < n; ++i) assign(*target.items[i], items[i], scope);
}

Flow Interpreter::exec(const Body& body, const ScopePtr& scope, std::string& out) {
  Flow flow = Flow::Normal;
  for (const auto& s : body) {
    try {
      exec_stmt(*s, scope, out, flow);
    } catch (const TemplateError& err) {
      if (err.line() == 0) throw err.with_line(s->line);
      throw;
    } catch (const std::bad_alloc&) {
      throw TemplateError(TemplateError::Kind::Limit, "out of memory", s->line);
    } catch (const std::exception& e) {  // e.g. std::out_of_range from a numeric conversion
      throw TemplateError(TemplateError::Kind::Type, e.what(), s->line);
    }
    if (flow != Flow::Normal) return flow;
  }
  return flow;
}

Flow Interpreter::run_for(const Stmt& s, const Value& iterable, const ScopePtr& scope,
                          std::string& out, int depth) {
  std::vector<Value> items = iterate(iterable);
  if (s.cond) {
    std::vector<Value> kept;
    for (auto& item : items) {
      auto tmp = std::make_shared<Scope>(scope);
      assign(*s.target, item, tmp);
      if (eval(*s.cond, tmp).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (!s.else_body.empty()) return exec(s.else_body, enter_frame(scope, s.else_locals), out);
    return Flow::Normal;
  }
  auto loop = std::make_shared<LoopObject>(std::move(items), depth, &s, scope);  // it holds them, not a copy
  Value loop_value = Value::object(loop);
  const std::vector<Value>& looped = loop->items();
  for (size_t i = 0; i < looped.size(); ++i) {
    charge(4);  // a scope of its own: costlier than an expression
    loop->index0 = i;
    auto iter_scope = enter_frame(scope, s.frame_locals);
    assign(*s.target, looped[i], iter_scope);
    iter_scope->vars["loop"] = loop_value;
    if (exec(s.body, iter_scope, out) == Flow::Break) break;
  }
  return Flow::Normal;
}

// A recursive loop's loop(...) nests like a macro call: the same depth
// limit (a string's one character iterates to itself, for ever).
void Interpreter::run_recursive_loop(const Stmt& s, const Value& iterable, const ScopePtr& scope, std::string& out,
                                     int depth) {
  if (call_depth_ >= kMaxCallDepth)
    throw TemplateError(TemplateError::Kind::Limit, "maximum recursion depth exceeded in a recursive loop");
  ++call_depth_;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{call_depth_};
  run_for(s, iterable, scope, out, depth);
}

Value Interpreter::call_macro(const Stmt& def, const ScopePtr& parent, CallArgs& args, const Value& caller) {
  const std::string name = def.kind == StmtKind::Macro ? def.text : "caller";
  if (call_depth_ >= kMaxCallDepth)
    throw TemplateError(TemplateError::Kind::Limit, "maximum macro recursion depth exceeded");
  auto scope = enter_frame(parent, def.frame_locals);
  size_t n = def.params.size();
  size_t first_default = n - def.defaults.size();
  std::vector<bool> bound(n, false);
  std::vector<Value> extra;
  for (size_t i = 0; i < args.args.size(); ++i) {
    if (i < n) {
      scope->vars[def.params[i]] = args.args[i];
      bound[i] = true;
    } else {
      extra.push_back(args.args[i]);
    }
  }
  Value extra_kw = Value::dict();
  for (const auto& [k, v] : args.kwargs) {
    size_t i = 0;
    while (i < n && def.params[i] != k) ++i;
    if (i < n) {
      if (bound[i]) throw_type_error("macro '" + name + "' got multiple values for argument '" + k + "'");
      scope->vars[k] = v;
      bound[i] = true;
    } else {
      extra_kw.dict_ptr()->set(Value(k), v);
    }
  }
  if (!extra.empty() && !mentions(def.body, "varargs"))
    throw_type_error("macro '" + name + "' takes not more than " + std::to_string(n) + " argument(s)");
  if (extra_kw.dict_data().size() && !mentions(def.body, "kwargs"))
    throw_type_error("macro '" + name + "' takes no keyword argument '" +
                     extra_kw.dict_data().items[0].first.str() + "'");
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) continue;
    if (i >= first_default)
      scope->vars[def.params[i]] = eval(*def.defaults[i - first_default], scope);
    else
      scope->vars[def.params[i]] = Value::undefined("parameter '" + def.params[i] + "' was not provided");
  }
  scope->vars["varargs"] = Value::tuple(std::move(extra));
  scope->vars["kwargs"] = extra_kw;
  if (!caller.is_undefined()) scope->vars["caller"] = caller;
  std::string out;
  ++call_depth_;
  try {
    exec(def.body, scope, out);
  } catch (...) {
    --call_depth_;
    throw;
  }
  --call_depth_;
  return Value(std::move(out));
}

void Interpreter::exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out, Flow& flow) {
  const size_t before = out.size();
  exec_stmt_inner(s, scope, out, flow);
  if (out.size() > kMaxTextBytes)
    throw TemplateError(TemplateError::Kind::Limit,
                        "output too long (more than " + std::to_string(kMaxTextBytes >> 20) + " MiB)");
  // What a statement prints itself (a body's statements count their own).
  const bool prints = s.kind == StmtKind::Text || s.kind == StmtKind::Output || s.kind == StmtKind::CallBlock ||
                      s.kind == StmtKind::FilterBlock;
  charge(1 + (prints ? static_cast<int64_t>((out.size() - before) >> 4) : 0));
}

void Interpreter::exec_stmt_inner(const Stmt& s, const ScopePtr& scope, std::string& out, Flow& flow) {
  switch (s.kind) {
    case StmtKind::Text: out += s.text; return;
    case StmtKind::Output: out += eval(*s.expr, scope).to_str(); return;
    case StmtKind::If:
      flow = exec(eval(*s.expr, scope).truthy() ? s.body : s.else_body, scope, out);
      return;
    case StmtKind::For: {
      Value iterable = eval(*s.expr, scope);
      flow = run_for(s, iterable, scope, out, 1);
      return;
    }
    case StmtKind::Set: assign(*s.target, eval(*s.expr, scope), scope); return;
    case StmtKind::SetBlock: {
      std::string buf;
      exec(s.body, enter_frame(scope, s.frame_locals), buf);
      assign(*s.target, apply_filter_chain(s.filter.get(), Value(std::move(buf)), scope), scope);
      return;
    }
    case StmtKind::Macro:
      macro_scopes_.push_back(scope);
      scope->vars[s.text] = Value::object(std::make_shared<Macro>(&s, scope, s.text));
      return;
    case StmtKind::CallBlock: {
      macro_scopes_.push_back(scope);
      Value caller = Value::object(std::make_shared<Macro>(&s, scope, "caller"));
      const Expr& call_expr = *s.expr;
      Value callee = eval(*call_expr.a, scope);
      CallArgs args = eval_args(call_expr, scope);
      args.kwargs.emplace_back("caller", caller);
      out += call(callee, args).to_str();
      return;
    }
    case StmtKind::FilterBlock: {
      std::string buf;
      exec(s.body, enter_frame(scope, s.frame_locals), buf);
      out += apply_filter_chain(s.filter.get(), Value(std::move(buf)), scope).to_str();
      return;
    }
    case StmtKind::With: {
      auto inner = enter_frame(scope, s.frame_locals);
      for (size_t i = 0; i < s.params.size(); ++i) inner->vars[s.params[i]] = eval(*s.defaults[i], scope);
      flow = exec(s.body, inner, out);
      return;
    }
    case StmtKind::Generation: flow = exec(s.body, enter_frame(scope, s.frame_locals), out); return;
    case StmtKind::Break: flow = Flow::Break; return;
    case StmtKind::Continue: flow = Flow::Continue; return;
  }
}

std::string Interpreter::render(const Body& body, const std::vector<std::string>& root_locals) {
  auto root = enter_frame(nullptr, root_locals);
  macro_scopes_.push_back(root);
  std::string out;
  exec(body, root, out);
  return out;
}

Interpreter::~Interpreter() {
  for (auto& s : macro_scopes_) s->vars.clear();
}

}  // namespace hearth::text::jinja
