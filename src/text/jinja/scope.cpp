#include "text/jinja/scope.h"

#include <map>

namespace hearth::text::jinja {

namespace {

enum class Load { Param, Resolve, Alias, Undefined };

struct Symbols {
  const Symbols* parent = nullptr;
  std::map<std::string, Load> refs;

  bool has_ref(const std::string& n) const {
    for (const Symbols* s = this; s; s = s->parent)
      if (s->refs.count(n)) return true;
    return false;
  }
  void load(const std::string& n) {
    if (!has_ref(n)) refs[n] = Load::Resolve;
  }
  void store(const std::string& n) {
    if (refs.count(n)) return;
    refs[n] = parent && parent->has_ref(n) ? Load::Alias : Load::Undefined;
  }
};

struct Frame {
  Body* body;
  std::vector<std::string> params;
  std::vector<std::string>* out;
};

void loads(const Expr* e, Symbols& sym) {
  if (!e) return;
  if (e->kind == ExprKind::Name) sym.load(e->name);
  if (e->kind == ExprKind::NSRef) sym.load(e->name);
  loads(e->a.get(), sym);
  loads(e->b.get(), sym);
  loads(e->c.get(), sym);
  loads(e->star.get(), sym);
  loads(e->dstar.get(), sym);
  for (const auto& x : e->items) loads(x.get(), sym);
  for (const auto& kv : e->kwargs) loads(kv.second.get(), sym);
}

void stores(const Expr& target, Symbols& sym) {
  if (target.kind == ExprKind::Name) sym.store(target.name);
  else if (target.kind == ExprKind::NSRef) sym.load(target.name);
  else
    for (const auto& x : target.items) stores(*x, sym);
}

void target_names(const Expr& target, std::vector<std::string>& out) {
  if (target.kind == ExprKind::Name) out.push_back(target.name);
  for (const auto& x : target.items) target_names(*x, out);
}

void visit(Stmt& s, Symbols& sym, std::vector<Frame>& nested);

void visit_body(Body& body, Symbols& sym, std::vector<Frame>& nested) {
  for (auto& s : body) visit(*s, sym, nested);
}

void visit(Stmt& s, Symbols& sym, std::vector<Frame>& nested) {
  switch (s.kind) {
    case StmtKind::Text: case StmtKind::Break: case StmtKind::Continue: return;
    case StmtKind::Output: loads(s.expr.get(), sym); return;
    case StmtKind::If: {
      loads(s.expr.get(), sym);
      // A name first set inside a branch is only conditionally set: jinja2
      // resolves it from outside first (its empty elif branch makes even
      // if/else count as partial).
      for (Body* branch : {&s.body, &s.else_body}) {
        Symbols copy = sym;
        visit_body(*branch, copy, nested);
        for (const auto& [name, load] : copy.refs) {
          if (sym.refs.count(name)) continue;
          sym.refs[name] = load != Load::Undefined ? load
                           : sym.parent && sym.parent->has_ref(name) ? Load::Alias
                                                                     : Load::Resolve;
        }
      }
      return;
    }
    case StmtKind::For: {
      loads(s.expr.get(), sym);
      std::vector<std::string> params{"loop"};
      target_names(*s.target, params);
      nested.push_back({&s.body, params, &s.frame_locals});
      if (!s.else_body.empty()) nested.push_back({&s.else_body, {}, &s.else_locals});
      return;
    }
    case StmtKind::Set:
      loads(s.expr.get(), sym);
      stores(*s.target, sym);
      return;
    case StmtKind::SetBlock:
      loads(s.filter.get(), sym);
      stores(*s.target, sym);
      nested.push_back({&s.body, {}, &s.frame_locals});
      return;
    case StmtKind::Macro: {
      sym.store(s.text);
      std::vector<std::string> params = s.params;
      params.insert(params.end(), {"varargs", "kwargs", "caller"});
      nested.push_back({&s.body, params, &s.frame_locals});
      return;
    }
    case StmtKind::CallBlock: {
      loads(s.expr.get(), sym);
      std::vector<std::string> params = s.params;
      params.insert(params.end(), {"varargs", "kwargs"});
      nested.push_back({&s.body, params, &s.frame_locals});
      return;
    }
    case StmtKind::FilterBlock:
      loads(s.filter.get(), sym);
      nested.push_back({&s.body, {}, &s.frame_locals});
      return;
    case StmtKind::With:
      for (const auto& d : s.defaults) loads(d.get(), sym);
      nested.push_back({&s.body, s.params, &s.frame_locals});
      return;
    case StmtKind::Generation: nested.push_back({&s.body, {}, &s.frame_locals}); return;
  }
}

// Analyzes one frame completely, then the frames nested in it (which see
// the whole of this frame's symbols, as in jinja2).
void analyze(Body& body, const std::vector<std::string>& params, const Symbols* parent,
             std::vector<std::string>& out) {
  Symbols sym;
  sym.parent = parent;
  for (const auto& p : params) sym.refs[p] = Load::Param;
  std::vector<Frame> nested;
  visit_body(body, sym, nested);
  out.clear();
  for (const auto& [name, load] : sym.refs)
    if (load == Load::Undefined) out.push_back(name);
  for (auto& f : nested) analyze(*f.body, f.params, &sym, *f.out);
}

}  // namespace

std::vector<std::string> analyze_frames(Body& body) {
  std::vector<std::string> root;
  analyze(body, {}, nullptr, root);
  return root;
}

}  // namespace hearth::text::jinja
