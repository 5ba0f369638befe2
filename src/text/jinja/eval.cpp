#include "text/jinja/eval.h"

#include <functional>
#include <new>
#include <unordered_set>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

constexpr int kMaxCallDepth = 200;

bool is_dunder(const std::string& n) {
  return n.size() > 4 && n.compare(0, 2, "__") == 0 && n.compare(n.size() - 2, 2, "__") == 0;
}

Value unsafe_attr(const Value& obj, const std::string& name) {
  return Value::unsafe_undefined("access to attribute '" + name + "' of '" + obj.type_name() +
                                 "' object is unsafe.");
}

Value missing_attr(const Value& obj, const std::string& name) {
  return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + name + "'");
}

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
    in.run_for(*stmt_, args.args[0], scope_, out, depth_ + 1);
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

// ---- lookups ----

ScopePtr Interpreter::enter_frame(const ScopePtr& parent, const std::vector<std::string>& locals) {
  auto scope = std::make_shared<Scope>(parent);
  for (const auto& name : locals) scope->vars[name] = Value::undefined("'" + name + "' is undefined");
  return scope;
}

Value Interpreter::lookup(const std::string& name, const ScopePtr& scope) const {
  for (const Scope* s = scope.get(); s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  if (const Value* v = globals_->find(name)) return *v;
  return Value::undefined("'" + name + "' is undefined");
}

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.is_object()) {
    if (auto v = obj.obj().getattr(name)) return *v;
    return missing_attr(obj, name);
  }
  if (is_dunder(name)) return unsafe_attr(obj, name);
  if (auto m = method_attr(obj, name)) return *m;
  if (obj.is_dict())
    if (const Value* v = obj.dict_data().find(name)) return *v;
  return missing_attr(obj, name);
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.is_dict()) {
    const Value* v = nullptr;
    try {
      v = obj.dict_data().find(key);
    } catch (const TemplateError&) {  // unhashable key: TypeError, falls through
    }
    if (v) return *v;
  } else if ((obj.is_indexable() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t n = length(obj), i = key.as_int();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (obj.is_indexable()) return obj.items()[i];
      const std::string& s = obj.str();
      if (py::is_ascii(s)) return Value(s.substr(i, 1));
      auto offs = py::code_point_offsets(s);
      return Value(s.substr(offs[i], offs[i + 1] - offs[i]));
    }
  }
  if (key.is_string()) {
    if (obj.is_object()) {
      if (auto v = obj.obj().getattr(key.str())) return *v;
    } else if (is_dunder(key.str())) {
      return unsafe_attr(obj, key.str());
    } else if (auto m = method_attr(obj, key.str())) {
      return *m;
    }
    return missing_attr(obj, key.str());
  }
  return Value::undefined("'" + object_type_repr(obj) + "' has no element " + key.repr());
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) callee.fail_undefined();
  if (!callee.is_object() || !callee.obj().callable())
    throw_type_error("'" + callee.type_name() + "' object is not callable");
  return callee.obj().call(*this, args);
}

Value Interpreter::call_filter(const std::string& name, const Value& v, CallArgs& args) {
  FilterFn f = find_filter(name);
  if (!f) throw TemplateError(TemplateError::Kind::Syntax, "No filter named '" + name + "'.");
  return f(*this, v, args);
}

bool Interpreter::call_test(const std::string& name, const Value& v, CallArgs& args) {
  TestFn t = find_test(name);
  if (!t) throw TemplateError(TemplateError::Kind::Syntax, "No test named '" + name + "'.");
  check_test_args(name, args);
  return t(*this, v, args);
}

// ---- expressions ----

void Interpreter::too_much_work() const {
  throw TemplateError(TemplateError::Kind::Limit, "the template does too much work (more than " +
                                                      std::to_string(limits_.max_steps) + " steps)");
}

void Interpreter::account(const Value& v) {
  if (v.is_string()) {
    if (v.str().size() > kMaxTextBytes)
      throw TemplateError(TemplateError::Kind::Limit, "string too long (" + std::to_string(v.str().size()) +
                                                          " bytes, more than " + std::to_string(kMaxTextBytes >> 20) +
                                                          " MiB)");
    charge(1 + static_cast<int64_t>(v.str().size() >> 4));  // copied with the value
  } else if (v.kind() == Kind::List && !v.list_data().charged) {
    v.list_data().charged = true;  // built once; later uses share it
    charge(1 + static_cast<int64_t>(v.list_data().bytes >> 4));
  } else {
    charge(1);
  }
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  try {
    Value v = eval_inner(e, scope);
    account(v);
    return v;
  } catch (const TemplateError& err) {
    if (err.line() == 0) throw err.with_line(e.line);
    throw;
  }
}

CallArgs Interpreter::eval_args(const Expr& e, const ScopePtr& scope) {
  CallArgs args;
  for (const auto& x : e.items) args.args.push_back(eval(*x, scope));
  if (e.star) {
    for (auto& v : iterate(eval(*e.star, scope))) args.args.push_back(std::move(v));
  }
  for (const auto& [k, x] : e.kwargs) args.kwargs.emplace_back(k, eval(*x, scope));
  if (e.dstar) {
    Value d = eval(*e.dstar, scope);
    if (!d.is_dict()) throw_type_error("argument after ** must be a mapping, not " + d.type_name());
    for (const auto& [k, v] : d.dict_data().items) {
      if (!k.is_string()) throw_type_error("keywords must be strings");
      args.kwargs.emplace_back(k.str(), v);
    }
  }
  return args;
}

Value Interpreter::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.a, scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.items[i], scope);
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==") ok = equals(left, right);
    else if (op == "!=") ok = !equals(left, right);
    else if (op == "<") ok = less(left, right);
    else if (op == ">") ok = less(right, left);
    else if (op == "<=") ok = less(left, right) || equals(left, right);
    else if (op == ">=") ok = less(right, left) || equals(left, right);
    else if (op == "in") ok = contains(right, left);
    else ok = !contains(right, left);  // notin
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::eval_slice(const Value& obj, const Expr& sl, const ScopePtr& scope) {
  if (obj.is_undefined()) obj.fail_undefined();
  auto bound = [&](const ExprPtr& x) -> std::optional<int64_t> {
    if (!x) return std::nullopt;
    Value v = eval(*x, scope);
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool())
      throw_type_error("slice indices must be integers or None or have an __index__ method");
    return v.as_int();
  };
  auto start = bound(sl.a), stop = bound(sl.b), step_opt = bound(sl.c);
  if (!obj.is_indexable() && !obj.is_string())
    return Value::undefined("'" + object_type_repr(obj) + "' object is not subscriptable");
  int64_t step = step_opt.value_or(1);
  if (step == 0) throw_type_error("slice step cannot be zero");
  int64_t n = length(obj);
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t b = clamp(start, step < 0 ? n - 1 : 0);
  int64_t e = clamp(stop, step < 0 ? -1 : n);
  std::vector<int64_t> idx;
  for (int64_t i = b; step > 0 ? i < e : i > e;) {
    idx.push_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;  // a huge step: past either end
  }
  if (obj.is_indexable()) {
    std::vector<Value> out;
    out.reserve(idx.size());
    for (int64_t i : idx) out.push_back(obj.items()[i]);
    return obj.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  const std::string& s = obj.str();
  auto offs = py::code_point_offsets(s);
  std::string out;
  for (int64_t i : idx) out.append(s, offs[i], offs[i + 1] - offs[i]);
  return Value(std::move(out));
}

Value Interpreter::apply_filter_chain(const Expr* f, Value subject, const ScopePtr& scope) {
  if (!f) return subject;
  if (f->a) subject = apply_filter_chain(f->a.get(), std::move(subject), scope);
  CallArgs args = eval_args(*f, scope);
  try {
    return call_filter(f->name, subject, args);
  } catch (const TemplateError& err) {
    if (err.line() == 0) throw err.with_line(f->line);
    throw;
  }
}

Value Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::Const: return e.value;
    case ExprKind::Name: return lookup(e.name, scope);
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (const auto& x : e.items) items.push_back(eval(*x, scope));
      return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::Dict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value k = eval(*e.items[i], scope);
        d.dict_ptr()->set(k, eval(*e.items[i + 1], scope));
      }
      return d;
    }
    case ExprKind::Getattr: return getattr(eval(*e.a, scope), e.name);
    case ExprKind::Getitem: {
      Value obj = eval(*e.a, scope);
      if (e.b->kind == ExprKind::Slice) return eval_slice(obj, *e.b, scope);
      return getitem(obj, eval(*e.b, scope));
    }
    case ExprKind::Slice: throw_type_error("slice outside of a subscript");
    case ExprKind::Call: {
      Value callee = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      return call(callee, args);
    }
    case ExprKind::Filter: {
      Value subject = e.a ? eval(*e.a, scope) : Value();
      CallArgs args = eval_args(e, scope);
      return call_filter(e.name, subject, args);
    }
    case ExprKind::Test: {
      Value subject = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      return Value(call_test(e.name, subject, args));
    }
    case ExprKind::Unary: {
      Value v = eval(*e.a, scope);
      if (e.name == "not") return Value(!v.truthy());
      return unary_op(e.name, v);
    }
    case ExprKind::Binary: {
      Value a = eval(*e.a, scope);
      Value b = eval(*e.b, scope);
      return binary_op(e.name, a, b);
    }
    case ExprKind::Compare: return eval_compare(e, scope);
    case ExprKind::And: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? eval(*e.b, scope) : a;
    }
    case ExprKind::Or: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? a : eval(*e.b, scope);
    }
    case ExprKind::CondExpr: {
      if (eval(*e.a, scope).truthy()) return eval(*e.b, scope);
      if (e.c) return eval(*e.c, scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
    case ExprKind::Concat: {
      std::string s;
      for (const auto& x : e.items) s += eval(*x, scope).to_str();
      return Value(std::move(s));
    }
    case ExprKind::NSRef: throw_type_error("namespace reference outside of an assignment");
  }
  throw_type_error("unknown expression");
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
  auto loop = std::make_shared<LoopObject>(items, depth, &s, scope);
  Value loop_value = Value::object(loop);
  for (size_t i = 0; i < items.size(); ++i) {
    charge(4);  // a scope of its own: costlier than an expression
    loop->index0 = i;
    auto iter_scope = enter_frame(scope, s.frame_locals);
    assign(*s.target, items[i], iter_scope);
    iter_scope->vars["loop"] = loop_value;
    if (exec(s.body, iter_scope, out) == Flow::Break) break;
  }
  return Flow::Normal;
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
