// Numeric intervals of integer index expressions: [lo, hi] with saturating
// bounds, interval arithmetic, and the range of an expression given the
// ranges of its variables.
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>

#include "compiler/ir/expr.h"

namespace tessera::arith {

/// A closed integer interval [lo, hi]; the limits of int64 stand for "unbounded".
struct Interval {
  /// The ends that stand for -inf and +inf.
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  /// lo <= hi; everything by default.
  int64_t lo = kNegInf, hi = kPosInf;

  /// [v, v].
  static Interval point(int64_t v) { return {v, v}; }
  /// (-inf, +inf).
  static Interval everything() { return {}; }
  /// True when lo == hi.
  bool is_point() const { return lo == hi; }
  /// True when neither end is infinite.
  bool bounded() const { return lo != kNegInf && hi != kPosInf; }
};

/// Known ranges of variables (loop variables: [min, min + extent - 1]).
using BoundMap = std::unordered_map<const VarNode*, Interval>;

/// a + b with infinities absorbing (-inf + +inf is +inf) and overflow saturating.
int64_t sat_add(int64_t a, int64_t b);
/// -a, with -(-inf) = +inf.
int64_t sat_neg(int64_t a);
/// a * b, saturating to the infinity of the product's sign; 0 * inf = 0.
int64_t sat_mul(int64_t a, int64_t b);
/// floordiv(a, c) for c > 0, infinities staying infinite.
int64_t sat_floordiv(int64_t a, int64_t c);

/// {x + y : x in a, y in b}.
Interval add(Interval a, Interval b);
/// {x - y : x in a, y in b}.
Interval sub(Interval a, Interval b);
/// {x * c : x in a}.
Interval scale(Interval a, int64_t c);
/// {x * y : x in a, y in b}; unbounded unless one side is a point or both are bounded.
Interval mul(Interval a, Interval b);
/// {floordiv(x, c) : x in a}, c > 0.
Interval floordiv(Interval a, int64_t c);
/// {floormod(x, c) : x in a}, c > 0: exact when a stays within one period, else [0, c - 1].
Interval floormod(Interval a, int64_t c);
/// {min(x, y) : x in a, y in b}.
Interval min(Interval a, Interval b);
/// {max(x, y) : x in a, y in b}.
Interval max(Interval a, Interval b);
/// The smallest interval holding both.
Interval hull(Interval a, Interval b);

/// True when every x in a is <= every y in b.
inline bool always_le(Interval a, Interval b) {
  return a.hi <= b.lo;
}

/// The range of an integer scalar expression given the ranges of its
/// variables; unknown parts widen to unbounded, booleans are [0, 1].
Interval bounds_of(const Expr& e, const BoundMap& bounds);

}  // namespace tessera::arith
