// Python string formatting for the Jinja engine: `fmt % args` (also the
// `format` filter) and str.format.
#include <cmath>
#include <cstdio>

#include "text/jinja/builtins.h"
#include "text/jinja/eval.h"
#include "text/jinja/unicode.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

struct Spec {
  char fill = ' ';
  std::string fill_utf8 = " ";
  char align = 0;  // < > ^ =
  char sign = 0;   // + - space
  bool alt = false;
  bool zero = false;
  int width = -1;
  char grouping = 0;
  int precision = -1;
  char type = 0;
};

std::string pad(const std::string& s, const Spec& sp, char default_align) {
  int64_t len = static_cast<int64_t>(py::length(s));
  if (sp.width < 0 || len >= sp.width) return s;
  int64_t n = sp.width - len;
  char align = sp.align ? sp.align : default_align;
  std::string fill;
  auto fills = [&](int64_t k) {
    std::string f;
    for (int64_t i = 0; i < k; ++i) f += sp.fill_utf8;
    return f;
  };
  if (align == '<') return s + fills(n);
  if (align == '^') return fills(n / 2) + s + fills(n - n / 2);
  if (align == '=') {
    size_t sign_len = (!s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) ? 1 : 0;
    if (s.compare(sign_len, 2, "0x") == 0 || s.compare(sign_len, 2, "0X") == 0 ||
        s.compare(sign_len, 2, "0o") == 0 || s.compare(sign_len, 2, "0b") == 0)
      sign_len += 2;
    return s.substr(0, sign_len) + fills(n) + s.substr(sign_len);
  }
  return fills(n) + s;
}

std::string group_digits(const std::string& digits, char sep) {
  std::string out;
  int count = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    out.insert(out.begin(), digits[i]);
    if (++count % 3 == 0 && i > 0) out.insert(out.begin(), sep);
  }
  return out;
}

std::string format_int(int64_t v, const Spec& sp) {
  char type = sp.type ? sp.type : 'd';
  uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  if (type == 'c') {
    std::string s;
    py::encode(s, static_cast<char32_t>(v));
    return pad(s, sp, '<');
  }
  int base = type == 'x' || type == 'X' ? 16 : type == 'o' ? 8 : type == 'b' ? 2 : 10;
  if (type != 'd' && type != 'n' && base == 10) throw_type_error(std::string("Unknown format code '") + type + "' for object of type 'int'");
  const char* dig = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  do {
    digits.insert(digits.begin(), dig[mag % base]);
    mag /= base;
  } while (mag);
  if (sp.grouping) digits = group_digits(digits, sp.grouping);
  const char* prefix = "";
  if (sp.alt && base != 10) prefix = base == 16 ? (type == 'X' ? "0X" : "0x") : base == 8 ? "0o" : "0b";
  std::string text = v < 0 ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "";
  text.append(prefix).append(digits);
  Spec s2 = sp;
  if (sp.zero && !sp.align) s2.align = '=', s2.fill_utf8 = "0";
  return pad(text, s2, '>');
}

std::string format_float(double v, const Spec& sp) {
  char type = sp.type;
  std::string body;
  if (type == 0 && sp.precision < 0) {
    body = repr_float(v);
    if (sp.sign == '+' && !(std::signbit(v))) body = "+" + body;
    if (sp.sign == ' ' && !(std::signbit(v))) body = " " + body;
  } else {
    bool percent = type == '%';
    double x = percent ? v * 100 : v;
    char conv = type == 0 ? 'g' : percent ? 'f' : type == 'n' ? 'g' : type;
    int prec = sp.precision >= 0 ? sp.precision : 6;
    std::string fmt = "%";
    if (sp.sign == '+') fmt += '+';
    if (sp.sign == ' ') fmt += ' ';
    if (sp.alt) fmt += '#';
    fmt += "." + std::to_string(prec) + conv;
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt.c_str(), x);
    body = buf;
    if (percent) body += '%';
  }
  if (sp.grouping) {
    size_t start = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
    size_t end = start;
    while (end < body.size() && body[end] >= '0' && body[end] <= '9') ++end;
    body = body.substr(0, start) + group_digits(body.substr(start, end - start), sp.grouping) + body.substr(end);
  }
  Spec s2 = sp;
  if (sp.zero && !sp.align) s2.align = '=', s2.fill_utf8 = "0";
  return pad(body, s2, '>');
}

Spec parse_spec(const std::string& s) {
  Spec sp;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  // [[fill]align]
  size_t j = 0;
  if (!s.empty()) {
    char32_t cp = py::decode(s, j);
    (void)cp;
  }
  if (j < s.size() && is_align(s[j])) {
    sp.fill_utf8 = s.substr(0, j);
    sp.align = s[j];
    i = j + 1;
  } else if (!s.empty() && is_align(s[0])) {
    sp.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sp.sign = s[i++];
  if (i < s.size() && s[i] == '#') sp.alt = true, ++i;
  if (i < s.size() && s[i] == '0') sp.zero = true, ++i;
  if (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    sp.width = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      sp.width = sp.width * 10 + (s[i++] - '0');
      check_text_size(static_cast<uint64_t>(sp.width));  // before it can overflow
    }
  }
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) sp.grouping = s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    sp.precision = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      sp.precision = sp.precision * 10 + (s[i++] - '0');
      check_text_size(static_cast<uint64_t>(sp.precision));
    }
  }
  if (i < s.size()) sp.type = s[i++];
  if (i != s.size()) throw_type_error("Invalid format specifier '" + s + "'");
  return sp;
}

// Python's format(value, spec).
std::string format_value(const Value& v, const std::string& spec) {
  if (spec.empty()) return v.to_str();
  Spec sp = parse_spec(spec);
  if (v.is_string()) {
    if (sp.type && sp.type != 's') throw_type_error(std::string("Unknown format code '") + sp.type + "' for object of type 'str'");
    std::string s = v.str();
    if (sp.precision >= 0) {
      auto offs = py::code_point_offsets(s);
      if (static_cast<size_t>(sp.precision) + 1 < offs.size()) s = s.substr(0, offs[sp.precision]);
    }
    return pad(s, sp, '<');
  }
  if (v.is_int() || v.is_bool()) {
    if (sp.type == 'e' || sp.type == 'E' || sp.type == 'f' || sp.type == 'F' || sp.type == 'g' ||
        sp.type == 'G' || sp.type == '%')
      return format_float(v.as_float(), sp);
    return format_int(v.as_int(), sp);
  }
  if (v.is_float()) return format_float(v.as_float(), sp);
  throw_type_error("unsupported format string passed to " + v.type_name() + ".__format__");
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> list;
  const Value* mapping = nullptr;
  if (args.is_tuple()) list = args.items();
  else list.push_back(args);
  if (args.is_dict()) mapping = &args;
  size_t next = 0;
  bool used_mapping = false;
  auto take = [&]() -> Value {
    if (next >= list.size()) throw_type_error("not enough arguments for format string");
    return list[next++];
  };
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) throw_type_error("incomplete format");
    Value key_value;
    bool keyed = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos) throw_type_error("incomplete format key");
      if (!mapping) throw_type_error("format requires a mapping");
      const Value* v = mapping->dict_data().find(fmt.substr(i + 1, close - i - 1));
      if (!v) throw_type_error("KeyError: '" + fmt.substr(i + 1, close - i - 1) + "'");
      key_value = *v;
      keyed = used_mapping = true;
      i = close + 1;
    }
    Spec sp;
    std::string flags;
    while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags += fmt[i++];
    auto number = [&](int& target) {
      if (i < fmt.size() && fmt[i] == '*') {
        auto w = to_int(take());
        if (!w) throw_type_error("* wants int");
        check_text_size(*w < 0 ? 0 - static_cast<uint64_t>(*w) : static_cast<uint64_t>(*w));  // |*w|
        target = static_cast<int>(*w);
        ++i;
        return;
      }
      if (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
        target = 0;
        while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
          target = target * 10 + (fmt[i++] - '0');
          check_text_size(static_cast<uint64_t>(target));  // before it can overflow
        }
      }
    };
    number(sp.width);
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      sp.precision = 0;
      number(sp.precision);
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) throw_type_error("incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    Value v = keyed ? key_value : take();
    bool left = flags.find('-') != std::string::npos;
    sp.align = left ? '<' : 0;
    if (flags.find('+') != std::string::npos) sp.sign = '+';
    else if (flags.find(' ') != std::string::npos) sp.sign = ' ';
    sp.alt = flags.find('#') != std::string::npos;
    sp.zero = !left && flags.find('0') != std::string::npos;
    switch (conv) {
      case 's': case 'r': case 'a': {
        std::string s = conv == 's' ? v.to_str() : v.repr();
        if (sp.precision >= 0) {
          auto offs = py::code_point_offsets(s);
          if (static_cast<size_t>(sp.precision) + 1 < offs.size()) s = s.substr(0, offs[sp.precision]);
        }
        sp.zero = false;
        out += pad(s, sp, '>');
        break;
      }
      case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': {
        if (v.is_undefined()) v.fail_undefined();
        if (!v.is_number()) throw_type_error(std::string("%") + conv + " format: a real number is required, not " + v.type_name());
        if (v.is_float() && (conv == 'x' || conv == 'X' || conv == 'o'))
          throw_type_error(std::string("%") + conv + " format: an integer is required, not float");
        auto n = to_int(v);
        if (!n) throw_type_error("cannot convert float to integer");
        sp.type = (conv == 'i' || conv == 'u') ? 'd' : conv;
        if (sp.precision >= 0) {  // precision pads digits with zeros
          std::string digits = format_int(*n < 0 ? -*n : *n, Spec{.type = sp.type});
          if (static_cast<int>(digits.size()) < sp.precision) digits.insert(0, sp.precision - digits.size(), '0');
          std::string sign = *n < 0 ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "";
          out += pad(sign + digits, sp, '>');
        } else {
          out += format_int(*n, sp);
        }
        break;
      }
      case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
        if (v.is_undefined()) v.fail_undefined();
        if (!v.is_number()) throw_type_error("must be real number, not " + v.type_name());
        sp.type = conv;
        if (sp.precision < 0) sp.precision = 6;
        out += format_float(v.as_float(), sp);
        break;
      }
      case 'c': {
        std::string s;
        if (v.is_string()) s = v.str();
        else if (auto n = to_int(v)) py::encode(s, static_cast<char32_t>(*n));
        else throw_type_error("%c requires int or char");
        out += pad(s, sp, '>');
        break;
      }
      default:
        throw_type_error(std::string("unsupported format character '") + conv + "'");
    }
  }
  // Python treats any non-tuple argument with __getitem__ (list, dict) as a
  // mapping, and then does not complain about unused arguments.
  if (!used_mapping && !mapping && !args.is_list() && !args.is_undefined() && next < list.size())
    throw_type_error("not all arguments converted during string formatting");
  return out;
}

std::string str_format(Interpreter& in, const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw_type_error("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw_type_error("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conversion;
    if (auto colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (auto bang = field.find('!'); bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    size_t k = 0;
    while (k < field.size() && field[k] != '.' && field[k] != '[') ++k;
    std::string head = field.substr(0, k);
    Value v;
    if (head.empty()) {
      if (auto_index >= args.args.size()) throw_type_error("Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      v = args.args[auto_index++];
    } else if (head.find_first_not_of("0123456789") == std::string::npos) {
      size_t idx = std::stoul(head);
      if (idx >= args.args.size()) throw_type_error("Replacement index " + head + " out of range for positional args tuple");
      v = args.args[idx];
    } else {
      auto kw = args.get(CallArgs::npos, head);
      if (!kw) throw_type_error("KeyError: '" + head + "'");
      v = *kw;
    }
    while (k < field.size()) {
      if (field[k] == '.') {
        size_t e = k + 1;
        while (e < field.size() && field[e] != '.' && field[e] != '[') ++e;
        v = in.getattr(v, field.substr(k + 1, e - k - 1));
        k = e;
      } else {
        size_t e = field.find(']', k);
        if (e == std::string::npos) throw_type_error("Missing ']' in format string");
        std::string key = field.substr(k + 1, e - k - 1);
        Value kv = key.find_first_not_of("0123456789") == std::string::npos && !key.empty()
                       ? Value(static_cast<int64_t>(std::stoll(key)))
                       : Value(key);
        v = in.getitem(v, kv);
        k = e + 1;
      }
      if (v.is_undefined()) v.fail_undefined();
    }
    if (conversion == "r" || conversion == "a") v = Value(v.repr());
    else if (conversion == "s") v = Value(v.to_str());
    out += format_value(v, spec);
  }
  return out;
}

}  // namespace hearth::text::jinja
