#include "compiler/arith/interval.h"

#include <algorithm>

#include "base/int_div.h"

namespace tessera::arith {
namespace {

constexpr int64_t kNegInf = Interval::kNegInf;
constexpr int64_t kPosInf = Interval::kPosInf;

bool is_index_like(DType t) {
  return t.is_integral() && t.is_scalar() && !t.is_bool();
}

}  // namespace

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

int64_t sat_mul(int64_t a, int64_t b) {
  if (b == 0 || a == 0) return 0;
  bool neg = (a < 0) != (b < 0);
  if (a == kNegInf || a == kPosInf || b == kNegInf || b == kPosInf) return neg ? kNegInf : kPosInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return neg ? kNegInf : kPosInf;
  return r;
}

int64_t sat_floordiv(int64_t a, int64_t c) {
  if (a == kNegInf || a == kPosInf) return a;
  return tessera::floordiv(a, c);
}

Interval add(Interval a, Interval b) {
  return {sat_add(a.lo, b.lo), sat_add(a.hi, b.hi)};
}

Interval sub(Interval a, Interval b) {
  return {sat_add(a.lo, sat_neg(b.hi)), sat_add(a.hi, sat_neg(b.lo))};
}

Interval scale(Interval a, int64_t c) {
  int64_t x = sat_mul(a.lo, c), y = sat_mul(a.hi, c);
  return c >= 0 ? Interval{x, y} : Interval{y, x};
}

Interval mul(Interval a, Interval b) {
  if (b.is_point()) return scale(a, b.lo);
  if (a.is_point()) return scale(b, a.lo);
  if (!a.bounded() || !b.bounded()) return {};
  int64_t p[4] = {sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo), sat_mul(a.hi, b.hi)};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

Interval floordiv(Interval a, int64_t c) {
  return {sat_floordiv(a.lo, c), sat_floordiv(a.hi, c)};
}

Interval floormod(Interval a, int64_t c) {
  if (a.bounded()) {
    const int64_t q = tessera::floordiv(a.lo, c);
    if (q == tessera::floordiv(a.hi, c)) return {a.lo - q * c, a.hi - q * c};
  }
  return {0, c - 1};
}

Interval min(Interval a, Interval b) {
  return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
}
Interval max(Interval a, Interval b) {
  return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
}
Interval hull(Interval a, Interval b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

Interval bounds_of(const Expr& e, const BoundMap& bounds) {
  int64_t c;
  if (is_const_int(e, &c)) return Interval::point(c);
  if (!is_index_like(e.dtype())) return e.dtype().is_bool() ? Interval{0, 1} : Interval{};
  switch (e.kind()) {
    case ExprKind::kVar: {
      auto it = bounds.find(e.as<VarNode>());
      return it == bounds.end() ? Interval{} : it->second;
    }
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax: {
      const auto* n = static_cast<const BinaryNode*>(e.get());
      Interval a = bounds_of(n->a, bounds), b = bounds_of(n->b, bounds);
      switch (e.kind()) {
        case ExprKind::kAdd: return add(a, b);
        case ExprKind::kSub: return sub(a, b);
        case ExprKind::kMul: return mul(a, b);
        case ExprKind::kDiv: return b.is_point() && b.lo > 0 ? floordiv(a, b.lo) : Interval{};
        case ExprKind::kMod: return b.is_point() && b.lo > 0 ? floormod(a, b.lo) : Interval{};
        case ExprKind::kMin: return min(a, b);
        default: return max(a, b);
      }
    }
    case ExprKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      return hull(bounds_of(n->true_value, bounds), bounds_of(n->false_value, bounds));
    }
    case ExprKind::kCast: {
      const auto* n = e.as<CastNode>();
      if (n->value.dtype().is_integral() && n->value.dtype().bits <= e.dtype().bits) return bounds_of(n->value, bounds);
      return {};
    }
    default: return {};
  }
}

}  // namespace tessera::arith
