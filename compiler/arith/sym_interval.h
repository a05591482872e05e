// Symbolic intervals: the range [lo, hi] of an index expression as
// expressions, when some of its variables range over symbolic bounds (bound
// inference relaxes inner loops this way to find the region a consumer reads).
#pragma once

#include <optional>
#include <unordered_map>

#include "compiler/ir/expr.h"

namespace tessera::arith {

/// A closed interval [lo, hi] with expression ends.
struct SymInterval {
  /// The ends, as built (not simplified).
  Expr lo, hi;
};

/// The variables that range, each over its [lo, hi].
using RelaxMap = std::unordered_map<const VarNode*, SymInterval>;

/// The interval of `e` when the variables of `relax` range over theirs (the
/// others are fixed): exact through +, -, * and floor / by a constant, min,
/// max and select; % c gives [0, c - 1]. nullopt for anything else that
/// depends on a relaxed variable. The ends are built unsimplified.
std::optional<SymInterval> eval_interval(const Expr& e, const RelaxMap& relax);

}  // namespace tessera::arith
