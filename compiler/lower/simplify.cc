#include "compiler/lower/simplify.h"

#include <algorithm>
#include <optional>

#include "base/int_div.h"
#include "compiler/arith/linear.h"
#include "compiler/arith/prove.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/util.h"

namespace tessera {
namespace {

using arith::LinearForm;
using K = ExprKind;

bool is_index_like(DType t) {
  return t.is_integral() && t.is_scalar() && !t.is_bool();
}

// ---------------------------------------------------------------------------
// Rules for binary operators. A rule sees the already simplified operands and
// returns the rewritten expression, or nothing when it does not apply; the
// first rule that applies wins, and without one the node is rebuilt.

// The operand types a rule applies to (the type of the left operand).
enum class Operands : uint8_t {
  kScalar,       // any scalar
  kFloat,        // float scalars
  kIndex,        // integer scalars other than bool: index arithmetic
  kVector,       // any vector
  kIndexVector,  // integer vectors: ramps and broadcasts of indices
};

uint32_t operand_classes(DType t) {
  auto bit = [](Operands o) { return 1u << static_cast<unsigned>(o); };
  if (t.is_vector()) {
    const DType e = t.element_of();
    return bit(Operands::kVector) | (is_index_like(e) ? bit(Operands::kIndexVector) : 0);
  }
  return bit(Operands::kScalar) | (t.is_float() ? bit(Operands::kFloat) : 0) |
         (is_index_like(t) ? bit(Operands::kIndex) : 0);
}

// A set of operator kinds, one bit a kind.
static_assert(static_cast<unsigned>(ExprKind::kReduce) < 32, "kinds fit a uint32_t mask");
template <typename... Kinds>
constexpr uint32_t of(Kinds... k) {
  return ((1u << static_cast<unsigned>(k)) | ...);
}
constexpr uint32_t kAnyKind = ~0u;
constexpr uint32_t kComparisons = of(K::kEQ, K::kNE, K::kLT, K::kLE, K::kGT, K::kGE);

class Simplifier;

// What a rule sees: the operator, its simplified operands, and the simplifier
// (for the variable bounds and to simplify what the rule builds).
struct Match {
  Simplifier& s;
  ExprKind k;
  const Expr& a;
  const Expr& b;
  DType t;
};

struct Rule {
  Operands operands;
  uint32_t kinds;
  Expr (*rewrite)(const Match&);
};

class Simplifier final : public IRMutator {
 public:
  explicit Simplifier(BoundMap bounds) : bounds_(std::move(bounds)) {}

  using IRMutator::mutate;
  const BoundMap& bounds() const { return bounds_; }

 protected:
  using IRMutator::visit;

  Expr visit(const BinaryNode* op, const Expr& self) override;

  Expr visit(const NotNode* op, const Expr& self) override {
    Expr a = mutate(op->a);
    int64_t v;
    if (a.dtype().is_scalar() && is_const_int(a, &v)) return make_bool(!v);
    return a.same_as(op->a) ? self : make_not(a);
  }

  Expr visit(const SelectNode* op, const Expr& self) override {
    Expr c = mutate(op->cond);
    int64_t v;
    if (c.dtype().is_scalar() && is_const_int(c, &v)) return mutate(v ? op->true_value : op->false_value);
    Expr t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    return make_select(c, t, f);
  }

  Expr visit(const CastNode* op, const Expr& self) override {
    Expr v = mutate(op->value);
    int64_t i;
    double f;
    if (op->dtype.is_scalar()) {
      if (is_const_int(v, &i))
        return op->dtype.is_float() ? make_float(static_cast<double>(i), op->dtype) : make_int(i, op->dtype);
      if (is_const_float(v, &f) && op->dtype.is_float()) return make_float(round_to(f, op->dtype), op->dtype);
    }
    if (v.dtype() == op->dtype) return v;
    return v.same_as(op->value) ? self : make_cast(op->dtype, v);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    int64_t ext;
    if (is_const_int(extent, &ext) && ext <= 0) return make_seq({});
    if (is_const_int(extent, &ext) && ext == 1 && op->loop_kind != LoopKind::kParallel)
      return mutate(substitute(op->body, op->var, min));
    Interval im = bounds_of(min, bounds_), ie = bounds_of(extent, bounds_);
    Interval range{im.lo,
                   ie.hi == Interval::kPosInf ? Interval::kPosInf : arith::sat_add(arith::sat_add(im.hi, ie.hi), -1)};
    auto saved = bounds_.find(op->var.node());
    bounds_[op->var.node()] = range;
    Stmt body = mutate(op->body);
    if (saved == bounds_.end()) bounds_.erase(op->var.node());
    if (const auto* seq = body.as<SeqNode>(); seq && seq->stmts.empty()) return body;
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return self;
    return make_for(op->var, min, extent, op->loop_kind, body);
  }

  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    Expr c = mutate(op->cond);
    int64_t v;
    if (is_const_int(c, &v)) {
      if (v) return mutate(op->then_case);
      return op->else_case.defined() ? mutate(op->else_case) : make_seq({});
    }
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
    return make_if(c, t, e);
  }

 public:
  static double round_to(double v, DType t) { return t.bits == 32 ? static_cast<double>(static_cast<float>(v)) : v; }

 private:
  BoundMap bounds_;
};

// --- rewrites too long for one line of the table ----------------------------

Expr fold_ints(const Match& m) {
  int64_t x, y, r;
  if (!is_const_int(m.a, &x) || !is_const_int(m.b, &y) || !fold_int_binary(m.k, x, y, &r)) return Expr();
  return make_int(r, is_comparison(m.k) ? DType::boolean() : m.t);
}

Expr fold_floats(const Match& m) {
  double a, b, r;
  if (!is_const_float(m.a, &a) || !is_const_float(m.b, &b)) return Expr();
  switch (m.k) {
    case K::kAdd: r = a + b; break;
    case K::kSub: r = a - b; break;
    case K::kMul: r = a * b; break;
    case K::kDiv: r = a / b; break;
    case K::kMin: r = std::min(a, b); break;
    case K::kMax: r = std::max(a, b); break;
    case K::kLT: return make_bool(a < b);
    case K::kLE: return make_bool(a <= b);
    case K::kGT: return make_bool(a > b);
    case K::kGE: return make_bool(a >= b);
    case K::kEQ: return make_bool(a == b);
    case K::kNE: return make_bool(a != b);
    default: return Expr();
  }
  return make_float(Simplifier::round_to(r, m.t), m.t);
}

// c && x, c || x for a constant c: c decides the result, or drops out.
Expr logic_constant(const Match& m, const Expr& c, const Expr& x) {
  int64_t v;
  if (!is_const_int(c, &v)) return Expr();
  const bool is_and = m.k == K::kAnd;
  return (v != 0) == is_and ? x : make_bool(!is_and);
}

// The divisor when it is a constant > 0 (div and mod rules apply only then).
int64_t positive_divisor(const Match& m) {
  int64_t c;
  return is_const_int(m.b, &c) && c > 0 ? c : 0;
}

// a / c and a % c for a constant c > 1: a = c*q + r with the multiples of c
// in q and the rest (its constant in [0, c)) in r; when the bounds of r keep
// floor(r / c) constant, that constant is `whole`.
struct DivSplit {
  int64_t c = 0;
  LinearForm q, r;
  Expr rest;  // r as an expression
  std::optional<int64_t> whole;
};

std::optional<DivSplit> split_by_divisor(const Match& m) {
  DivSplit d;
  d.c = positive_divisor(m);
  if (d.c <= 1) return std::nullopt;
  LinearForm lin = arith::linear_form(m.a);
  for (const auto& [atom, coef] : lin.terms) {
    if (coef % d.c == 0)
      d.q.add_term(atom, coef / d.c);
    else
      d.r.add_term(atom, coef);
  }
  d.q.constant = floordiv(lin.constant, d.c);
  d.r.constant = floormod(lin.constant, d.c);
  d.rest = arith::to_expr(d.r, m.t);
  Interval ir = bounds_of(d.rest, m.s.bounds());
  if (ir.bounded() && floordiv(ir.lo, d.c) == floordiv(ir.hi, d.c)) d.whole = floordiv(ir.lo, d.c);
  return d;
}

// (c*q + r) / c -> q + r / c, and r / c a constant when the bounds of r fix it.
Expr div_split(const Match& m) {
  std::optional<DivSplit> d = split_by_divisor(m);
  if (!d) return Expr();
  if (d->whole)
    d->q.constant += *d->whole;
  else if (!d->r.terms.empty())
    d->q.add_term(make_binary(K::kDiv, d->rest, make_int(d->c, m.t)), 1);
  return arith::to_expr(d->q, m.t);
}

// (c*q + r) % c -> r % c, and r - c*k when the bounds put r in [c*k, c*k + c).
Expr mod_split(const Match& m) {
  std::optional<DivSplit> d = split_by_divisor(m);
  if (!d) return Expr();
  if (!d->whole) return make_binary(K::kMod, d->rest, make_int(d->c, m.t));
  d->r.constant -= *d->whole * d->c;
  return arith::to_expr(d->r, m.t);
}

// min(a, b) / max(a, b) -> the operand the bounds prove smaller / larger.
Expr min_max_by_bounds(const Match& m) {
  Interval ia = bounds_of(m.a, m.s.bounds()), ib = bounds_of(m.b, m.s.bounds());
  const bool is_min = m.k == K::kMin;
  if (arith::always_le(ia, ib)) return is_min ? m.a : m.b;
  if (arith::always_le(ib, ia)) return is_min ? m.b : m.a;
  return Expr();
}

Expr compare_by_bounds(const Match& m) {
  std::optional<bool> decided = arith::prove(m.k, m.a, m.b, m.s.bounds());
  return decided ? make_bool(*decided) : Expr();
}

const RampNode* ramp(const Expr& e) {
  return e.as<RampNode>();
}
const BroadcastNode* bcast(const Expr& e) {
  return e.as<BroadcastNode>();
}
int lanes(const Match& m) {
  return m.t.lanes;
}
Expr simp(const Match& m, const Expr& e) {
  return m.s.mutate(e);
}

Expr bcast_op_bcast(const Match& m) {
  const BroadcastNode *x = bcast(m.a), *y = bcast(m.b);
  return x && y ? make_broadcast(simp(m, binary(m.k, x->value, y->value)), lanes(m)) : Expr();
}

Expr ramp_op_bcast(const Match& m) {
  const RampNode* r = ramp(m.a);
  const BroadcastNode* x = bcast(m.b);
  return r && x ? make_ramp(simp(m, binary(m.k, r->base, x->value)), r->stride, lanes(m)) : Expr();
}

Expr bcast_add_ramp(const Match& m) {
  const BroadcastNode* x = bcast(m.a);
  const RampNode* r = ramp(m.b);
  return x && r ? make_ramp(simp(m, x->value + r->base), r->stride, lanes(m)) : Expr();
}

Expr ramp_op_ramp(const Match& m) {
  const RampNode *r = ramp(m.a), *q = ramp(m.b);
  if (!r || !q) return Expr();
  return make_ramp(simp(m, binary(m.k, r->base, q->base)), simp(m, binary(m.k, r->stride, q->stride)), lanes(m));
}

Expr ramp_mul_bcast(const Match& m) {
  const RampNode* r = ramp(m.a);
  const BroadcastNode* x = bcast(m.b);
  if (!r || !x) return Expr();
  return make_ramp(simp(m, r->base * x->value), simp(m, r->stride * x->value), lanes(m));
}

Expr bcast_mul_ramp(const Match& m) {
  const BroadcastNode* x = bcast(m.a);
  const RampNode* r = ramp(m.b);
  if (!x || !r) return Expr();
  return make_ramp(simp(m, x->value * r->base), simp(m, x->value * r->stride), lanes(m));
}

bool is_float(const Expr& e, double v) {
  double x;
  return is_const_float(e, &x) && x == v;
}

using M = const Match&;
using enum Operands;
using enum ExprKind;

// clang-format off
const Rule kRules[] = {
  // Constant folding.
  {kScalar, kAnyKind, fold_ints},                     // c1 op c2 -> c (integer / and % floor)
  {kFloat, kAnyKind, fold_floats},                    // c1 op c2 -> c (rounded to the type)

  // Vectors: broadcasts fold lane-wise, index ramps stay affine.
  {kVector, kAnyKind, bcast_op_bcast},                // bc(x) op bc(y) -> bc(x op y)
  {kIndexVector, of(kAdd, kSub), ramp_op_bcast},      // ramp(b, s) ± bc(x) -> ramp(b ± x, s)
  {kIndexVector, of(kAdd), bcast_add_ramp},           // bc(x) + ramp(b, s) -> ramp(x + b, s)
  {kIndexVector, of(kAdd, kSub), ramp_op_ramp},       // ramp(b, s) ± ramp(c, t) -> ramp(b ± c, s ± t)
  {kIndexVector, of(kMul), ramp_mul_bcast},           // ramp(b, s) * bc(x) -> ramp(b * x, s * x)
  {kIndexVector, of(kMul), bcast_mul_ramp},           // bc(x) * ramp(b, s) -> ramp(x * b, x * s)

  // Logic with a constant side.
  {kScalar, of(kAnd, kOr), [](M m) { return logic_constant(m, m.a, m.b); }},  // c && x, c || x -> x or c
  {kScalar, of(kAnd, kOr), [](M m) { return logic_constant(m, m.b, m.a); }},  // x && c, x || c -> x or c

  // Linear index arithmetic: sum of coef * atom + constant, like terms merged.
  {kIndex, of(kAdd, kSub, kMul), [](M m) { return arith::canonical(make_binary(m.k, m.a, m.b)); }},

  // Division and modulo by a constant c > 0 (floor semantics).
  {kIndex, of(kDiv), [](M m) { return positive_divisor(m) == 1 ? m.a : Expr(); }},              // x / 1 -> x
  {kIndex, of(kMod), [](M m) { return positive_divisor(m) == 1 ? make_int(0, m.t) : Expr(); }},  // x % 1 -> 0
  {kIndex, of(kDiv), div_split},                      // (c*q + r) / c -> q + r / c, r / c folded by bounds
  {kIndex, of(kMod), mod_split},                      // (c*q + r) % c -> r % c, folded by bounds

  // Min, max and comparisons decided by the bounds of the variables.
  {kIndex, of(kMin, kMax), min_max_by_bounds},        // min(a, b) -> a when a <= b over the bounds
  {kIndex, kComparisons, compare_by_bounds},          // a < b -> true when the range of a - b is < 0

  // Float identities.
  {kFloat, of(kMul), [](M m) { return is_float(m.b, 1.0) ? m.a : Expr(); }},        // x * 1 -> x
  {kFloat, of(kMul), [](M m) { return is_float(m.a, 1.0) ? m.b : Expr(); }},        // 1 * x -> x
  {kFloat, of(kAdd, kSub), [](M m) { return is_float(m.b, 0.0) ? m.a : Expr(); }},  // x ± 0 -> x
  {kFloat, of(kAdd), [](M m) { return is_float(m.a, 0.0) ? m.b : Expr(); }},        // 0 + x -> x
};
// clang-format on

Expr Simplifier::visit(const BinaryNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  const DType t = a.dtype();
  const uint32_t classes = operand_classes(t);
  const uint32_t kind_bit = 1u << static_cast<unsigned>(op->kind);
  const Match m{*this, op->kind, a, b, t};
  for (const Rule& rule : kRules) {
    if (!(rule.kinds & kind_bit) || !(classes & (1u << static_cast<unsigned>(rule.operands)))) continue;
    if (Expr out = rule.rewrite(m); out.defined()) return out;
  }
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return make_binary(op->kind, a, b);
}

}  // namespace

Expr simplify(const Expr& e, const BoundMap& bounds) {
  Simplifier s(bounds);
  return s.mutate(e);
}

Stmt simplify(const Stmt& st, const BoundMap& bounds) {
  Simplifier s(bounds);
  return s.mutate(st);
}

bool can_prove(const Expr& cond, const BoundMap& bounds) {
  return is_const_value(simplify(cond, bounds), 1);
}

}  // namespace tessera
