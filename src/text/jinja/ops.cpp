// Python's arithmetic operators for the Jinja engine.
#include <cmath>
#include <limits>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw_type_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                   b.type_name() + "'");
}

bool is_intlike(const Value& v) { return v.is_int() || v.is_bool(); }

Value repeat(const Value& seq, int64_t times) {
  if (times <= 0) return seq.is_string() ? Value(std::string()) : seq.is_tuple() ? Value::tuple({}) : Value::list();
  // Sizes compared by division: the product can overflow.
  if (seq.is_string()) {
    if (!seq.str().empty() && static_cast<uint64_t>(times) > kMaxTextBytes / seq.str().size())
      throw TemplateError(TemplateError::Kind::Limit, "string repetition result too large");
    if (seq.str().empty()) return seq;
    std::string out;
    out.reserve(seq.str().size() * times);
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return seq.is_markup() ? Value::markup(out) : Value(out);
  }
  const size_t bytes = seq.list_data().bytes;
  if (bytes && static_cast<uint64_t>(times) > kMaxListBytes / bytes)
    throw TemplateError(TemplateError::Kind::Limit, "list repetition result too large");
  if (seq.items().empty()) return seq.is_tuple() ? Value::tuple({}) : Value::list();
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  int64_t b = base;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, b, &result))
        return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
    }
    exp >>= 1;
    if (exp && __builtin_mul_overflow(b, b, &b))
      return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  return Value(result);
}

double py_fmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0) {
    if ((r < 0) != (b < 0)) r += b;
  } else {
    r = std::copysign(0.0, b);
  }
  return r;
}

}  // namespace

void throw_type_error(const std::string& msg) { throw TemplateError(TemplateError::Kind::Type, msg); }

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return v.type_name() + " object";
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  // str % x formats without touching an undefined x unless a %d-style
  // conversion needs its value (Python's str.__mod__ takes the Undefined).
  if (op == "%" && a.is_string()) return Value(percent_format(a.str(), b));
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  bool ints = is_intlike(a) && is_intlike(b);
  bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (!__builtin_add_overflow(a.as_int(), b.as_int(), &r)) return Value(r);
      return Value(a.as_float() + b.as_float());
    }
    if (nums) return Value(a.as_float() + b.as_float());
    if (a.is_string() && b.is_string()) {
      if (a.is_markup() && !b.is_markup()) return Value::markup(a.str() + html_escape(b.str()));
      if (b.is_markup() && !a.is_markup()) return Value::markup(html_escape(a.str()) + b.str());
      if (a.is_markup()) return Value::markup(a.str() + b.str());
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.is_string())
      throw_type_error("can only concatenate str (not \"" + b.type_name() + "\") to str");
    if (a.is_list() && !a.is_tuple())
      throw_type_error("can only concatenate list (not \"" + b.type_name() + "\") to list");
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (!__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) return Value(r);
      return Value(a.as_float() - b.as_float());
    }
    if (nums) return Value(a.as_float() - b.as_float());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (!__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) return Value(r);
      return Value(a.as_float() * b.as_float());
    }
    if (nums) return Value(a.as_float() * b.as_float());
    if ((a.is_string() || a.is_list()) && is_intlike(b)) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && is_intlike(a)) return repeat(b, a.as_int());
    if (a.is_string() || b.is_string())
      throw_type_error("can't multiply sequence by non-int of type '" +
                       (a.is_string() ? b : a).type_name() + "'");
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    if (b.as_float() == 0) throw_type_error("division by zero");
    return Value(a.as_float() / b.as_float());
  }
  if (op == "//") {
    if (!nums) unsupported(op, a, b);
    if (ints) {
      if (b.as_int() == 0) throw_type_error("integer division or modulo by zero");
      int64_t x = a.as_int(), y = b.as_int();
      if (y == -1) {  // INT64_MIN / -1 traps: negate, past int64 as a float (as + does)
        int64_t r;
        if (!__builtin_sub_overflow(int64_t{0}, x, &r)) return Value(r);
        return Value(-a.as_float());
      }
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return Value(q);
    }
    if (b.as_float() == 0) throw_type_error("float floor division by zero");
    return Value(std::floor(a.as_float() / b.as_float()));
  }
  if (op == "%") {
    if (!nums) unsupported(op, a, b);
    if (ints) {
      if (b.as_int() == 0) throw_type_error("integer division or modulo by zero");
      int64_t x = a.as_int(), y = b.as_int();
      if (y == -1) return Value(int64_t{0});  // INT64_MIN % -1 traps
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value(r);
    }
    if (b.as_float() == 0) throw_type_error("float modulo");
    return Value(py_fmod(a.as_float(), b.as_float()));
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (ints && b.as_int() >= 0) return int_pow(a.as_int(), b.as_int());
    if (a.as_float() == 0 && b.as_float() < 0)
      throw_type_error("0.0 cannot be raised to a negative power");
    return Value(std::pow(a.as_float(), b.as_float()));
  }
  throw_type_error("unknown operator " + op);
}

Value unary_op(const std::string& op, const Value& a) {
  if (a.is_undefined()) a.fail_undefined();
  if (is_intlike(a)) {
    if (op == "+") return Value(a.as_int());
    if (a.as_int() == std::numeric_limits<int64_t>::min()) return Value(-a.as_float());
    return Value(-a.as_int());
  }
  if (a.is_float()) return Value(op == "-" ? -a.as_float() : a.as_float());
  throw_type_error("bad operand type for unary " + op + ": '" + a.type_name() + "'");
}

std::optional<int64_t> to_int(const Value& v) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return std::nullopt;
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace hearth::text::jinja
