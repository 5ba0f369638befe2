// The global functions a chat template can call: jinja2's range, dict,
// namespace, cycler and joiner, and Hugging Face's raise_exception and
// strftime_now.
#include <ctime>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/eval.h"

// GCC 12 reports false -Wrestrict positives on "literal" + std::string (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace hearth::text::jinja {

namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

Value g_range(Interpreter&, CallArgs& a) {
  if (!a.kwargs.empty()) throw_type_error("range() takes no keyword arguments");
  std::vector<int64_t> n;
  for (const auto& v : a.args) {
    if (!v.is_int() && !v.is_bool())
      throw_type_error("'" + v.type_name() + "' object cannot be interpreted as an integer");
    n.push_back(v.as_int());
  }
  int64_t start = 0, stop = 0, step = 1;
  if (n.size() == 1) stop = n[0];
  else if (n.size() == 2) start = n[0], stop = n[1];
  else if (n.size() == 3) start = n[0], stop = n[1], step = n[2];
  else throw_type_error("range expected 1 to 3 arguments, got " + std::to_string(n.size()));
  if (step == 0) throw_type_error("range() arg 3 must not be zero");
  // In 128 bits: stop - start + step - 1 overflows int64 at its ends.
  const __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
  const __int128 by = step > 0 ? __int128(step) : -__int128(step);
  const __int128 count = span > 0 ? (span + by - 1) / by : 0;
  if (count > kMaxRange)
    throw TemplateError(TemplateError::Kind::Limit,
                        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  std::vector<Value> out;
  out.reserve(size_t(count));
  for (int64_t i = 0; i < int64_t(count); ++i) out.emplace_back(int64_t(start + __int128(i) * step));
  std::string repr = "range(" + std::to_string(start) + ", " + std::to_string(stop);
  if (step != 1) repr += ", " + std::to_string(step);
  return Value::range(std::move(out), repr + ")");
}

void fill_dict(DictData& d, const CallArgs& a, const char* what) {
  if (a.args.size() > 1) throw_type_error(std::string(what) + " expected at most 1 argument");
  if (!a.args.empty()) {
    const Value& src = a.args[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict_data().items) d.set(k, v);
    } else {
      for (const auto& pair : iterate(src)) {
        auto kv = iterate(pair);
        if (kv.size() != 2) throw_type_error("dictionary update sequence element has wrong length");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kwargs) d.set(Value(k), v);
}

Value g_dict(Interpreter&, CallArgs& a) {
  Value d = Value::dict();
  fill_dict(*d.dict_ptr(), a, "dict");
  return d;
}

Value g_namespace(Interpreter&, CallArgs& a) {
  auto ns = std::make_shared<Namespace>();
  fill_dict(ns->attrs(), a, "namespace");
  return Value::object(ns);
}

class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  std::optional<Value> getattr(const std::string& name) const override {
    if (name == "current") return items_[pos_];
    if (name == "next" || name == "reset") {
      auto self = const_cast<Cycler*>(this);
      return Value::object(std::make_shared<Method>(self->shared(), name));
    }
    return std::nullopt;
  }
  void set_self(std::weak_ptr<Cycler> w) { self_ = std::move(w); }

 private:
  class Method : public Object {
   public:
    Method(std::shared_ptr<Cycler> c, std::string name) : c_(std::move(c)), name_(std::move(name)) {}
    std::string type_name() const override { return "method"; }
    bool callable() const override { return true; }
    Value call(Interpreter&, CallArgs&) override {
      if (name_ == "reset") {
        c_->pos_ = 0;
        return Value::none();
      }
      Value v = c_->items_[c_->pos_];
      c_->pos_ = (c_->pos_ + 1) % c_->items_.size();
      return v;
    }

   private:
    std::shared_ptr<Cycler> c_;
    std::string name_;
  };
  std::shared_ptr<Cycler> shared() const { return self_.lock(); }

  std::vector<Value> items_;
  size_t pos_ = 0;
  std::weak_ptr<Cycler> self_;
};

Value g_cycler(Interpreter&, CallArgs& a) {
  if (a.args.empty()) throw_type_error("at least one item has to be provided");
  auto c = std::make_shared<Cycler>(a.args);
  c->set_self(c);
  return Value::object(c);
}

class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  bool callable() const override { return true; }
  Value call(Interpreter&, CallArgs&) override {
    if (!used_) {
      used_ = true;
      return Value("");
    }
    return Value(sep_);
  }

 private:
  std::string sep_;
  bool used_ = false;
};

Value g_joiner(Interpreter&, CallArgs& a) {
  return Value::object(std::make_shared<Joiner>(a.get_or(0, "sep", Value(", ")).to_str()));
}

Value g_raise_exception(Interpreter&, CallArgs& a) {
  Value msg = a.get_or(0, "message", Value(""));
  throw TemplateError(TemplateError::Kind::Raised, msg.to_str());
}

Value g_strftime_now(Interpreter&, CallArgs& a) {
  Value fmt = a.get_or(0, "format", Value());
  if (!fmt.is_string()) throw_type_error("strftime() argument 1 must be str, not " + fmt.type_name());
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::string out(256 + fmt.str().size() * 8, '\0');
  size_t n = std::strftime(out.data(), out.size(), fmt.str().c_str(), &tm);
  out.resize(n);
  return Value(out);
}

}  // namespace

void add_global_functions(DictData& globals) {
  auto add = [&](const char* name, BuiltinFunction::Fn fn) {
    globals.set(Value(name), Value::object(std::make_shared<BuiltinFunction>(name, fn)));
  };
  add("range", g_range);
  add("dict", g_dict);
  add("namespace", g_namespace);
  add("cycler", g_cycler);
  add("joiner", g_joiner);
  add("raise_exception", g_raise_exception);
  add("strftime_now", g_strftime_now);
}

}  // namespace hearth::text::jinja
