// jinja2's tests (`x is defined`, `x is string`, `x is divisibleby(3)`...).
#include <cstring>

#include "text/jinja/builtins.h"
#include "text/jinja/eval.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

const Value& arg(const CallArgs& a, const char* test) {
  if (a.args.empty()) throw_type_error(std::string("test '") + test + "' needs an argument");
  return a.args[0];
}

bool t_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool t_true(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool t_float(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool t_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool t_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.kind() == Kind::List || v.is_dict() || v.is_undefined();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_indexable() || v.is_dict() || v.is_undefined();
}
bool t_callable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || (v.is_object() && v.obj().callable());
}
bool t_escaped(Interpreter&, const Value& v, CallArgs&) { return v.is_markup(); }
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
  const Value& o = arg(a, "sameas");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Kind::None: case Kind::Undefined: return true;
    case Kind::Bool: return v.as_bool() == o.as_bool();
    case Kind::Int: return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    case Kind::List: return &v.items() == &o.items();
    case Kind::Dict: return v.dict_ptr() == o.dict_ptr();
    case Kind::Object: return v.obj_ptr() == o.obj_ptr();
    default: return false;
  }
}
bool t_in(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& container = arg(a, "in");
  in.charge(scan_cost(container));
  return contains(container, v);
}
bool t_odd(Interpreter&, const Value& v, CallArgs&) { return equals(binary_op("%", v, Value(2)), Value(1)); }
bool t_even(Interpreter&, const Value& v, CallArgs&) { return equals(binary_op("%", v, Value(2)), Value(0)); }
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
  return equals(binary_op("%", v, arg(a, "divisibleby")), Value(0));
}
bool t_lower(Interpreter& in, const Value& v, CallArgs&) {
  CallArgs none;
  return call_method(in, Value(v.to_str()), "islower", none).truthy();
}
bool t_upper(Interpreter& in, const Value& v, CallArgs&) {
  CallArgs none;
  return call_method(in, Value(v.to_str()), "isupper", none).truthy();
}
bool t_eq(Interpreter&, const Value& v, CallArgs& a) { return equals(v, arg(a, "eq")); }
bool t_ne(Interpreter&, const Value& v, CallArgs& a) { return !equals(v, arg(a, "ne")); }
bool t_lt(Interpreter&, const Value& v, CallArgs& a) { return less(v, arg(a, "lt")); }
bool t_gt(Interpreter&, const Value& v, CallArgs& a) { return less(arg(a, "gt"), v); }
bool t_le(Interpreter&, const Value& v, CallArgs& a) {
  const Value& o = arg(a, "le");
  return less(v, o) || equals(v, o);
}
bool t_ge(Interpreter&, const Value& v, CallArgs& a) {
  const Value& o = arg(a, "ge");
  return less(o, v) || equals(v, o);
}
bool t_filter(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && find_filter(v.str()); }
bool t_test(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && find_test(v.str()); }

struct Entry {
  const char* name;
  TestFn fn;
  int params;  // arguments after the value
};

const Entry kTests[] = {
    {"defined", t_defined, 0}, {"undefined", t_undefined, 0}, {"none", t_none, 0},
    {"boolean", t_boolean, 0}, {"true", t_true, 0}, {"false", t_false, 0},
    {"integer", t_integer, 0}, {"float", t_float, 0}, {"number", t_number, 0},
    {"string", t_string, 0}, {"mapping", t_mapping, 0}, {"iterable", t_iterable, 0},
    {"sequence", t_sequence, 0}, {"callable", t_callable, 0}, {"sameas", t_sameas, 1},
    {"escaped", t_escaped, 0}, {"in", t_in, 1}, {"odd", t_odd, 0}, {"even", t_even, 0},
    {"divisibleby", t_divisibleby, 1}, {"lower", t_lower, 0}, {"upper", t_upper, 0},
    {"eq", t_eq, 1}, {"equalto", t_eq, 1}, {"==", t_eq, 1}, {"ne", t_ne, 1}, {"!=", t_ne, 1},
    {"lt", t_lt, 1}, {"lessthan", t_lt, 1}, {"<", t_lt, 1}, {"gt", t_gt, 1}, {"greaterthan", t_gt, 1},
    {">", t_gt, 1}, {"le", t_le, 1}, {"<=", t_le, 1}, {"ge", t_ge, 1}, {">=", t_ge, 1},
    {"filter", t_filter, 0}, {"test", t_test, 0},
};

const Entry* find_entry(const std::string& name) {
  for (const auto& e : kTests)
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace

TestFn find_test(const std::string& name) {
  const Entry* e = find_entry(name);
  return e ? e->fn : nullptr;
}

void check_test_args(const std::string& name, const CallArgs& args) {
  const Entry* e = find_entry(name);
  if (!e) return;
  size_t given = args.args.size() + args.kwargs.size();
  if (given != static_cast<size_t>(e->params))
    throw_type_error("test '" + name + "' takes " + std::to_string(e->params + 1) + " positional argument(s) but " +
                     std::to_string(given + 1) + " were given");
}

}  // namespace hearth::text::jinja
