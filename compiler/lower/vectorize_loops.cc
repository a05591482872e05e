#include "compiler/lower/vectorize_loops.h"

#include "compiler/arith/linear.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/util.h"
#include "compiler/lower/simplify.h"

namespace tessera {
namespace {

// Rewrites the body of one vectorized loop with var -> ramp(min, 1, lanes).
// A guard whose condition varies across lanes becomes a mask: the loads and
// stores it encloses are predicated on it (a loop tail runs as one masked
// vector, not as scalar code). Sets `failed` when the body cannot be
// vectorized.
class BodyVectorizer final : public IRMutator {
 public:
  BodyVectorizer(const Var& var, Expr ramp, int lanes) : var_(var), ramp_(std::move(ramp)), lanes_(lanes) {}
  bool failed = false;

 protected:
  using IRMutator::visit;

  Expr widen(const Expr& e) const { return e.dtype().lanes == lanes_ ? e : make_broadcast(e, lanes_); }

  Expr visit(const VarNode* op, const Expr& self) override { return op == var_.node() ? ramp_ : self; }
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
  Expr visit(const LoadNode* op, const Expr& self) override {
    Expr index = mutate(op->index);
    Expr pred = op->predicate.defined() ? mutate(op->predicate) : op->predicate;
    if (index.dtype().lanes == 1) {
      // One element for all lanes. Under a mask whose guard may decide
      // whether its index is valid, it is read when any lane is live.
      if (mask_.defined() && reads_mask_vars(op->index)) {
        Expr any = any_lane_live();
        if (!any.defined()) {
          failed = true;
          return self;
        }
        pred = pred.defined() ? make_binary(ExprKind::kAnd, pred, any) : any;
      }
      return index.same_as(op->index) && pred.same_as(op->predicate) ? self : make_load(op->buffer, index, pred);
    }
    if (index.dtype().lanes != lanes_) {  // an inner vector: under a mask, lanes do not line up
      if (mask_.defined()) failed = true;
      return index.same_as(op->index) && pred.same_as(op->predicate) ? self : make_load(op->buffer, index, pred);
    }
    return make_load(op->buffer, index, masked(pred));
  }
  Stmt visit(const StoreNode* op, const Stmt& self) override {
    Expr value = mutate(op->value), index = mutate(op->index);
    Expr pred = op->predicate.defined() ? mutate(op->predicate) : op->predicate;
    const bool unchanged = value.same_as(op->value) && index.same_as(op->index) && pred.same_as(op->predicate);
    if (unchanged && !mask_.defined()) return self;
    // Every lane must write its own element, under the mask if there is one.
    if (index.dtype().lanes != lanes_) {
      failed = true;
      return self;
    }
    return make_store(op->buffer, widen(value), index, masked(pred));
  }
  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (uses_var(op->min, var_.node()) || uses_var(op->extent, var_.node())) {
      failed = true;
      return self;
    }
    return IRMutator::visit(op, self);
  }
  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    if (!uses_var(op->cond, var_.node())) return IRMutator::visit(op, self);
    // A condition that varies across lanes cannot be a branch: without an
    // else, it masks the lanes of what it guards.
    if (op->else_case.defined()) {
      failed = true;
      return self;
    }
    const Expr outer_mask = mask_;
    mask_ = masked(widen(mutate(op->cond)));
    mask_conds_.push_back(op->cond);
    Stmt body = mutate(op->then_case);
    mask_ = outer_mask;
    mask_conds_.pop_back();
    return body;
  }
  Stmt visit(const AllocateNode* op, const Stmt& self) override {
    failed = true;
    return self;
  }

 private:
  // `pred` (widened to the lanes) and the current mask; undefined if neither.
  Expr masked(const Expr& pred) const {
    if (!pred.defined()) return mask_;
    Expr p = widen(pred);
    return mask_.defined() ? make_binary(ExprKind::kAnd, mask_, p) : p;
  }
  // A scalar condition true when some lane of the mask is live, or undefined
  // when that is not known exactly: one guard, a comparison linear in the
  // loop variable, so its live lanes are a range and the range is nonempty
  // when the first or the last lane is live.
  Expr any_lane_live() const {
    if (mask_conds_.size() != 1) return Expr();
    const Expr& c = mask_conds_[0];
    const ExprKind k = c.kind();
    if (k != ExprKind::kLT && k != ExprKind::kLE && k != ExprKind::kGT && k != ExprKind::kGE) return Expr();
    const auto* cmp = static_cast<const BinaryNode*>(c.get());
    for (const Expr& side : {cmp->a, cmp->b})
      for (const auto& [atom, coef] : arith::linear_form(side).terms)
        if (atom.kind() != ExprKind::kVar && uses_var(atom, var_.node())) return Expr();
    const Expr first = ramp_.as<RampNode>()->base;
    return make_binary(ExprKind::kOr, substitute(c, var_, first), substitute(c, var_, first + make_int(lanes_ - 1)));
  }
  bool reads_mask_vars(const Expr& e) const {
    return uses_any_var(e, [&](const VarNode* v) {
      for (const Expr& c : mask_conds_)
        if (uses_var(c, v)) return true;
      return false;
    });
  }

  Var var_;
  Expr ramp_;
  int lanes_;
  Expr mask_;                     // lanes live under the enclosing lane-varying guards
  std::vector<Expr> mask_conds_;  // the conditions of those guards
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
    std::vector<Stmt> pieces;
    int64_t offset = 0;
    for (int64_t piece : vector_pieces(lanes)) {
      const Expr first = simplify(op->min + make_int(offset));
      offset += piece;
      if (piece == 1) {
        pieces.push_back(substitute(body, op->var, first));
        continue;
      }
      BodyVectorizer v(op->var, make_ramp(first, make_int(1), static_cast<int>(piece)), static_cast<int>(piece));
      pieces.push_back(v(body));
      if (v.failed) return make_for(op->var, op->min, op->extent, LoopKind::kSerial, body);
    }
    return simplify(make_seq(std::move(pieces)));
  }

 private:
  // The vectors a loop of `lanes` runs as: one, or, when longer than 8 lanes
  // and not a power of two, its power-of-two parts, longest first (48: 32 +
  // 16). LLVM legalizes a vector of another length lane by lane where it
  // cannot split it evenly: a broadcast into 48 floats on AVX-512 was 36
  // inserts instead of one vbroadcastss, ten times a 1x1 conv's arithmetic.
  static std::vector<int64_t> vector_pieces(int64_t lanes) {
    if (lanes <= 8 || (lanes & (lanes - 1)) == 0) return {lanes};
    std::vector<int64_t> pieces;
    for (int64_t p = int64_t{1} << 62; p > 0; p >>= 1)
      if (lanes & p) pieces.push_back(p);
    return pieces;
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) {
  return LoopVectorizer()(s);
}

}  // namespace tessera
