// The Jinja interpreter: walks the syntax tree with jinja2's scoping rules
// (a for-loop iteration, a macro call and a set-block body get their own
// scope; if does not), Python's operator semantics and jinja2's Undefined.
// Internal to the engine; users go through jinja.h (or text/chat.h).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/jinja/jinja.h"
#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace hearth::text::jinja {

struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;
  explicit Scope(std::shared_ptr<Scope> p = nullptr) : parent(std::move(p)) {}
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

class Interpreter {
 public:
  // `globals`: the render variables and the built-in functions.
  Interpreter(std::shared_ptr<const DictData> globals, const RenderLimits& limits)
      : globals_(std::move(globals)), limits_(limits) {}
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // root_locals: the names that start undefined in the template's frame.
  std::string render(const Body& body, const std::vector<std::string>& root_locals);

  Value eval(const Expr& e, const ScopePtr& scope);
  Flow exec(const Body& body, const ScopePtr& scope, std::string& out);

  // jinja2's sandboxed attribute / item lookup: a.b tries the attribute
  // (str/dict/list methods) then the item; a[b] the other way round.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  Value call(const Value& callee, CallArgs& args);
  Value call_filter(const std::string& name, const Value& v, CallArgs& args);
  bool call_test(const std::string& name, const Value& v, CallArgs& args);

  // Runs a macro (or a call block's caller) body with bound arguments.
  Value call_macro(const Stmt& def, const ScopePtr& parent, CallArgs& args, const Value& caller);
  // Runs a for loop over `iterable` (also used by recursive loop(...) calls).
  Flow run_for(const Stmt& s, const Value& iterable, const ScopePtr& scope, std::string& out, int depth);
  // loop(...) of a recursive loop: run_for within the call depth limit.
  void run_recursive_loop(const Stmt& s, const Value& iterable, const ScopePtr& scope, std::string& out, int depth);

  // Counts `steps` units of work against RenderLimits::max_steps.
  void charge(int64_t steps) {
    steps_ += steps;
    if (steps_ > limits_.max_steps) too_much_work();
  }

 private:
  [[noreturn]] void too_much_work() const;
  // The work and size limits on a value an expression produced.
  void account(const Value& v);
  Value eval_inner(const Expr& e, const ScopePtr& scope);
  Value lookup(const std::string& name, const ScopePtr& scope) const;
  void assign(const Expr& target, const Value& v, const ScopePtr& scope);
  CallArgs eval_args(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  Value eval_slice(const Value& obj, const Expr& slice, const ScopePtr& scope);
  Value apply_filter_chain(const Expr* f, Value subject, const ScopePtr& scope);
  void exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out, Flow& flow);
  void exec_stmt_inner(const Stmt& s, const ScopePtr& scope, std::string& out, Flow& flow);
  // A new scope for a frame, with its statically-undefined names bound.
  static ScopePtr enter_frame(const ScopePtr& parent, const std::vector<std::string>& locals);

  std::shared_ptr<const DictData> globals_;
  RenderLimits limits_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
  // Scopes that macros were defined in: a macro holds its scope, which holds
  // the macro, so these are cleared when the render ends.
  std::vector<ScopePtr> macro_scopes_;
};

// Callables and objects visible to templates.
class BuiltinFunction : public Object {
 public:
  using Fn = Value (*)(Interpreter&, CallArgs&);
  BuiltinFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return "<built-in function " + name_ + ">"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override { return fn_(in, args); }

 private:
  std::string name_;
  Fn fn_;
};

// jinja2.utils.Namespace: the one mutable object (set ns.attr = value).
class Namespace : public Object {
 public:
  Namespace() : attrs_(std::make_shared<DictData>()) {}
  std::string type_name() const override { return "Namespace"; }
  std::string repr() const override;
  std::optional<Value> getattr(const std::string& name) const override;
  bool setattr(const std::string& name, const Value& v) override;
  int depth() const override { return attrs_->depth; }
  DictData& attrs() { return *attrs_; }

 private:
  std::shared_ptr<DictData> attrs_;
};

}  // namespace hearth::text::jinja
