// The interpreter's lookups and expressions (eval_statements.cpp runs the
// statements).
#include "text/jinja/eval.h"

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

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

}  // namespace

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
    else {
      charge(scan_cost(right));  // the search, not just its answer
      ok = op == "in" ? contains(right, left) : !contains(right, left);  // in, notin
    }
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

}  // namespace hearth::text::jinja
