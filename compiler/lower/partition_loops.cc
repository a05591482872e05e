#include "compiler/lower/partition_loops.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "compiler/arith/interval.h"
#include "compiler/arith/linear.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/util.h"
#include "compiler/lower/simplify.h"

namespace tessera {
namespace {

using arith::Interval;

// A guard of loop v and the range of v on which it holds for every value of
// the loops inside: [lower, upper), either end undefined when unbounded.
struct GuardRange {
  const IfThenElseNode* guard;
  Expr lower, upper;
};

// The guards in a loop's body that are linear in its variable.
class GuardCollector final : public IRVisitor {
 public:
  explicit GuardCollector(const VarNode* v) : v_(v) {}
  std::vector<GuardRange> ranges;
  std::unordered_map<const IfThenElseNode*, int> seen;  // a guard reached twice is left alone

 protected:
  using IRVisitor::visit;
  void visit(const ForNode* op) override {
    int64_t min = 0, extent = 0;
    const bool known = is_const_int(op->min, &min) && is_const_int(op->extent, &extent) && extent > 0;
    inner_[op->var.node()] = known ? Interval{min, min + extent - 1} : Interval{};
    IRVisitor::visit(op);
    inner_.erase(op->var.node());
  }
  void visit(const IfThenElseNode* op) override {
    if (++seen[op] == 1)
      if (std::optional<GuardRange> r = range_of(op)) ranges.push_back(*r);
    IRVisitor::visit(op);
  }

 private:
  // `cond` as sign*(a - b) < bound: LT and LE with sign +1, GT and GE with -1.
  std::optional<GuardRange> range_of(const IfThenElseNode* op) const {
    const ExprKind k = op->cond.kind();
    if (k != ExprKind::kLT && k != ExprKind::kLE && k != ExprKind::kGT && k != ExprKind::kGE) return std::nullopt;
    const auto* cmp = static_cast<const BinaryNode*>(op->cond.get());
    if (cmp->a.dtype() != kIndexType || cmp->b.dtype() != kIndexType) return std::nullopt;
    const int64_t sign = k == ExprKind::kLT || k == ExprKind::kLE ? 1 : -1;
    const int64_t bound = k == ExprKind::kLT || k == ExprKind::kGT ? 0 : 1;
    const arith::LinearForm form = arith::linear_form(cmp->a - cmp->b);
    // sign*form = coef*v + inner + outer + constant.
    int64_t coef = 0;
    Interval inner = Interval::point(sign * form.constant);
    arith::LinearForm outer;
    for (const auto& [atom, c] : form.terms) {
      if (c == 0) continue;
      if (const auto* var = atom.as<VarNode>(); var == v_) {
        coef += sign * c;
        continue;
      }
      if (uses_var(atom, v_)) return std::nullopt;
      const bool reads_inner = uses_any_var(atom, [&](const VarNode* x) { return inner_.count(x) > 0; });
      const bool reads_outer = uses_any_var(atom, [&](const VarNode* x) { return inner_.count(x) == 0; });
      if (reads_inner && reads_outer) return std::nullopt;
      if (!reads_inner) {
        outer.add_term(atom, sign * c);
        continue;
      }
      Interval r = arith::scale(arith::bounds_of(atom, inner_), sign * c);
      if (!r.bounded()) return std::nullopt;
      inner = arith::add(inner, r);
    }
    if (coef == 0 || !inner.bounded()) return std::nullopt;
    const Expr rest = arith::to_expr(outer, kIndexType);
    // coef*v + inner + rest < bound for every inner value:
    if (coef > 0)  // v <= floor((bound - inner.hi - 1 - rest) / coef)
      return GuardRange{op, Expr(), (make_int(bound - inner.hi - 1) - rest) / make_int(coef) + make_int(1)};
    // -coef*v > inner.hi + rest - bound
    return GuardRange{op, (rest + make_int(inner.hi - bound)) / make_int(-coef) + make_int(1), Expr()};
  }

  const VarNode* v_;
  arith::BoundMap inner_;
};

// The body with the given guards replaced by what they guard.
class GuardDropper final : public IRMutator {
 public:
  explicit GuardDropper(std::unordered_set<const IfThenElseNode*> guards) : guards_(std::move(guards)) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    if (guards_.count(op)) return mutate(op->then_case);
    return IRMutator::visit(op, self);
  }

 private:
  std::unordered_set<const IfThenElseNode*> guards_;
};

class Partitioner final : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op, const Stmt& self) override {
    // Inside a vectorized loop, guards become lane masks: a loop whose
    // bounds varied across lanes would keep the loop from vectorizing.
    if (op->loop_kind == LoopKind::kVectorized) {
      ++vector_depth_;
      Stmt s = IRMutator::visit(op, self);
      --vector_depth_;
      return s;
    }
    if (op->loop_kind == LoopKind::kUnrolled || vector_depth_ > 0) return IRMutator::visit(op, self);
    GuardCollector collector(op->var.node());
    collector(op->body);
    Expr lower, upper;
    std::unordered_set<const IfThenElseNode*> guards;
    for (const GuardRange& r : collector.ranges) {
      if (collector.seen[r.guard] != 1) continue;
      guards.insert(r.guard);
      if (r.lower.defined()) lower = lower.defined() ? max(lower, r.lower) : r.lower;
      if (r.upper.defined()) upper = upper.defined() ? min(upper, r.upper) : r.upper;
    }
    if (guards.empty()) return IRMutator::visit(op, self);

    if (op->loop_kind == LoopKind::kParallel) return partition_inside(op, lower, upper, std::move(guards));
    const Expr begin = op->min, end = op->min + op->extent;
    const Expr mid_begin = lower.defined() ? simplify(min(max(lower, begin), end)) : begin;
    const Expr mid_end = upper.defined() ? simplify(min(max(upper, mid_begin), end)) : end;
    std::vector<Stmt> parts;
    // Head and tail are copies of the loop with their own variables. Loops
    // inside a remainder are partitioned once more (the tail of an outer k
    // block is half the work of a 499-deep product), not deeper: every level
    // multiplies the copies of an unrolled micro-kernel (builds of seconds).
    auto copy = [&](const char* suffix, const Expr& from, const Expr& to) {
      Var v(op->var.name() + suffix, op->var.dtype());
      Stmt body = substitute(op->body, op->var, v);
      if (remainder_depth_ < kMaxRemainderDepth) {
        ++remainder_depth_;
        body = mutate(body);
        --remainder_depth_;
      }
      parts.push_back(make_for(v, from, simplify(to - from), op->loop_kind, body));
    };
    if (lower.defined()) copy(".head", begin, mid_begin);
    parts.push_back(make_for(op->var, mid_begin, simplify(mid_end - mid_begin), op->loop_kind,
                             mutate(GuardDropper(std::move(guards))(op->body))));
    if (upper.defined()) copy(".tail", mid_end, end);
    return make_seq(std::move(parts));
  }

 private:
  // A parallel loop stays one loop, one launch: each task tests whether it
  // is a guard-free one (`lower <= v < upper`) and runs the body without
  // guards, or with them. Split into a middle and a tail loop, it was two
  // launches, the tail's alone on one thread after the middle's (997 rows in
  // blocks of 256 on 2 cores: 3 rounds, not 2).
  Stmt partition_inside(const ForNode* op, const Expr& lower, const Expr& upper,
                        std::unordered_set<const IfThenElseNode*> guards) {
    const Expr v = op->var;
    Expr whole;
    if (lower.defined()) whole = v >= simplify(lower);
    if (upper.defined()) whole = whole.defined() ? (whole && v < simplify(upper)) : v < simplify(upper);
    Stmt middle = mutate(GuardDropper(std::move(guards))(op->body));
    Stmt remainder = op->body;
    if (remainder_depth_ < kMaxRemainderDepth) {
      ++remainder_depth_;
      remainder = mutate(remainder);
      --remainder_depth_;
    }
    return make_for(op->var, op->min, op->extent, op->loop_kind, make_if(whole, middle, remainder));
  }

  static constexpr int kMaxRemainderDepth = 1;
  int vector_depth_ = 0;
  int remainder_depth_ = 0;  // remainders (heads, tails) enclosing the loop being visited
};

}  // namespace

Stmt partition_loops(const Stmt& s) {
  return simplify(Partitioner()(s));
}

}  // namespace tessera
