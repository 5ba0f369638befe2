#include "text/jinja/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {
constexpr int kMaxJsonDepth = 512;
// Values in one conversion (the render's variables: a request's messages,
// tools and kwargs): ~100 bytes each, so a body of small numbers cannot
// become gigabytes before the template reads any of it.
constexpr int64_t kMaxJsonValues = int64_t{1} << 20;
}

static Value from_json_at(const nlohmann::ordered_json& j, int depth, int64_t& left) {
  if (--left < 0)
    throw TemplateError(TemplateError::Kind::Limit,
                        "template input too large (more than " + std::to_string(kMaxJsonValues) + " values)");
  if (depth > kMaxJsonDepth)
    throw TemplateError(TemplateError::Kind::Limit, "template input nested too deeply");
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null: return Value::none();
    case T::boolean: return Value(j.get<bool>());
    case T::number_integer: return Value(j.get<int64_t>());
    case T::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case T::number_float: return Value(j.get<double>());
    case T::string: return Value(j.get<std::string>());
    case T::array: {
      check_list_size(j.size());  // before the reserve, not after the list is built
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json_at(x, depth + 1, left));
      return Value::list(std::move(items));
    }
    case T::object: {
      auto d = std::make_shared<DictData>();
      for (const auto& [k, v] : j.items()) d->set(Value(k), from_json_at(v, depth + 1, left));
      return Value::dict(std::move(d));
    }
    default: return Value::none();
  }
}

Value from_json(const nlohmann::ordered_json& j) {
  int64_t left = kMaxJsonValues;
  return from_json_at(j, 0, left);
}

namespace {

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      continue;
    }
    size_t start = i;
    char32_t cp = py::decode(s, i);
    if (!ensure_ascii) {
      out.append(s, start, i - start);
      continue;
    }
    char buf[16];
    if (cp >= 0x10000) {
      char32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 | (v >> 10)),
                    static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
    }
    out += buf;
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return repr_float(d);
}

// The string a dict key becomes (json.dumps converts non-str keys).
std::string key_string(const Value& k) {
  switch (k.kind()) {
    case Kind::String: return k.str();
    case Kind::Bool: return k.as_bool() ? "true" : "false";
    case Kind::Int: return std::to_string(k.as_int());
    case Kind::Float: return float_json(k.as_float());
    case Kind::None: return "null";
    default:
      throw TemplateError(TemplateError::Kind::Type,
                          "keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

void dump(std::string& out, const Value& v, const JsonDumpOptions& opt, int depth) {
  auto newline = [&](int d) {
    out += '\n';
    for (int i = 0; i < d; ++i) out += *opt.indent;
    check_text_size(out.size());  // a wide indent, deep and long
  };
  switch (v.kind()) {
    case Kind::None: out += "null"; return;
    case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Kind::Int: out += std::to_string(v.as_int()); return;
    case Kind::Float: out += float_json(v.as_float()); return;
    case Kind::String: append_json_string(out, v.str(), opt.ensure_ascii); return;
    case Kind::List: {
      if (!v.is_list())
        throw TemplateError(TemplateError::Kind::Type,
                            "Object of type " + v.type_name() + " is not JSON serializable");
      const auto& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += opt.item_separator;
        if (opt.indent) newline(depth + 1);
        dump(out, items[i], opt, depth + 1);
      }
      if (opt.indent) newline(depth);
      out += ']';
      return;
    }
    case Kind::Dict: {
      const auto& d = v.dict_data();
      if (d.size() == 0) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> entries;
      entries.reserve(d.size());
      for (const auto& [k, x] : d.items) entries.emplace_back(key_string(k), &x);
      if (opt.sort_keys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      bool first = true;
      for (const auto& [k, x] : entries) {
        if (!first) out += opt.item_separator;
        first = false;
        if (opt.indent) newline(depth + 1);
        append_json_string(out, k, opt.ensure_ascii);
        out += opt.key_separator;
        dump(out, *x, opt, depth + 1);
      }
      if (opt.indent) newline(depth);
      out += '}';
      return;
    }
    default:
      throw TemplateError(TemplateError::Kind::Type,
                          "Object of type " + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& opt) {
  std::string out;
  dump(out, v, opt, 0);
  return out;
}

}  // namespace hearth::text::jinja
