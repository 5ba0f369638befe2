// The built-in library of the Jinja engine, shared between its source files:
// operators (ops.cpp), filters (filters.cpp, filters_strings.cpp), tests
// (`x is defined`: is_tests.cpp), str/dict/list methods (methods.cpp), string
// formatting (format.cpp) and global functions (globals.cpp).
#pragma once

#include <optional>
#include <string>

#include "text/jinja/value.h"

namespace hearth::text::jinja {

class Interpreter;

// Operators with Python semantics. op is one of + - * / // % **.
Value binary_op(const std::string& op, const Value& a, const Value& b);
// op is "-" or "+".
Value unary_op(const std::string& op, const Value& a);

using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);
using TestFn = bool (*)(Interpreter&, const Value&, CallArgs&);
FilterFn find_filter(const std::string& name);
TestFn find_test(const std::string& name);
// Throws if a test got the wrong number of arguments (as Python would).
void check_test_args(const std::string& name, const CallArgs& args);

// A Python attribute of a str / dict / list: a bound method, or an Undefined
// that raises a sandbox SecurityError when used (list.append...). nullopt if
// the type has no such attribute.
std::optional<Value> method_attr(const Value& self, const std::string& name);
Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args);

// Python's `fmt % args` (printf-style) and str.format.
std::string percent_format(const std::string& fmt, const Value& args);
std::string str_format(Interpreter& in, const std::string& fmt, const CallArgs& args);

// range, dict, namespace, cycler, joiner, raise_exception, strftime_now.
void add_global_functions(DictData& globals);

// Type errors and friends, thrown as TemplateError.
[[noreturn]] void throw_type_error(const std::string& msg);

// Python int() / float() conversions used by filters; nullopt when invalid.
std::optional<int64_t> to_int(const Value& v);

// The Python "object type repr" used in jinja2's undefined messages:
// "dict object", "str object", "None".
std::string object_type_repr(const Value& v);

}  // namespace hearth::text::jinja
