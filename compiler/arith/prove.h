// Bound proofs: comparisons of integer index expressions decided by the
// ranges of their variables.
#pragma once

#include <optional>

#include "compiler/arith/interval.h"

namespace tessera::arith {

/// Whether `d cmp 0` holds for every d in `diff` (true), for none (false), or
/// depends on d (nullopt). `cmp` is a comparison kind (kLT, kLE, ..., kNE).
std::optional<bool> decide_sign(ExprKind cmp, Interval diff);

/// The range of a - b through its canonical linear form, so that common terms
/// cancel (x + 3 - x is 3 whatever x's range). a and b: one integer scalar type.
Interval difference_bounds(const Expr& a, const Expr& b, const BoundMap& bounds);

/// Decides `a cmp b` under `bounds`: true or false when the range of a - b
/// settles it, nullopt otherwise.
std::optional<bool> prove(ExprKind cmp, const Expr& a, const Expr& b, const BoundMap& bounds);

/// a < b for every value of the variables in their bounds.
inline bool can_prove_lt(const Expr& a, const Expr& b, const BoundMap& bounds) {
  return prove(ExprKind::kLT, a, b, bounds) == true;
}
/// a <= b for every value of the variables in their bounds.
inline bool can_prove_le(const Expr& a, const Expr& b, const BoundMap& bounds) {
  return prove(ExprKind::kLE, a, b, bounds) == true;
}
/// a == b for every value of the variables in their bounds.
inline bool can_prove_eq(const Expr& a, const Expr& b, const BoundMap& bounds) {
  return prove(ExprKind::kEQ, a, b, bounds) == true;
}

}  // namespace tessera::arith
