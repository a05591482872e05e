// The simplifier: constant folding, canonical linear forms of index
// arithmetic, and div/mod/min/max/comparisons decided by known bounds.
//
// Its rewrite rules for binary operators are a table in simplify.cc, one rule
// a line, grouped by family: constant folding, vector (ramp/broadcast)
// arithmetic, logic, linear index arithmetic, division and modulo, min/max
// and comparisons by bounds, float identities. The arithmetic behind them
// (intervals, linear forms, proofs) is compiler/arith.
#pragma once

#include "compiler/arith/interval.h"
#include "compiler/ir/stmt.h"

namespace tessera {

/// Numeric intervals and variable ranges, from compiler/arith.
using arith::BoundMap;
using arith::bounds_of;
using arith::Interval;

/// Simplifies an expression under known variable ranges.
Expr simplify(const Expr& e, const BoundMap& bounds = {});

/// Simplifies a statement: loop variables are bounded inside their loops;
/// loops of extent 1 are replaced by their body, of extent 0 removed, and
/// branches decided by the bounds are taken.
Stmt simplify(const Stmt& s, const BoundMap& bounds = {});

/// True when the simplifier proves `cond` true under `bounds`.
bool can_prove(const Expr& cond, const BoundMap& bounds = {});

}  // namespace tessera
