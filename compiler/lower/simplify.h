// The simplifier: constant folding, canonical linear forms of index
// arithmetic, and div/mod/min/max/comparisons decided by known bounds.
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>

#include "compiler/ir/stmt.h"

namespace tessera {

/// A closed integer interval [lo, hi]; the limits of int64 stand for "unbounded".
struct Interval {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t lo = kNegInf, hi = kPosInf;

  static Interval point(int64_t v) { return {v, v}; }
  static Interval everything() { return {}; }
  bool is_point() const { return lo == hi; }
  bool bounded() const { return lo != kNegInf && hi != kPosInf; }
};

/// Known ranges of variables (loop variables: [min, min + extent - 1]).
using BoundMap = std::unordered_map<const VarNode*, Interval>;

/// The range of an integer scalar expression given the ranges of its
/// variables; unknown parts widen to unbounded.
Interval bounds_of(const Expr& e, const BoundMap& bounds);

/// Simplifies an expression under known variable ranges.
Expr simplify(const Expr& e, const BoundMap& bounds = {});

/// Simplifies a statement: loop variables are bounded inside their loops;
/// loops of extent 1 are replaced by their body, of extent 0 removed, and
/// branches decided by the bounds are taken.
Stmt simplify(const Stmt& s, const BoundMap& bounds = {});

/// True when the simplifier proves `cond` true under `bounds`.
bool can_prove(const Expr& cond, const BoundMap& bounds = {});

}  // namespace tessera
