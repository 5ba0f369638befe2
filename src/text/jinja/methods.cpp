// The Python methods of str, dict and list that templates call
// ("x.strip()", "d.items()", "d.get(k, v)"), with jinja2's immutable sandbox:
// mutating methods exist but raise a SecurityError when used.
#include <algorithm>
#include <cstring>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/eval.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

const char* const kStrMethods[] = {
    "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find",
    "format", "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
    "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper",
    "join", "ljust", "lower", "lstrip", "maketrans", "partition", "removeprefix",
    "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip",
    "split", "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper",
    "zfill"};
const char* const kDictMethods[] = {"items", "keys", "values", "get", "copy", "fromkeys"};
const char* const kDictUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};
const char* const kListMethods[] = {"count", "index", "copy"};
const char* const kListUnsafe[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};

template <size_t N>
bool in(const char* const (&names)[N], const std::string& name) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override {
    return "<built-in method " + name_ + " of " + self_.type_name() + " object>";
  }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override { return call_method(in, self_, name_, args); }

 private:
  Value self_;
  std::string name_;
};

const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_string()) throw_type_error(std::string(what) + " must be str, not " + v.type_name());
  return v.str();
}

int64_t need_int(const Value& v, const char* what) {
  if (!v.is_int() && !v.is_bool())
    throw_type_error(std::string(what) + ": '" + v.type_name() + "' object cannot be interpreted as an integer");
  return v.as_int();
}

// Python's [start:end] clamping, in code points, returned as byte offsets.
struct Range {
  size_t b, e;
};
Range sub_range(const std::string& s, const std::vector<size_t>& offs, const CallArgs& a, size_t first) {
  int64_t n = static_cast<int64_t>(offs.size() - 1);
  auto idx = [&](size_t pos, int64_t dflt) {
    if (pos >= a.args.size() || a.args[pos].is_none()) return dflt;
    int64_t x = need_int(a.args[pos], "slice indices");
    if (x < 0) x = std::max<int64_t>(0, x + n);
    return std::min(x, n);
  };
  int64_t b = idx(first, 0), e = idx(first + 1, n);
  if (e < b) e = b;
  (void)s;
  return {offs[b], offs[e]};
}

int64_t cp_index(const std::vector<size_t>& offs, size_t byte) {
  return static_cast<int64_t>(std::lower_bound(offs.begin(), offs.end(), byte) - offs.begin());
}

template <class Pred>
bool all_cps(const std::string& s, Pred p) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();)
    if (!p(py::decode(s, i))) return false;
  return true;
}

std::string justify(const std::string& s, const CallArgs& a, char how) {
  int64_t width = need_int(a.get_or(0, "width", Value(0)), "width");
  std::string fill = a.args.size() > 1 ? need_str(a.args[1], "fillchar") : " ";
  int64_t len = static_cast<int64_t>(py::length(s));
  if (width <= len) return s;
  int64_t n = width - len;
  check_text_size(static_cast<uint64_t>(n) * std::max<size_t>(fill.size(), 1));  // width is < 2^63, fill short
  auto rep = [&](int64_t k) {
    std::string r;
    for (int64_t i = 0; i < k; ++i) r += fill;
    return r;
  };
  if (how == 'l') return s + rep(n);
  if (how == 'r') return rep(n) + s;
  // str.center puts the extra fill on the right when n is odd and len is even, like CPython.
  int64_t left = n / 2 + (n & width & 1);
  return rep(left) + s + rep(n - left);
}

Value str_method(Interpreter& in, const Value& self, const std::string& m, CallArgs& a) {
  const std::string& s = self.str();
  auto chars_arg = [&](std::string& holder) -> const std::string* {
    if (a.args.empty() || a.args[0].is_none()) return nullptr;
    holder = need_str(a.args[0], "strip arg");
    return &holder;
  };
  std::string holder;
  if (m == "strip") return Value(std::string(py::strip(s, chars_arg(holder), true, true)));
  if (m == "lstrip") return Value(std::string(py::strip(s, chars_arg(holder), true, false)));
  if (m == "rstrip") return Value(std::string(py::strip(s, chars_arg(holder), false, true)));
  if (m == "split" || m == "rsplit") {
    Value sep = a.get_or(0, "sep", Value::none());
    int64_t maxsplit = need_int(a.get_or(1, "maxsplit", Value(-1)), "maxsplit");
    std::string sep_s;
    const std::string* sp = nullptr;
    if (!sep.is_none()) {
      sep_s = need_str(sep, "sep");
      if (sep_s.empty()) throw_type_error("empty separator");
      sp = &sep_s;
    }
    auto parts = m == "split" ? py::split(s, sp, maxsplit) : py::rsplit(s, sp, maxsplit);
    std::vector<Value> out(parts.begin(), parts.end());
    return Value::list(std::move(out));
  }
  if (m == "splitlines") {
    auto parts = py::splitlines(s, a.get_or(0, "keepends", Value(false)).truthy());
    return Value::list(std::vector<Value>(parts.begin(), parts.end()));
  }
  if (m == "startswith" || m == "endswith") {
    if (a.args.empty()) throw_type_error(m + "() takes at least 1 argument (0 given)");
    auto offs = py::code_point_offsets(s);
    Range r = sub_range(s, offs, a, 1);
    std::string_view view(s.data() + r.b, r.e - r.b);
    std::vector<Value> prefixes = a.args[0].is_tuple() ? a.args[0].items() : std::vector<Value>{a.args[0]};
    for (const auto& p : prefixes) {
      if (!p.is_string())
        throw_type_error(m + " first arg must be str or a tuple of str, not " + p.type_name());
      const std::string& x = p.str();
      if (x.size() > view.size()) continue;
      if (m == "startswith" ? view.compare(0, x.size(), x) == 0
                            : view.compare(view.size() - x.size(), x.size(), x) == 0)
        return Value(true);
    }
    return Value(false);
  }
  if (m == "replace") {
    if (a.args.size() < 2) throw_type_error("replace() takes at least 2 arguments");
    int64_t count = a.args.size() > 2 ? need_int(a.args[2], "count") : -1;
    return Value(py::replace(s, need_str(a.args[0], "replace() argument 1"),
                             need_str(a.args[1], "replace() argument 2"), count));
  }
  if (m == "upper") return Value(py::to_upper(s));
  if (m == "lower" || m == "casefold") return Value(py::to_lower(s));
  if (m == "title") return Value(py::title(s));
  if (m == "capitalize") return Value(py::capitalize(s));
  if (m == "swapcase") {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      char32_t cp = py::decode(s, i);
      py::encode(out, py::iscased_upper(cp) ? py::lower(cp) : py::iscased_lower(cp) ? py::upper(cp) : cp);
    }
    return Value(out);
  }
  if (m == "format") return Value(str_format(in, s, a));
  if (m == "format_map") {
    CallArgs kw;
    Value d = a.args.empty() ? Value::dict() : a.args[0];
    if (!d.is_dict()) throw_type_error("format_map() argument must be a mapping");
    for (const auto& [k, v] : d.dict_data().items) kw.kwargs.emplace_back(k.to_str(), v);
    return Value(str_format(in, s, kw));
  }
  if (m == "count" || m == "find" || m == "rfind" || m == "index" || m == "rindex") {
    if (a.args.empty()) throw_type_error(m + "() takes at least 1 argument (0 given)");
    const std::string& sub = need_str(a.args[0], "must be str");
    auto offs = py::code_point_offsets(s);
    Range r = sub_range(s, offs, a, 1);
    std::string_view view(s.data() + r.b, r.e - r.b);
    if (m == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(py::length(view) + 1));
      int64_t n = 0;
      for (size_t p = view.find(sub); p != std::string_view::npos; p = view.find(sub, p + sub.size())) ++n;
      return Value(n);
    }
    size_t p = (m == "find" || m == "index") ? view.find(sub) : view.rfind(sub);
    if (p == std::string_view::npos) {
      if (m == "index" || m == "rindex") throw_type_error("substring not found");
      return Value(int64_t{-1});
    }
    return Value(cp_index(offs, r.b + p));
  }
  if (m == "join") {
    if (a.args.size() != 1) throw_type_error("join() takes exactly one argument");
    std::string out;
    auto items = iterate(a.args[0]);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        throw_type_error("sequence item " + std::to_string(i) + ": expected str instance, " +
                         items[i].type_name() + " found");
      if (i) out += s;
      out += items[i].str();
    }
    return Value(out);
  }
  if (m == "isdigit" || m == "isdecimal" || m == "isnumeric") return Value(all_cps(s, py::isdigit));
  if (m == "isalpha") return Value(all_cps(s, py::isalpha));
  if (m == "isalnum") return Value(all_cps(s, py::isalnum));
  if (m == "isspace") return Value(all_cps(s, py::isspace));
  if (m == "isascii") return Value(py::is_ascii(s));
  if (m == "isprintable") return Value(s.empty() || all_cps(s, py::isprintable));
  if (m == "isidentifier") {
    bool ok = !s.empty() && !(s[0] >= '0' && s[0] <= '9') &&
              all_cps(s, [](char32_t c) { return py::isword(c); });
    return Value(ok);
  }
  if (m == "isupper" || m == "islower") {
    bool cased = false, ok = true;
    for (size_t i = 0; i < s.size();) {
      char32_t cp = py::decode(s, i);
      if (py::iscased_upper(cp)) cased = true, ok = ok && m == "isupper";
      else if (py::iscased_lower(cp)) cased = true, ok = ok && m == "islower";
    }
    return Value(cased && ok);
  }
  if (m == "istitle") return Value(!s.empty() && py::title(s) == s && s != py::to_lower(s));
  if (m == "ljust") return Value(justify(s, a, 'l'));
  if (m == "rjust") return Value(justify(s, a, 'r'));
  if (m == "center") return Value(justify(s, a, 'c'));
  if (m == "zfill") {
    int64_t width = need_int(a.get_or(0, "width", Value(0)), "width");
    int64_t len = static_cast<int64_t>(py::length(s));
    if (width <= len) return Value(s);
    check_text_size(static_cast<uint64_t>(width));
    size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    return Value(s.substr(0, sign) + std::string(width - len, '0') + s.substr(sign));
  }
  if (m == "partition" || m == "rpartition") {
    if (a.args.size() != 1) throw_type_error(m + "() takes exactly one argument");
    const std::string& sep = need_str(a.args[0], "separator");
    if (sep.empty()) throw_type_error("empty separator");
    size_t p = m == "partition" ? s.find(sep) : s.rfind(sep);
    if (p == std::string::npos)
      return m == "partition" ? Value::tuple({Value(s), Value(""), Value("")})
                              : Value::tuple({Value(""), Value(""), Value(s)});
    return Value::tuple({Value(s.substr(0, p)), Value(sep), Value(s.substr(p + sep.size()))});
  }
  if (m == "removeprefix" || m == "removesuffix") {
    if (a.args.size() != 1) throw_type_error(m + "() takes exactly one argument");
    const std::string& x = need_str(a.args[0], m.c_str());
    if (m == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
    if (m == "removesuffix" && !x.empty() && s.size() >= x.size() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0)
      return Value(s.substr(0, s.size() - x.size()));
    return Value(s);
  }
  throw_type_error("str." + m + "() is not supported in hearth's Jinja engine");
}

Value dict_method(const Value& self, const std::string& m, CallArgs& a) {
  const DictData& d = self.dict_data();
  if (m == "items") {
    std::vector<Value> out;
    for (const auto& [k, v] : d.items) out.push_back(Value::tuple({k, v}));
    return Value::sequence(Seq::DictItems, std::move(out));
  }
  if (m == "keys" || m == "values") {
    std::vector<Value> out;
    for (const auto& [k, v] : d.items) out.push_back(m == "keys" ? k : v);
    return Value::sequence(m == "keys" ? Seq::DictKeys : Seq::DictValues, std::move(out));
  }
  if (m == "get") {
    if (a.args.empty() || a.args.size() > 2) throw_type_error("get expected 1 or 2 arguments");
    const Value* v = nullptr;
    try {
      v = d.find(a.args[0]);
    } catch (const TemplateError&) {
      throw;
    }
    if (v) return *v;
    return a.args.size() > 1 ? a.args[1] : Value::none();
  }
  if (m == "copy") return Value::dict(std::make_shared<DictData>(d));
  throw_type_error("dict." + m + "() is not supported in hearth's Jinja engine");
}

Value list_method(const Value& self, const std::string& m, CallArgs& a) {
  const auto& items = self.items();
  if (m == "count") {
    if (a.args.size() != 1) throw_type_error("count() takes exactly one argument");
    int64_t n = 0;
    for (const auto& x : items) n += equals(x, a.args[0]);
    return Value(n);
  }
  if (m == "index") {
    if (a.args.empty()) throw_type_error("index expected at least 1 argument");
    for (size_t i = 0; i < items.size(); ++i)
      if (equals(items[i], a.args[0])) return Value(static_cast<int64_t>(i));
    throw_type_error(a.args[0].repr() + " is not in list");
  }
  if (m == "copy") return Value::list(items);
  throw_type_error("list." + m + "() is not supported in hearth's Jinja engine");
}

}  // namespace

std::optional<Value> method_attr(const Value& self, const std::string& name) {
  bool known = false, unsafe = false;
  if (self.is_string()) {
    known = in(kStrMethods, name);
  } else if (self.is_dict()) {
    known = in(kDictMethods, name);
    unsafe = in(kDictUnsafe, name);
  } else if (self.is_list()) {
    known = in(kListMethods, name) && !(self.is_tuple() && name == "copy");
    unsafe = !self.is_tuple() && in(kListUnsafe, name);
  }
  if (unsafe)
    return Value::unsafe_undefined("access to attribute '" + name + "' of '" + self.type_name() +
                                   "' object is unsafe.");
  if (!known) return std::nullopt;
  return Value::object(std::make_shared<BoundMethod>(self, name));
}

Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  if (self.is_string()) return str_method(in, self, name, args);
  if (self.is_dict()) return dict_method(self, name, args);
  if (self.is_list()) return list_method(self, name, args);
  throw_type_error("'" + self.type_name() + "' object has no attribute '" + name + "'");
}

}  // namespace hearth::text::jinja
