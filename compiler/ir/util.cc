#include "compiler/ir/util.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"

namespace tessera {
namespace {

class Substituter final : public IRMutator {
 public:
  explicit Substituter(const VarMap& vmap) : vmap_(vmap) {}

 protected:
  using IRMutator::visit;
  Expr visit(const VarNode* op, const Expr& self) override {
    auto it = vmap_.find(op);
    return it == vmap_.end() ? self : it->second;
  }
  // Rebuilt nodes fold when both operands became constants (unrolled copies).
  Expr visit(const BinaryNode* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return binary(op->kind, a, b);
  }

 private:
  const VarMap& vmap_;
};

class VarUseFinder final : public IRVisitor {
 public:
  explicit VarUseFinder(std::function<bool(const VarNode*)> pred) : pred_(std::move(pred)) {}
  bool found = false;

 protected:
  using IRVisitor::visit;
  void visit(const VarNode* op) override { found = found || pred_(op); }

 private:
  std::function<bool(const VarNode*)> pred_;
};

class FreeVarCollector final : public IRVisitor {
 public:
  std::vector<Var> vars;
  std::vector<Buffer> buffers;

 protected:
  using IRVisitor::visit;
  void visit(const VarNode* op) override {
    if (bound_.count(op) || seen_.count(op)) return;
    seen_.insert(op);
    vars.push_back(Var(op));
  }
  void visit(const ForNode* op) override {
    bound_.insert(op->var.node());
    IRVisitor::visit(op);
  }
  void visit(const LoadNode* op) override {
    add_buffer(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    add_buffer(op->buffer);
    IRVisitor::visit(op);
  }

 private:
  void add_buffer(const Buffer& b) {
    if (seen_.insert(b.get()).second) buffers.push_back(b);
  }
  std::unordered_set<const void*> bound_, seen_;
};

// Collects every read of one tensor.
class ReadCollector final : public IRVisitor {
 public:
  explicit ReadCollector(const TensorNode* t) : t_(t) {}
  std::vector<std::vector<Expr>> reads;

 protected:
  using IRVisitor::visit;
  void visit(const TensorReadNode* op) override {
    if (op->tensor.get() == t_) reads.push_back(op->indices);
    IRVisitor::visit(op);
  }

 private:
  const TensorNode* t_;
};

}  // namespace

Expr substitute(const Expr& e, const VarMap& vmap) {
  if (vmap.empty()) return e;
  Substituter sub(vmap);
  return sub(e);
}
Stmt substitute(const Stmt& s, const VarMap& vmap) {
  if (vmap.empty()) return s;
  Substituter sub(vmap);
  return sub(s);
}
Expr substitute(const Expr& e, const Var& var, const Expr& value) {
  return substitute(e, VarMap{{var.node(), value}});
}
Stmt substitute(const Stmt& s, const Var& var, const Expr& value) {
  return substitute(s, VarMap{{var.node(), value}});
}

bool uses_any_var(const Expr& e, const std::function<bool(const VarNode*)>& pred) {
  VarUseFinder f(pred);
  f(e);
  return f.found;
}
bool uses_var(const Expr& e, const VarNode* var) {
  return uses_any_var(e, [var](const VarNode* v) { return v == var; });
}
bool uses_var(const Stmt& s, const VarNode* var) {
  VarUseFinder f([var](const VarNode* v) { return v == var; });
  f(s);
  return f.found;
}

std::vector<Var> free_vars(const Stmt& s) {
  FreeVarCollector c;
  c(s);
  return c.vars;
}

std::vector<Buffer> buffers_used(const Stmt& s) {
  FreeVarCollector c;
  c(s);
  return c.buffers;
}

std::vector<std::vector<Expr>> reads_of(const Expr& e, const TensorNode* tensor) {
  ReadCollector rc(tensor);
  rc(e);
  return std::move(rc.reads);
}

}  // namespace tessera
