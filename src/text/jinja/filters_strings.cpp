// jinja2's filters on strings and numbers (`x|upper`, `x|trim`, `x|int`,
// `x|round`...) and the others that take a value as a whole: default,
// escape / safe, pprint, and tojson (Hugging Face's: json.dumps with
// ensure_ascii=False, in place of jinja2's own). The filters over sequences
// and mappings, and the table of all filters, are in filters.cpp.
#include "text/jinja/filters.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "text/jinja/builtins.h"
#include "text/jinja/json.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja::detail {

namespace {

std::string soft_str(const Value& v) { return v.to_str(); }
Value keep_markup(const Value& like, std::string s) { return like.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s)); }

// Python float(str): surrounding whitespace, underscores between digits,
// inf / nan spellings.
std::optional<double> parse_py_float(const std::string& raw) {
  std::string s(py::strip(raw, nullptr, true, true));
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 >= s.size() || !isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !isdigit(static_cast<unsigned char>(s[i + 1])))
        return std::nullopt;
      continue;
    }
    clean += s[i];
  }
  if (clean.empty()) return std::nullopt;
  std::string low = py::to_lower(clean);
  std::string body = (low[0] == '+' || low[0] == '-') ? low.substr(1) : low;
  double sign = low[0] == '-' ? -1 : 1;
  if (body == "inf" || body == "infinity") return sign * INFINITY;
  if (body == "nan") return NAN;
  if (body.find_first_not_of("0123456789.e+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(clean.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return d;
}

std::optional<int64_t> parse_py_int(const std::string& raw, int base) {
  std::string s(py::strip(raw, nullptr, true, true));
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  std::string body = s.substr(i);
  auto has_prefix = [&](char p) {
    return body.size() > 2 && body[0] == '0' && (body[1] | 0x20) == p;
  };
  if ((base == 16 && has_prefix('x')) || (base == 8 && has_prefix('o')) || (base == 2 && has_prefix('b'))) {
    body = body.substr(2);
    if (!body.empty() && body[0] == '_') body = body.substr(1);
  } else if (base == 0) {
    if (has_prefix('x')) base = 16, body = body.substr(2);
    else if (has_prefix('o')) base = 8, body = body.substr(2);
    else if (has_prefix('b')) base = 2, body = body.substr(2);
    else base = 10;
  }
  std::string clean;
  for (size_t k = 0; k < body.size(); ++k) {
    if (body[k] == '_') {
      if (k == 0 || k + 1 >= body.size() || body[k + 1] == '_') return std::nullopt;
      continue;
    }
    clean += body[k];
  }
  if (clean.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(clean.c_str(), &end, base);
  if (*end != '\0' || errno == ERANGE || clean[0] == '+' || clean[0] == '-' || clean[0] == ' ') return std::nullopt;
  return neg ? -v : v;
}

}  // namespace

// ---- filters ----

Value f_abs(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) return Value(-v.as_float());  // no int64 for it
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_undefined()) v.fail_undefined();
  throw_type_error("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs&) { return keep_markup(v, py::capitalize(soft_str(v))); }
Value f_upper(Interpreter&, const Value& v, CallArgs&) { return keep_markup(v, py::to_upper(soft_str(v))); }
Value f_lower(Interpreter&, const Value& v, CallArgs&) { return keep_markup(v, py::to_lower(soft_str(v))); }

Value f_title(Interpreter&, const Value& v, CallArgs&) {
  // "".join(item[0].upper() + item[1:].lower() for item in re.split(r"([-\s({\[<]+)", s) if item)
  std::string s = soft_str(v), out;
  auto is_sep = [](char32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::isspace(c);
  };
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    bool sep = is_sep(py::decode(s, j));
    size_t end = i;
    while (end < s.size()) {
      size_t k = end;
      if (is_sep(py::decode(s, k)) != sep) break;
      end = k;
    }
    std::string item = s.substr(i, end - i);
    size_t f = 0;
    char32_t first = py::decode(item, f);
    py::encode(out, py::upper(first));
    out += py::to_lower(item.substr(f));
    i = end;
  }
  return keep_markup(v, out);
}

Value f_center(Interpreter& in, const Value& v, CallArgs& a) {
  CallArgs m;
  m.args.push_back(a.get_or(0, "width", Value(80)));
  return call_method(in, Value(soft_str(v)), "center", m);
}

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
  Value dflt = a.get_or(0, "default_value", Value(""));
  bool boolean = truthy_arg(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return dflt;
  return v;
}

Value f_escape(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_markup()) return v;
  return Value::markup(html_escape(v.to_str()));
}
Value f_forceescape(Interpreter&, const Value& v, CallArgs&) { return Value::markup(html_escape(v.to_str())); }
Value f_safe(Interpreter&, const Value& v, CallArgs&) { return v.is_markup() ? v : Value::markup(v.to_str()); }

Value f_int(Interpreter&, const Value& v, CallArgs& a) {
  Value dflt = a.get_or(0, "default", Value(0));
  auto base = to_int(a.get_or(1, "base", Value(10)));
  if (v.is_undefined()) v.fail_undefined();  // int(Undefined) raises
  if (v.is_string()) {
    if (auto i = parse_py_int(v.str(), base ? static_cast<int>(*base) : 10)) return Value(*i);
    if (auto d = parse_py_float(v.str())) {
      if (std::isnan(*d)) return dflt;
      if (std::isinf(*d)) throw_type_error("cannot convert float infinity to integer");
      return Value(static_cast<int64_t>(*d));
    }
    return dflt;
  }
  if (v.is_float() && std::isinf(v.as_float())) throw_type_error("cannot convert float infinity to integer");
  if (auto i = to_int(v)) return Value(*i);
  return dflt;
}

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
  Value dflt = a.get_or(0, "default", Value(0.0));
  if (v.is_undefined()) v.fail_undefined();  // float(Undefined) raises
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string())
    if (auto d = parse_py_float(v.str())) return Value(*d);
  return dflt;
}

Value f_format(Interpreter&, const Value& v, CallArgs& a) {
  if (!a.args.empty() && !a.kwargs.empty())
    throw_type_error("can't handle positional and keyword arguments at the same time");
  if (!a.kwargs.empty()) {
    Value d = Value::dict();
    for (const auto& [k, x] : a.kwargs) d.dict_ptr()->set(Value(k), x);
    return Value(percent_format(soft_str(v), d));
  }
  return Value(percent_format(soft_str(v), Value::tuple(a.args)));
}

Value f_indent(Interpreter&, const Value& v, CallArgs& a) {
  Value width = a.get_or(0, "width", Value(4));
  bool first = truthy_arg(a, 1, "first", false);
  bool blank = truthy_arg(a, 2, "blank", false);
  std::string indention;
  if (width.is_string()) {
    indention = width.str();
  } else {
    auto w = to_int(width);
    if (!w) throw_type_error("indent width must be an integer or a string");
    if (*w > 0) check_text_size(static_cast<uint64_t>(*w)), indention = std::string(*w, ' ');
  }
  // do_indent appends "\n" to the value itself: anything but a string fails.
  if (v.is_undefined()) v.fail_undefined();
  if (!v.is_string()) throw_type_error("unsupported operand type(s) for +=: '" + v.type_name() + "' and 'str'");
  std::string s = v.str() + "\n";
  auto lines = py::splitlines(s, false);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
  }
  if (first) rv = indention + rv;
  return keep_markup(v, rv);
}

Value f_pprint(Interpreter&, const Value& v, CallArgs&) { return Value(v.repr()); }

Value f_replace(Interpreter&, const Value& v, CallArgs& a) {
  if (a.args.size() < 2 && !(a.get(0, "old") && a.get(1, "new"))) throw_type_error("replace needs old and new");
  std::string old_s = a.get_or(0, "old", Value("")).to_str();
  std::string new_s = a.get_or(1, "new", Value("")).to_str();
  Value count = a.get_or(2, "count", Value::none());
  int64_t n = count.is_none() ? -1 : to_int(count).value_or(-1);
  return Value(py::replace(soft_str(v), old_s, new_s, n));
}

// Python round(x, n): correctly rounded, ties to even.
Value f_round(Interpreter&, const Value& v, CallArgs& a) {
  auto precision = to_int(a.get_or(0, "precision", Value(0)));
  Value method = a.get_or(1, "method", Value("common"));
  if (!method.is_string() || (method.str() != "common" && method.str() != "ceil" && method.str() != "floor"))
    throw_type_error("method must be common, ceil or floor");
  if (v.is_undefined()) v.fail_undefined();
  if (!v.is_number()) throw_type_error("type " + v.type_name() + " doesn't define __round__ method");
  int64_t p = precision.value_or(0);
  if (method.str() == "common") {
    if (v.is_int() || v.is_bool()) {
      if (p >= 0) return Value(v.as_int());
      double scale = std::pow(10.0, static_cast<double>(-p));
      return Value(static_cast<int64_t>(std::nearbyint(v.as_float() / scale) * scale));
    }
    double x = v.as_float();
    if (!std::isfinite(x)) return Value(x);
    if (p == 0) return Value(std::nearbyint(x));
    if (p > 0 && p < 300) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(p), x);
      return Value(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, static_cast<double>(-p));
    return Value(std::nearbyint(x / scale) * scale);
  }
  double scale = std::pow(10.0, static_cast<double>(p));
  double r = method.str() == "ceil" ? std::ceil(v.as_float() * scale) : std::floor(v.as_float() * scale);
  return Value(r / scale);
}

Value f_string(Interpreter&, const Value& v, CallArgs&) {
  return v.is_markup() ? v : Value(v.to_str());
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& a) {
  // HF: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  a.check("tojson", 4, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions opt;
  opt.ensure_ascii = truthy_arg(a, 0, "ensure_ascii", false);
  Value indent = a.get_or(1, "indent", Value::none());
  if (indent.is_string()) {
    opt.indent = indent.str();
  } else if (!indent.is_none()) {
    auto n = to_int(indent);
    if (!n || indent.is_float()) throw_type_error("indent must be an integer or a string");
    if (*n > 0) check_text_size(static_cast<uint64_t>(*n));
    opt.indent = std::string(*n > 0 ? *n : 0, ' ');
  }
  if (opt.indent) opt.item_separator = ",";
  Value seps = a.get_or(2, "separators", Value::none());
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.items().size() != 2 || !seps.items()[0].is_string() ||
        !seps.items()[1].is_string())
      throw_type_error("separators must be a pair of strings");
    opt.item_separator = seps.items()[0].str();
    opt.key_separator = seps.items()[1].str();
  }
  opt.sort_keys = truthy_arg(a, 3, "sort_keys", false);
  return Value(json_dumps(v, opt));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
  Value chars = a.get_or(0, "chars", Value::none());
  std::string holder;
  const std::string* cp = nullptr;
  if (!chars.is_none()) {
    holder = chars.to_str();
    cp = &holder;
  }
  return keep_markup(v, std::string(py::strip(soft_str(v), cp, true, true)));
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& a) {
  std::string s = soft_str(v);
  int64_t len = to_int(a.get_or(0, "length", Value(255))).value_or(255);
  bool killwords = truthy_arg(a, 1, "killwords", false);
  std::string end = a.get_or(2, "end", Value("...")).to_str();
  int64_t leeway = to_int(a.get_or(3, "leeway", Value(5))).value_or(5);
  int64_t end_len = static_cast<int64_t>(py::length(end));
  if (len < end_len) throw_type_error("expected length >= " + std::to_string(end_len));
  auto offs = py::code_point_offsets(s);
  int64_t n = static_cast<int64_t>(offs.size() - 1);
  if (n <= len + leeway) return Value(s);
  std::string head = s.substr(0, offs[len - end_len]);
  if (killwords) return Value(head + end);
  size_t sp = head.rfind(' ');
  if (sp != std::string::npos) head = head.substr(0, sp);
  return Value(head + end);
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs&) {
  std::string s = soft_str(v);
  int64_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    bool w = py::isword(py::decode(s, i));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

}  // namespace hearth::text::jinja::detail
