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

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case ExprKind::kIntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::kFloatImm: return a.as<FloatImmNode>()->value == b.as<FloatImmNode>()->value;
    case ExprKind::kVar: return false;  // distinct nodes are distinct variables
    case ExprKind::kAdd: case ExprKind::kSub: case ExprKind::kMul: case ExprKind::kDiv:
    case ExprKind::kMod: case ExprKind::kMin: case ExprKind::kMax: case ExprKind::kEQ:
    case ExprKind::kNE: case ExprKind::kLT: case ExprKind::kLE: case ExprKind::kGT:
    case ExprKind::kGE: case ExprKind::kAnd: case ExprKind::kOr: {
      const auto* x = static_cast<const BinaryNode*>(a.get());
      const auto* y = static_cast<const BinaryNode*>(b.get());
      return structural_equal(x->a, y->a) && structural_equal(x->b, y->b);
    }
    case ExprKind::kNot: return structural_equal(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case ExprKind::kSelect: {
      const auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return structural_equal(x->cond, y->cond) && structural_equal(x->true_value, y->true_value) &&
             structural_equal(x->false_value, y->false_value);
    }
    case ExprKind::kCast: return structural_equal(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::kCall: {
      const auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      if (x->op != y->op || x->args.size() != y->args.size()) return false;
      for (size_t i = 0; i < x->args.size(); ++i)
        if (!structural_equal(x->args[i], y->args[i])) return false;
      return true;
    }
    case ExprKind::kLoad: {
      const auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
      return x->buffer == y->buffer && structural_equal(x->index, y->index);
    }
    case ExprKind::kRamp: {
      const auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      return x->lanes == y->lanes && structural_equal(x->base, y->base) &&
             structural_equal(x->stride, y->stride);
    }
    case ExprKind::kBroadcast:
      return structural_equal(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    case ExprKind::kTensorRead: {
      const auto *x = a.as<TensorReadNode>(), *y = b.as<TensorReadNode>();
      if (x->tensor != y->tensor) return false;
      for (size_t i = 0; i < x->indices.size(); ++i)
        if (!structural_equal(x->indices[i], y->indices[i])) return false;
      return true;
    }
    case ExprKind::kReduce: {
      const auto *x = a.as<ReduceNode>(), *y = b.as<ReduceNode>();
      return x->op == y->op && x->axes == y->axes && structural_equal(x->source, y->source);
    }
  }
  return false;
}

}  // namespace tessera
