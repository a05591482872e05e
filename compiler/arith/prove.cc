#include "compiler/arith/prove.h"

#include "compiler/arith/linear.h"

namespace tessera::arith {

std::optional<bool> decide_sign(ExprKind cmp, Interval d) {
  auto decide = [](bool always, bool never) -> std::optional<bool> {
    if (always) return true;
    if (never) return false;
    return std::nullopt;
  };
  switch (cmp) {
    case ExprKind::kLT: return decide(d.hi < 0, d.lo >= 0);
    case ExprKind::kLE: return decide(d.hi <= 0, d.lo > 0);
    case ExprKind::kGT: return decide(d.lo > 0, d.hi <= 0);
    case ExprKind::kGE: return decide(d.lo >= 0, d.hi < 0);
    case ExprKind::kEQ: return decide(d.is_point() && d.lo == 0, d.lo > 0 || d.hi < 0);
    case ExprKind::kNE: return decide(d.lo > 0 || d.hi < 0, d.is_point() && d.lo == 0);
    default: return std::nullopt;
  }
}

Interval difference_bounds(const Expr& a, const Expr& b, const BoundMap& bounds) {
  return bounds_of(canonical(make_binary(ExprKind::kSub, a, b)), bounds);
}

std::optional<bool> prove(ExprKind cmp, const Expr& a, const Expr& b, const BoundMap& bounds) {
  return decide_sign(cmp, difference_bounds(a, b, bounds));
}

}  // namespace tessera::arith
