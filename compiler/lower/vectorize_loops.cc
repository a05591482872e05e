#include "compiler/lower/vectorize_loops.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/util.h"
#include "compiler/lower/simplify.h"

namespace tessera {
namespace {

// Rewrites the body of one vectorized loop with var -> ramp(min, 1, lanes).
// Sets `failed` when the body cannot be vectorized.
class BodyVectorizer final : public IRMutator {
 public:
  BodyVectorizer(const Var& var, Expr ramp, int lanes) : var_(var), ramp_(std::move(ramp)), lanes_(lanes) {}
  bool failed = false;

 protected:
  using IRMutator::visit;

  Expr widen(const Expr& e) const { return e.dtype().lanes == lanes_ ? e : make_broadcast(e, lanes_); }

  Expr visit(const VarNode* op, const Expr& self) override {
    return op == var_.node() ? ramp_ : self;
  }
  Expr visit(const BinaryNode* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    if (a.dtype().lanes != b.dtype().lanes) {
      a = widen(a);
      b = widen(b);
    }
    return make_binary(op->kind, a, b);
  }
  Expr visit(const SelectNode* op, const Expr& self) override {
    Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    int lanes = std::max({c.dtype().lanes, t.dtype().lanes, f.dtype().lanes});
    if (lanes > 1) {
      t = widen(t);
      f = widen(f);
      if (c.dtype().lanes != lanes) c = widen(c);
    }
    return make_select(c, t, f);
  }
  Expr visit(const CallNode* op, const Expr& self) override {
    std::vector<Expr> args;
    bool changed = false, vector = false;
    for (const Expr& a : op->args) {
      args.push_back(mutate(a));
      changed |= !args.back().same_as(a);
      vector |= args.back().dtype().lanes > 1;
    }
    if (!changed) return self;
    if (vector)
      for (Expr& a : args) a = widen(a);
    return make_call(op->op, std::move(args));
  }
  Expr visit(const RampNode* op, const Expr& self) override {
    if (uses_var(self, var_.node())) failed = true;  // a vector of vectors
    return self;
  }
  Expr visit(const BroadcastNode* op, const Expr& self) override {
    if (uses_var(self, var_.node())) failed = true;
    return self;
  }
  Stmt visit(const StoreNode* op, const Stmt& self) override {
    Expr value = mutate(op->value), index = mutate(op->index);
    if (value.same_as(op->value) && index.same_as(op->index)) return self;
    // Every lane must write its own element.
    if (index.dtype().lanes == 1) {
      failed = true;
      return self;
    }
    return make_store(op->buffer, widen(value), index);
  }
  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (uses_var(op->min, var_.node()) || uses_var(op->extent, var_.node())) failed = true;
    return IRMutator::visit(op, self);
  }
  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    // A condition that varies across lanes cannot be a branch; give up
    // before building an IfThenElse on a vector condition.
    if (uses_var(op->cond, var_.node())) {
      failed = true;
      return self;
    }
    return IRMutator::visit(op, self);
  }
  Stmt visit(const AllocateNode* op, const Stmt& self) override {
    failed = true;
    return self;
  }

 private:
  Var var_;
  Expr ramp_;
  int lanes_;
};

class LoopVectorizer final : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);  // inner vectorized loops first
    if (op->loop_kind != LoopKind::kVectorized) {
      return body.same_as(op->body) ? self : make_for(op->var, op->min, op->extent, op->loop_kind, body);
    }
    int64_t lanes;
    if (!is_const_int(op->extent, &lanes) || lanes < 2)
      return make_for(op->var, op->min, op->extent, LoopKind::kSerial, body);
    BodyVectorizer v(op->var, make_ramp(op->min, make_int(1), static_cast<int>(lanes)), static_cast<int>(lanes));
    Stmt vectorized = v(body);
    if (v.failed) return make_for(op->var, op->min, op->extent, LoopKind::kSerial, body);
    return simplify(vectorized);
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) { return LoopVectorizer()(s); }

}  // namespace tessera
