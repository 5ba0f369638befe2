// jinja2's filters (`x|length`, `x|tojson`, `xs|map(attribute='a')`...), with
// Hugging Face's tojson (json.dumps with ensure_ascii=False) in place of
// jinja2's own.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <unordered_set>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/eval.h"
#include "text/jinja/json.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

using Getter = std::function<Value(const Value&)>;

const std::string kDot = ".";
const std::string kComma = ",";

Value lower_if_str(const Value& v) { return v.is_string() ? Value(py::to_lower(v.str())) : v; }

std::vector<Value> attribute_parts(const Value& attribute) {
  std::vector<Value> parts;
  if (attribute.is_none() || attribute.is_undefined()) return parts;
  if (!attribute.is_string()) return {attribute};
  for (const auto& p : py::split(attribute.str(), &kDot, -1)) {
    bool digits = !p.empty() && p.find_first_not_of("0123456789") == std::string::npos;
    parts.push_back(digits ? Value(static_cast<int64_t>(std::stoll(p))) : Value(p));
  }
  return parts;
}

// jinja2's make_attrgetter: "a.b.0" looks up item a, then b, then index 0.
Getter make_getter(Interpreter& in, const Value& attribute, bool ignore_case, Value dflt = Value::none()) {
  auto parts = attribute_parts(attribute);
  return [&in, parts, ignore_case, dflt](const Value& item) {
    Value v = item;
    for (const auto& p : parts) {
      v = in.getitem(v, p);
      if (!dflt.is_none() && v.is_undefined()) v = dflt;
    }
    return ignore_case ? lower_if_str(v) : v;
  };
}

// make_multi_attrgetter: "a,b" gives a list of keys.
Getter make_multi_getter(Interpreter& in, const Value& attribute, bool ignore_case) {
  if (!attribute.is_string()) return make_getter(in, attribute, ignore_case);
  std::vector<Getter> getters;
  for (const auto& p : py::split(attribute.str(), &kComma, -1))
    getters.push_back(make_getter(in, Value(p), ignore_case));
  return [getters](const Value& item) {
    std::vector<Value> keys;
    for (const auto& g : getters) keys.push_back(g(item));
    return Value::list(std::move(keys));
  };
}

void sort_by(std::vector<Value>& items, const Getter& key, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (auto& x : items) keyed.emplace_back(key(x), x);
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? less(b.first, a.first) : less(a.first, b.first);
  });
  for (size_t i = 0; i < items.size(); ++i) items[i] = std::move(keyed[i].second);
}

bool truthy_arg(const CallArgs& a, size_t pos, const char* name, bool dflt) {
  auto v = a.get(pos, name);
  return v ? v->truthy() : dflt;
}

std::string soft_str(const Value& v) { return v.to_str(); }
Value keep_markup(const Value& like, std::string s) { return like.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s)); }

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

Value f_attr(Interpreter& in, const Value& v, CallArgs& a) {
  Value name = a.get_or(0, "name", Value());
  if (!name.is_string()) throw_type_error("attribute name must be a string");
  if (v.is_undefined()) v.fail_undefined();
  if (v.is_object()) {
    if (auto x = v.obj().getattr(name.str())) return *x;
  } else if (auto m = method_attr(v, name.str())) {
    return *m;
  }
  return Value::undefined("'" + object_type_repr(v) + "' has no attribute '" + name.str() + "'");
}

Value f_batch(Interpreter&, const Value& v, CallArgs& a) {
  auto n = to_int(a.get_or(0, "linecount", Value(1)));
  if (!n || *n <= 0) throw_type_error("batch size must be a positive integer");
  Value fill = a.get_or(1, "fill_with", Value::none());
  std::vector<Value> out, cur;
  for (auto& x : iterate(v)) {
    if (static_cast<int64_t>(cur.size()) == *n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
    cur.push_back(x);
  }
  if (!cur.empty()) {
    if (!fill.is_none()) {
      check_list_size(static_cast<uint64_t>(*n));
      while (static_cast<int64_t>(cur.size()) < *n) cur.push_back(fill);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::sequence(Seq::Generator, std::move(out));
}

Value f_slice(Interpreter&, const Value& v, CallArgs& a) {
  auto slices = to_int(a.get_or(0, "slices", Value(1)));
  if (!slices || *slices <= 0) throw_type_error("slice count must be a positive integer");
  check_list_size(static_cast<uint64_t>(*slices));
  Value fill = a.get_or(1, "fill_with", Value::none());
  auto seq = iterate(v);
  int64_t length = static_cast<int64_t>(seq.size());
  int64_t per = length / *slices, extra = length % *slices, offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < *slices; ++k) {
    int64_t start = offset + k * per;
    if (k < extra) ++offset;
    int64_t end = offset + (k + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (!fill.is_none() && k >= extra) tmp.push_back(fill);
    out.push_back(Value::list(std::move(tmp)));
  }
  return Value::sequence(Seq::Generator, std::move(out));
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

Value f_dictsort(Interpreter&, const Value& v, CallArgs& a) {
  bool case_sensitive = truthy_arg(a, 0, "case_sensitive", false);
  Value by = a.get_or(1, "by", Value("key"));
  bool reverse = truthy_arg(a, 2, "reverse", false);
  if (!v.is_dict()) throw_type_error("dictsort requires a mapping");
  size_t pos;
  if (by.is_string() && by.str() == "key") pos = 0;
  else if (by.is_string() && by.str() == "value") pos = 1;
  else throw_type_error("You can only sort by either \"key\" or \"value\"");
  std::vector<Value> items;
  for (const auto& [k, x] : v.dict_data().items) items.push_back(Value::tuple({k, x}));
  sort_by(items, [&](const Value& it) {
    const Value& x = it.items()[pos];
    return case_sensitive ? x : lower_if_str(x);
  }, reverse);
  return Value::list(std::move(items));
}

Value f_escape(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_markup()) return v;
  return Value::markup(html_escape(v.to_str()));
}
Value f_forceescape(Interpreter&, const Value& v, CallArgs&) { return Value::markup(html_escape(v.to_str())); }
Value f_safe(Interpreter&, const Value& v, CallArgs&) { return v.is_markup() ? v : Value::markup(v.to_str()); }

Value f_first(Interpreter&, const Value& v, CallArgs&) {
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_iterator() || !(v.kind() == Kind::List || v.is_string() || v.is_dict() || v.is_undefined()))
    throw_type_error("'" + v.type_name() + "' object is not reversible");
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

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

Value f_groupby(Interpreter& in, const Value& v, CallArgs& a) {
  Value attribute = a.get_or(0, "attribute", Value());
  Value dflt = a.get_or(1, "default", Value::none());
  bool case_sensitive = truthy_arg(a, 2, "case_sensitive", false);
  Getter key = make_getter(in, attribute, !case_sensitive, dflt);
  auto items = iterate(v);
  sort_by(items, key, false);
  std::vector<Value> out;
  size_t i = 0;
  while (i < items.size()) {
    Value k = key(items[i]);
    std::vector<Value> group;
    size_t j = i;
    while (j < items.size() && equals(key(items[j]), k)) group.push_back(items[j++]);
    Value grouper = case_sensitive ? k : make_getter(in, attribute, false, dflt)(group.front());
    out.push_back(Value::tuple({grouper, Value::list(std::move(group))}));
    i = j;
  }
  return Value::list(std::move(out));
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

Value f_items(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::sequence(Seq::Generator, {});
  if (!v.is_dict()) throw_type_error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, x] : v.dict_data().items) out.push_back(Value::tuple({k, x}));
  return Value::sequence(Seq::Generator, std::move(out));
}

Value f_join(Interpreter& in, const Value& v, CallArgs& a) {
  std::string d = a.get_or(0, "d", Value("")).to_str();
  Value attribute = a.get_or(1, "attribute", Value::none());
  auto items = iterate(v);
  Getter g = attribute.is_none() ? Getter() : make_getter(in, attribute, false);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += d;
    out += (g ? g(items[i]) : items[i]).to_str();
  }
  return Value(out);
}

Value f_length(Interpreter&, const Value& v, CallArgs&) { return Value(length(v)); }
Value f_list(Interpreter&, const Value& v, CallArgs&) { return Value::list(iterate(v)); }

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
  std::vector<Value> out;
  if (!v.truthy()) return Value::sequence(Seq::Generator, {});  // jinja2: `if value:` first
  auto items = iterate(v);
  if (a.args.empty()) {
    auto attr = a.get(CallArgs::npos, "attribute");
    if (!attr) throw_type_error("map requires a filter argument");
    Value dflt = a.get_or(CallArgs::npos, "default", Value::none());
    for (const auto& kv : a.kwargs)
      if (kv.first != "attribute" && kv.first != "default")
        throw_type_error("Unexpected keyword argument '" + kv.first + "'");
    Getter g = make_getter(in, *attr, false, dflt);
    for (const auto& x : items) out.push_back(g(x));
  } else {
    if (!a.args[0].is_string()) throw_type_error("map filter name must be a string");
    std::string name = a.args[0].str();
    CallArgs rest;
    rest.args.assign(a.args.begin() + 1, a.args.end());
    rest.kwargs = a.kwargs;
    for (const auto& x : items) {
      CallArgs copy = rest;
      out.push_back(in.call_filter(name, x, copy));
    }
  }
  return Value::sequence(Seq::Generator, std::move(out));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& a, bool want_max) {
  bool case_sensitive = truthy_arg(a, 0, "case_sensitive", false);
  Value attribute = a.get_or(1, "attribute", Value::none());
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  Getter key = make_getter(in, attribute, !case_sensitive);
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? less(best_key, k) : less(k, best_key)) best = i, best_key = k;
  }
  return items[best];
}
Value f_max(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }
Value f_min(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }

Value f_pprint(Interpreter&, const Value& v, CallArgs&) { return Value(v.repr()); }

Value select_reject(Interpreter& in, const Value& v, CallArgs& a, bool select, bool by_attr) {
  std::vector<Value> out;
  if (!v.truthy()) return Value::sequence(Seq::Generator, {});
  size_t off = 0;
  Getter trans = [](const Value& x) { return x; };
  if (by_attr) {
    if (a.args.empty()) throw_type_error("Missing parameter for attribute name");
    trans = make_getter(in, a.args[0], false);
    off = 1;
  }
  std::optional<std::string> test;
  CallArgs rest;
  if (a.args.size() > off) {
    if (!a.args[off].is_string()) throw_type_error("test name must be a string");
    test = a.args[off].str();
    rest.args.assign(a.args.begin() + off + 1, a.args.end());
    rest.kwargs = a.kwargs;
  }
  for (const auto& x : iterate(v)) {
    Value t = trans(x);
    bool ok;
    if (test) {
      CallArgs copy = rest;
      ok = in.call_test(*test, t, copy);
    } else {
      ok = t.truthy();
    }
    if (ok == select) out.push_back(x);
  }
  return Value::sequence(Seq::Generator, std::move(out));
}
Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_reject(in, v, a, true, false); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_reject(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_reject(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_reject(in, v, a, false, true); }

Value f_replace(Interpreter&, const Value& v, CallArgs& a) {
  if (a.args.size() < 2 && !(a.get(0, "old") && a.get(1, "new"))) throw_type_error("replace needs old and new");
  std::string old_s = a.get_or(0, "old", Value("")).to_str();
  std::string new_s = a.get_or(1, "new", Value("")).to_str();
  Value count = a.get_or(2, "count", Value::none());
  int64_t n = count.is_none() ? -1 : to_int(count).value_or(-1);
  return Value(py::replace(soft_str(v), old_s, new_s, n));
}

Value f_reverse(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_string()) {
    const std::string& s = v.str();
    auto offs = py::code_point_offsets(s);
    std::string out;
    for (size_t k = offs.size() - 1; k-- > 0;) out.append(s, offs[k], offs[k + 1] - offs[k]);
    return Value(out);
  }
  bool reversible = !v.is_iterator();  // Python falls back to a reversed list copy
  auto items = iterate(v);
  std::reverse(items.begin(), items.end());
  return reversible ? Value::sequence(Seq::ReverseIterator, std::move(items)) : Value::list(std::move(items));
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

Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
  bool reverse = truthy_arg(a, 0, "reverse", false);
  bool case_sensitive = truthy_arg(a, 1, "case_sensitive", false);
  Value attribute = a.get_or(2, "attribute", Value::none());
  auto items = iterate(v);
  sort_by(items, make_multi_getter(in, attribute, !case_sensitive), reverse);
  return Value::list(std::move(items));
}

Value f_string(Interpreter&, const Value& v, CallArgs&) {
  return v.is_markup() ? v : Value(v.to_str());
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
  Value attribute = a.get_or(0, "attribute", Value::none());
  Value total = a.get_or(1, "start", Value(0));
  Getter g = attribute.is_none() ? Getter() : make_getter(in, attribute, false);
  for (const auto& x : iterate(v)) total = binary_op("+", total, g ? g(x) : x);
  return total;
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

Value f_unique(Interpreter& in, const Value& v, CallArgs& a) {
  bool case_sensitive = truthy_arg(a, 0, "case_sensitive", false);
  Value attribute = a.get_or(1, "attribute", Value::none());
  Getter key = make_getter(in, attribute, !case_sensitive);
  std::unordered_set<std::string> seen;
  std::vector<Value> out;
  for (const auto& x : iterate(v))
    if (seen.insert(hash_key(key(x))).second) out.push_back(x);
  return Value::sequence(Seq::Generator, std::move(out));
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

struct Entry {
  const char* name;
  FilterFn fn;
};

const Entry kFilters[] = {
    {"abs", f_abs}, {"attr", f_attr}, {"batch", f_batch}, {"capitalize", f_capitalize},
    {"center", f_center}, {"count", f_length}, {"d", f_default}, {"default", f_default},
    {"dictsort", f_dictsort}, {"e", f_escape}, {"escape", f_escape}, {"first", f_first},
    {"float", f_float}, {"forceescape", f_forceescape}, {"format", f_format},
    {"groupby", f_groupby}, {"indent", f_indent}, {"int", f_int}, {"items", f_items},
    {"join", f_join}, {"last", f_last}, {"length", f_length}, {"list", f_list},
    {"lower", f_lower}, {"map", f_map}, {"max", f_max}, {"min", f_min}, {"pprint", f_pprint},
    {"reject", f_reject}, {"rejectattr", f_rejectattr}, {"replace", f_replace},
    {"reverse", f_reverse}, {"round", f_round}, {"safe", f_safe}, {"select", f_select},
    {"selectattr", f_selectattr}, {"slice", f_slice}, {"sort", f_sort}, {"string", f_string},
    {"sum", f_sum}, {"title", f_title}, {"tojson", f_tojson}, {"trim", f_trim},
    {"truncate", f_truncate}, {"unique", f_unique}, {"upper", f_upper},
    {"wordcount", f_wordcount},
};

}  // namespace

FilterFn find_filter(const std::string& name) {
  for (const auto& e : kFilters)
    if (name == e.name) return e.fn;
  return nullptr;
}

}  // namespace hearth::text::jinja
