#include "compiler/lower/simplify.h"

#include <algorithm>
#include <cmath>

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/util.h"

namespace tessera {
namespace {

constexpr int64_t kNegInf = Interval::kNegInf;
constexpr int64_t kPosInf = Interval::kPosInf;

int64_t sat_add(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return (a == kPosInf || b == kPosInf) ? kPosInf : kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kPosInf : kNegInf;
  return r;
}

int64_t sat_neg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}

int64_t sat_mul(int64_t a, int64_t c) {
  if (c == 0 || a == 0) return 0;
  bool neg = (a < 0) != (c < 0);
  if (a == kNegInf || a == kPosInf || c == kNegInf || c == kPosInf) return neg ? kNegInf : kPosInf;
  int64_t r;
  if (__builtin_mul_overflow(a, c, &r)) return neg ? kNegInf : kPosInf;
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == kNegInf || a == kPosInf) return (a == kPosInf) == (b > 0) ? kPosInf : kNegInf;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Interval scale(Interval x, int64_t c) {
  int64_t a = sat_mul(x.lo, c), b = sat_mul(x.hi, c);
  return c >= 0 ? Interval{a, b} : Interval{b, a};
}

bool is_index_like(DType t) { return t.is_integral() && t.is_scalar() && !t.is_bool(); }

// ---------------------------------------------------------------------------
// Linear forms: sum(coef * atom) + constant, for integer index arithmetic.

struct Linear {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  void add_term(const Expr& atom, int64_t coef) {
    if (coef == 0) return;
    for (auto& t : terms) {
      if (t.first.same_as(atom) || structural_equal(t.first, atom)) {
        t.second += coef;
        return;
      }
    }
    terms.emplace_back(atom, coef);
  }
  void add(const Linear& o, int64_t scale_by) {
    for (const auto& t : o.terms) add_term(t.first, t.second * scale_by);
    constant += o.constant * scale_by;
  }
};

Linear to_linear(const Expr& e) {
  Linear lin;
  int64_t c;
  if (is_const_int(e, &c)) {
    lin.constant = c;
    return lin;
  }
  if (e.kind() == ExprKind::kAdd || e.kind() == ExprKind::kSub) {
    const auto* b = static_cast<const BinaryNode*>(e.get());
    lin = to_linear(b->a);
    lin.add(to_linear(b->b), e.kind() == ExprKind::kAdd ? 1 : -1);
    return lin;
  }
  if (e.kind() == ExprKind::kMul) {
    const auto* b = static_cast<const BinaryNode*>(e.get());
    if (is_const_int(b->b, &c)) {
      lin.add(to_linear(b->a), c);
      return lin;
    }
    if (is_const_int(b->a, &c)) {
      lin.add(to_linear(b->b), c);
      return lin;
    }
  }
  lin.add_term(e, 1);
  return lin;
}

Expr from_linear(const Linear& lin, DType t) {
  Expr pos, neg;
  for (const auto& [atom, coef] : lin.terms) {
    if (coef == 0) continue;
    int64_t mag = coef > 0 ? coef : -coef;
    Expr term = mag == 1 ? atom : make_binary(ExprKind::kMul, atom, make_int(mag, t));
    Expr& side = coef > 0 ? pos : neg;
    side = side.defined() ? make_binary(ExprKind::kAdd, side, term) : term;
  }
  Expr result = pos;
  if (neg.defined()) result = result.defined() ? make_binary(ExprKind::kSub, result, neg)
                                               : make_binary(ExprKind::kSub, make_int(0, t), neg);
  if (!result.defined()) return make_int(lin.constant, t);
  if (lin.constant > 0) result = make_binary(ExprKind::kAdd, result, make_int(lin.constant, t));
  if (lin.constant < 0) result = make_binary(ExprKind::kSub, result, make_int(-lin.constant, t));
  return result;
}

// ---------------------------------------------------------------------------

class Simplifier final : public IRMutator {
 public:
  explicit Simplifier(BoundMap bounds) : bounds_(std::move(bounds)) {}

  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const BinaryNode* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DType t = a.dtype();
    ExprKind k = op->kind;
    int64_t x, y, r;
    double fx, fy;
    // Both integer constants: fold.
    if (t.is_scalar() && is_const_int(a, &x) && is_const_int(b, &y) && fold_int_binary(k, x, y, &r))
      return make_int(r, is_comparison(k) ? DType::boolean() : t);
    if (t.is_float() && t.is_scalar() && is_const_float(a, &fx) && is_const_float(b, &fy)) {
      if (auto folded = fold_float(k, fx, fy, t); folded.defined()) return folded;
    }
    if (t.is_vector()) return vector_binary(k, a, b, op, self);
    if (k == ExprKind::kAnd || k == ExprKind::kOr) return logic(k, a, b);
    if (is_index_like(t)) {
      switch (k) {
        case ExprKind::kAdd: case ExprKind::kSub: case ExprKind::kMul: {
          Expr e = make_binary(k, a, b);
          return from_linear(to_linear(e), t);
        }
        case ExprKind::kDiv: case ExprKind::kMod:
          if (is_const_int(b, &y) && y > 0) return div_mod(k, a, y, t);
          break;
        case ExprKind::kMin: case ExprKind::kMax: {
          Interval ia = bounds_of(a, bounds_), ib = bounds_of(b, bounds_);
          bool a_le_b = ia.hi <= ib.lo, b_le_a = ib.hi <= ia.lo;
          if (k == ExprKind::kMin && a_le_b) return a;
          if (k == ExprKind::kMin && b_le_a) return b;
          if (k == ExprKind::kMax && a_le_b) return b;
          if (k == ExprKind::kMax && b_le_a) return a;
          break;
        }
        default:
          if (is_comparison(k)) return compare(k, a, b);
          break;
      }
    } else if (t.is_float()) {
      if (k == ExprKind::kMul && (is_const_float(b, &fy) && fy == 1.0)) return a;
      if (k == ExprKind::kMul && (is_const_float(a, &fx) && fx == 1.0)) return b;
      if ((k == ExprKind::kAdd || k == ExprKind::kSub) && is_const_float(b, &fy) && fy == 0.0) return a;
      if (k == ExprKind::kAdd && is_const_float(a, &fx) && fx == 0.0) return b;
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return make_binary(k, a, b);
  }

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
      if (is_const_int(v, &i)) return op->dtype.is_float() ? make_float(static_cast<double>(i), op->dtype)
                                                            : make_int(i, op->dtype);
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
    Interval range{im.lo, ie.hi == kPosInf ? kPosInf : sat_add(sat_add(im.hi, ie.hi), -1)};
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

 private:
  static double round_to(double v, DType t) {
    return t.bits == 32 ? static_cast<double>(static_cast<float>(v)) : v;
  }

  Expr fold_float(ExprKind k, double a, double b, DType t) {
    double r;
    switch (k) {
      case ExprKind::kAdd: r = a + b; break;
      case ExprKind::kSub: r = a - b; break;
      case ExprKind::kMul: r = a * b; break;
      case ExprKind::kDiv: r = a / b; break;
      case ExprKind::kMin: r = std::min(a, b); break;
      case ExprKind::kMax: r = std::max(a, b); break;
      case ExprKind::kLT: return make_bool(a < b);
      case ExprKind::kLE: return make_bool(a <= b);
      case ExprKind::kGT: return make_bool(a > b);
      case ExprKind::kGE: return make_bool(a >= b);
      case ExprKind::kEQ: return make_bool(a == b);
      case ExprKind::kNE: return make_bool(a != b);
      default: return Expr();
    }
    return make_float(round_to(r, t), t);
  }

  Expr logic(ExprKind k, const Expr& a, const Expr& b) {
    int64_t v;
    bool is_and = k == ExprKind::kAnd;
    if (is_const_int(a, &v)) return (v != 0) == is_and ? b : make_bool(!is_and);
    if (is_const_int(b, &v)) return (v != 0) == is_and ? a : make_bool(!is_and);
    return make_binary(k, a, b);
  }

  // a / c and a % c for a constant c > 0: split a = c*q + r and decide r by bounds.
  Expr div_mod(ExprKind k, const Expr& a, int64_t c, DType t) {
    if (c == 1) return k == ExprKind::kDiv ? a : make_int(0, t);
    Linear lin = to_linear(a), q, r;
    for (const auto& [atom, coef] : lin.terms) {
      if (coef % c == 0) q.add_term(atom, coef / c);
      else r.add_term(atom, coef);
    }
    q.constant = floor_div(lin.constant, c);
    r.constant = lin.constant - q.constant * c;
    Expr rest = from_linear(r, t);
    Interval ir = bounds_of(rest, bounds_);
    bool decided = ir.bounded() && floor_div(ir.lo, c) == floor_div(ir.hi, c);
    if (k == ExprKind::kDiv) {
      if (decided) {
        q.constant += floor_div(ir.lo, c);
        return from_linear(q, t);
      }
      if (r.terms.empty()) return from_linear(q, t);
      q.add_term(make_binary(ExprKind::kDiv, rest, make_int(c, t)), 1);
      return from_linear(q, t);
    }
    if (decided) {
      r.constant -= floor_div(ir.lo, c) * c;
      return from_linear(r, t);
    }
    return make_binary(ExprKind::kMod, rest, make_int(c, t));
  }

  Expr compare(ExprKind k, const Expr& a, const Expr& b) {
    DType t = a.dtype();
    Expr diff = from_linear(to_linear(make_binary(ExprKind::kSub, a, b)), t);
    Interval d = bounds_of(diff, bounds_);
    auto decide = [&](bool always, bool never) -> Expr {
      if (always) return make_bool(true);
      if (never) return make_bool(false);
      return Expr();
    };
    Expr decided;
    switch (k) {
      case ExprKind::kLT: decided = decide(d.hi < 0, d.lo >= 0); break;
      case ExprKind::kLE: decided = decide(d.hi <= 0, d.lo > 0); break;
      case ExprKind::kGT: decided = decide(d.lo > 0, d.hi <= 0); break;
      case ExprKind::kGE: decided = decide(d.lo >= 0, d.hi < 0); break;
      case ExprKind::kEQ: decided = decide(d.is_point() && d.lo == 0, d.lo > 0 || d.hi < 0); break;
      case ExprKind::kNE: decided = decide(d.lo > 0 || d.hi < 0, d.is_point() && d.lo == 0); break;
      default: break;
    }
    return decided.defined() ? decided : make_binary(k, a, b);
  }

  // Ramp and broadcast arithmetic keeps vector index expressions affine.
  Expr vector_binary(ExprKind k, const Expr& a, const Expr& b, const BinaryNode* op, const Expr& self) {
    const auto* ra = a.as<RampNode>();
    const auto* rb = b.as<RampNode>();
    const auto* ba = a.as<BroadcastNode>();
    const auto* bb = b.as<BroadcastNode>();
    int lanes = a.dtype().lanes;
    auto s = [this](Expr e) { return mutate(e); };
    if (ba && bb) return make_broadcast(s(binary(k, ba->value, bb->value)), lanes);
    if (is_index_like(a.dtype().element_of())) {
      if (k == ExprKind::kAdd || k == ExprKind::kSub) {
        if (ra && bb) return make_ramp(s(binary(k, ra->base, bb->value)), ra->stride, lanes);
        if (ba && rb && k == ExprKind::kAdd) return make_ramp(s(ba->value + rb->base), rb->stride, lanes);
        if (ra && rb) return make_ramp(s(binary(k, ra->base, rb->base)), s(binary(k, ra->stride, rb->stride)), lanes);
      }
      if (k == ExprKind::kMul) {
        if (ra && bb) return make_ramp(s(ra->base * bb->value), s(ra->stride * bb->value), lanes);
        if (ba && rb) return make_ramp(s(ba->value * rb->base), s(ba->value * rb->stride), lanes);
      }
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return make_binary(k, a, b);
  }

  BoundMap bounds_;
};

}  // namespace

Interval bounds_of(const Expr& e, const BoundMap& bounds) {
  int64_t c;
  if (is_const_int(e, &c)) return Interval::point(c);
  if (!is_index_like(e.dtype())) {
    if (e.dtype().is_bool()) return {0, 1};
    return {};
  }
  switch (e.kind()) {
    case ExprKind::kVar: {
      auto it = bounds.find(e.as<VarNode>());
      return it == bounds.end() ? Interval{} : it->second;
    }
    case ExprKind::kAdd: case ExprKind::kSub: case ExprKind::kMul: case ExprKind::kDiv:
    case ExprKind::kMod: case ExprKind::kMin: case ExprKind::kMax: {
      const auto* n = static_cast<const BinaryNode*>(e.get());
      Interval a = bounds_of(n->a, bounds), b = bounds_of(n->b, bounds);
      switch (e.kind()) {
        case ExprKind::kAdd: return {sat_add(a.lo, b.lo), sat_add(a.hi, b.hi)};
        case ExprKind::kSub: return {sat_add(a.lo, sat_neg(b.hi)), sat_add(a.hi, sat_neg(b.lo))};
        case ExprKind::kMul: {
          if (b.is_point()) return scale(a, b.lo);
          if (a.is_point()) return scale(b, a.lo);
          if (!a.bounded() || !b.bounded()) return {};
          int64_t p[4] = {sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo), sat_mul(a.hi, b.hi)};
          return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
        }
        case ExprKind::kDiv:
          if (b.is_point() && b.lo > 0) return {floor_div(a.lo, b.lo), floor_div(a.hi, b.lo)};
          return {};
        case ExprKind::kMod:
          if (b.is_point() && b.lo > 0) {
            if (a.bounded() && floor_div(a.lo, b.lo) == floor_div(a.hi, b.lo))
              return {a.lo - floor_div(a.lo, b.lo) * b.lo, a.hi - floor_div(a.lo, b.lo) * b.lo};
            return {0, b.lo - 1};
          }
          return {};
        case ExprKind::kMin: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
        case ExprKind::kMax: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
        default: return {};
      }
    }
    case ExprKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      Interval a = bounds_of(n->true_value, bounds), b = bounds_of(n->false_value, bounds);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case ExprKind::kCast: {
      const auto* n = e.as<CastNode>();
      if (n->value.dtype().is_integral() && n->value.dtype().bits <= e.dtype().bits)
        return bounds_of(n->value, bounds);
      return {};
    }
    default:
      return {};
  }
}

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
