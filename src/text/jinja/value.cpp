#include "text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

[[noreturn]] void type_error(const std::string& msg) {
  throw TemplateError(TemplateError::Kind::Type, msg);
}

}  // namespace

// ---- DictData ----

const Value* DictData::find(const Value& key) const {
  auto it = index.find(hash_key(key));
  return it == index.end() ? nullptr : &items[it->second].second;
}

const Value* DictData::find(const std::string& key) const {
  auto it = index.find("s" + key);
  return it == index.end() ? nullptr : &items[it->second].second;
}

void check_text_size(uint64_t bytes) {
  if (bytes > kMaxTextBytes)
    throw TemplateError(TemplateError::Kind::Limit, "string too long (" + std::to_string(bytes) + " bytes, more than " +
                                                        std::to_string(kMaxTextBytes >> 20) + " MiB)");
}

void check_list_size(uint64_t items) {
  if (items > kMaxListBytes / sizeof(Value))
    throw TemplateError(TemplateError::Kind::Limit, "list too large (" + std::to_string(items) + " items, more than " +
                                                        std::to_string(kMaxListBytes >> 20) + " MiB)");
}

static void check_depth(int depth) {
  if (depth > kMaxValueDepth)
    throw TemplateError(TemplateError::Kind::Limit, "value nested too deeply (more than " +
                                                        std::to_string(kMaxValueDepth) + " levels)");
}

void DictData::set(const Value& key, Value value) {
  int d = 1 + std::max(key.depth(), value.depth());
  check_depth(d);
  depth = std::max(depth, d);
  auto [it, inserted] = index.emplace(hash_key(key), items.size());
  if (inserted)
    items.emplace_back(key, std::move(value));
  else
    items[it->second].second = std::move(value);
}

// ---- Value constructors ----

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}

Value Value::unsafe_undefined(std::string hint) {
  Value v = undefined(std::move(hint));
  v.markup_ = true;
  return v;
}

Value Value::range(std::vector<Value> numbers, std::string repr) {
  Value v = sequence(Seq::Range, std::move(numbers));
  v.list_->range_repr = std::move(repr);
  return v;
}

Value Value::list(std::vector<Value> items) {
  int d = 0;
  size_t bytes = items.size() * sizeof(Value);
  for (const auto& x : items) {
    d = std::max(d, x.depth());
    if (x.kind() == Kind::String) bytes += x.str().size();
  }
  check_depth(d + 1);
  if (bytes > kMaxListBytes)
    throw TemplateError(TemplateError::Kind::Limit, "list too large (" + std::to_string(items.size()) +
                                                        " items, more than " + std::to_string(kMaxListBytes >> 20) +
                                                        " MiB)");
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<ListData>();
  v.list_->items = std::move(items);
  v.list_->depth = d + 1;
  v.list_->bytes = bytes;
  return v;
}

int Value::depth() const {
  switch (kind_) {
    case Kind::List: return list_->depth;
    case Kind::Dict: return dict_->depth;
    case Kind::Object: return obj_->depth();
    default: return 0;
  }
}

Value Value::tuple(std::vector<Value> items) { return sequence(Seq::Tuple, std::move(items)); }

Value Value::sequence(Seq seq, std::vector<Value> items) {
  Value v = list(std::move(items));
  v.list_->seq = seq;
  return v;
}

Value Value::dict() { return dict(std::make_shared<DictData>()); }

Value Value::dict(std::shared_ptr<DictData> d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::move(d);
  return v;
}

Value Value::object(std::shared_ptr<Object> o) {
  Value v;
  v.kind_ = Kind::Object;
  v.obj_ = std::move(o);
  return v;
}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.markup_ = true;
  return v;
}

void Value::fail_undefined() const {
  throw TemplateError(markup_ ? TemplateError::Kind::Security : TemplateError::Kind::Undefined,
                      s_.empty() ? "value is undefined" : s_);
}

// ---- Python protocol ----

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined: case Kind::None: return false;
    case Kind::Bool: case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0.0;
    case Kind::String: return !s_.empty();
    case Kind::List: return is_iterator() || !list_->items.empty();
    case Kind::Dict: return dict_->size() > 0;
    case Kind::Object: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return markup_ ? "Markup" : "str";
    case Kind::List:
      switch (list_->seq) {
        case Seq::List: return "list";
        case Seq::Tuple: return "tuple";
        case Seq::Generator: return "generator";
        case Seq::ReverseIterator: return "list_reverseiterator";
        case Seq::DictItems: return "dict_items";
        case Seq::DictKeys: return "dict_keys";
        case Seq::DictValues: return "dict_values";
        case Seq::Range: return "range";
      }
      return "list";
    case Kind::Dict: return "dict";
    case Kind::Object: return obj_->type_name();
  }
  return "object";
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return s_;
    default: return repr();
  }
}

std::string repr_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: fixed for exponents
  // in [-4, 16), scientific (at least two exponent digits) otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t epos = sci.find('e');
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(-exp - 1, '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      out += digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += e;
  }
  return out;
}

std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    size_t start = i;
    char32_t cp = py::decode(s, i);
    if (cp == static_cast<char32_t>(q) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x80 ? (cp < 0x20 || cp == 0x7F) : !py::isprintable(cp)) {
      char buf[16];
      if (cp < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      else if (cp < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s, start, i - start);
    }
  }
  out += q;
  return out;
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "None";
    case Kind::Bool: return i_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return repr_float(f_);
    case Kind::String: return markup_ ? "Markup(" + repr_string(s_) + ")" : repr_string(s_);
    case Kind::List: {
      Seq seq = list_->seq;
      if (seq == Seq::Range) return list_->range_repr;
      if (seq == Seq::Generator || seq == Seq::ReverseIterator) return "<" + type_name() + " object>";
      bool tuple = seq == Seq::Tuple;
      std::string out = tuple ? "(" : "[";
      for (size_t i = 0; i < list_->items.size(); ++i) {
        if (i) out += ", ";
        out += list_->items[i].repr();
      }
      if (tuple && list_->items.size() == 1) out += ",";
      out += tuple ? ")" : "]";
      if (seq != Seq::List && seq != Seq::Tuple) out = type_name() + "(" + out + ")";
      return out;
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + "}";
    }
    case Kind::Object: return obj_->repr();
  }
  return "";
}

// ---- comparisons ----

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined: case Kind::None: return true;
    case Kind::String: return a.str() == b.str();
    case Kind::List: {
      if (a.seq() != b.seq()) return false;
      const auto &x = a.items(), &y = b.items();
      switch (a.seq()) {
        case Seq::List: case Seq::Tuple: case Seq::Range:
          if (x.size() != y.size()) return false;
          for (size_t i = 0; i < x.size(); ++i)
            if (!equals(x[i], y[i])) return false;
          return true;
        case Seq::DictKeys: case Seq::DictItems:  // compared as sets
          if (x.size() != y.size()) return false;
          for (const auto& e : x)
            if (std::none_of(y.begin(), y.end(), [&](const Value& f) { return equals(e, f); })) return false;
          return true;
        default:
          return &x == &y;
      }
    }
    case Kind::Dict: {
      const auto &x = a.dict_data(), &y = b.dict_data();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* o = y.find(k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    }
    case Kind::Object: return a.obj_ptr() == b.obj_ptr();
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list() && a.seq() == b.seq()) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  type_error("'<' not supported between instances of '" + a.type_name() + "' and '" +
             b.type_name() + "'");
}

std::string hash_key(const Value& v) {
  switch (v.kind()) {
    case Kind::None: return "n";
    case Kind::Bool: case Kind::Int: return "i" + std::to_string(v.as_int());
    case Kind::Float: {
      double d = v.as_float();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18)
        return "i" + std::to_string(static_cast<int64_t>(d));
      return "f" + repr_float(d);
    }
    case Kind::String: return "s" + v.str();
    case Kind::List:
      if (v.is_tuple()) {
        std::string k = "t(";
        for (const auto& x : v.items()) k += hash_key(x) + ",";
        return k + ")";
      }
      if (v.is_iterator() || v.seq() == Seq::Range)
        return "o" + std::to_string(reinterpret_cast<uintptr_t>(&v.items()));
      break;
    case Kind::Undefined: return "u";
    case Kind::Object: return "o" + std::to_string(reinterpret_cast<uintptr_t>(v.obj_ptr().get()));
    default: break;
  }
  type_error("unhashable type: '" + v.type_name() + "'");
}

int64_t scan_cost(const Value& container) {
  if (container.is_string()) return 1 + static_cast<int64_t>(container.str().size() >> 4);
  if (container.kind() == Kind::List) return 1 + static_cast<int64_t>(container.items().size());
  return 1;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::String:
      if (!item.is_string())
        type_error("'in <string>' requires string as left operand, not " + item.type_name());
      // memmem: linear, where std::string::find is not (a client's key in
      // a client's string).
      return item.str().empty() ||
             memmem(container.str().data(), container.str().size(), item.str().data(), item.str().size()) != nullptr;
    case Kind::List:
      if (container.is_iterator()) {
        for (const auto& x : iterate(container))
          if (equals(x, item)) return true;
        return false;
      }
      for (const auto& x : container.items())  // not a copy of the list per test
        if (equals(x, item)) return true;
      return false;
    case Kind::Dict:
      if (item.is_list() && !item.is_tuple()) type_error("unhashable type: 'list'");
      if (item.is_dict()) type_error("unhashable type: 'dict'");
      return container.dict_data().find(item) != nullptr;
    case Kind::Undefined: return false;
    default:
      type_error("argument of type '" + container.type_name() + "' is not iterable");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined: return {};
    case Kind::List:
      if (v.is_iterator()) {
        if (v.list_data().consumed) return {};
        v.list_data().consumed = true;
      }
      return v.items();
    case Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict_data().size());
      for (const auto& kv : v.dict_data().items) keys.push_back(kv.first);
      return keys;
    }
    case Kind::String: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      check_list_size(py::length(s));  // a Value per character: ~100 bytes each
      for (size_t i = 0; i < s.size();) {
        size_t start = i;
        py::decode(s, i);
        chars.emplace_back(s.substr(start, i - start));
      }
      return chars;
    }
    default:
      type_error("'" + v.type_name() + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined: return 0;
    case Kind::String: return static_cast<int64_t>(py::length(v.str()));
    case Kind::List:
      if (v.is_iterator()) type_error("object of type '" + v.type_name() + "' has no len()");
      return static_cast<int64_t>(v.items().size());
    case Kind::Dict: return static_cast<int64_t>(v.dict_data().size());
    default: type_error("object of type '" + v.type_name() + "' has no len()");
  }
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&#39;"; break;
      case '"': out += "&#34;"; break;
      default: out += c;
    }
  }
  return out;
}

// ---- CallArgs ----

std::optional<Value> CallArgs::get(size_t pos, const std::string& name) const {
  if (pos != npos && pos < args.size()) return args[pos];
  for (const auto& [k, v] : kwargs)
    if (k == name) return v;
  return std::nullopt;
}

Value CallArgs::get_or(size_t pos, const std::string& name, Value fallback) const {
  auto v = get(pos, name);
  return v ? *v : fallback;
}

void CallArgs::check(const char* what, size_t max_positional,
                     std::initializer_list<const char*> names) const {
  if (args.size() > max_positional)
    type_error(std::string(what) + "() takes at most " + std::to_string(max_positional) +
               " positional argument(s) (" + std::to_string(args.size()) + " given)");
  for (const auto& kv : kwargs) {
    bool ok = false;
    for (const char* n : names) ok = ok || kv.first == n;
    if (!ok) type_error(std::string(what) + "() got an unexpected keyword argument '" + kv.first + "'");
  }
}

// ---- Object defaults ----

std::string Object::repr() const { return "<" + type_name() + " object>"; }
std::optional<Value> Object::getattr(const std::string&) const { return std::nullopt; }
bool Object::setattr(const std::string&, const Value&) { return false; }
Value Object::call(Interpreter&, CallArgs&) {
  type_error("'" + type_name() + "' object is not callable");
}

}  // namespace hearth::text::jinja
