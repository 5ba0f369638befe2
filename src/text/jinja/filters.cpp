// jinja2's filters over sequences and mappings (`xs|length`, `xs|join`,
// `xs|map(attribute='a')`, `d|dictsort`...) and the table of all filters.
// Those on strings and numbers, and tojson, are in filters_strings.cpp.
#include "text/jinja/filters.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/eval.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja::detail {

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

// ---- filters ----

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

Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
  bool reverse = truthy_arg(a, 0, "reverse", false);
  bool case_sensitive = truthy_arg(a, 1, "case_sensitive", false);
  Value attribute = a.get_or(2, "attribute", Value::none());
  auto items = iterate(v);
  sort_by(items, make_multi_getter(in, attribute, !case_sensitive), reverse);
  return Value::list(std::move(items));
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
  Value attribute = a.get_or(0, "attribute", Value::none());
  Value total = a.get_or(1, "start", Value(0));
  Getter g = attribute.is_none() ? Getter() : make_getter(in, attribute, false);
  for (const auto& x : iterate(v)) total = binary_op("+", total, g ? g(x) : x);
  return total;
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

}  // namespace hearth::text::jinja::detail

namespace hearth::text::jinja {

FilterFn find_filter(const std::string& name) {
  for (const auto& e : detail::kFilters)
    if (name == e.name) return e.fn;
  return nullptr;
}

}  // namespace hearth::text::jinja
