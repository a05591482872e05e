// Analysis of one buffer access inside a loop nest, used by the features:
// how a flat index moves with each loop (its linear coefficients) and how
// much memory a set of loops touches (its footprint).
//
// Internal to costmodel/; tests use it to check the arithmetic.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/expr.h"

namespace tessera::costmodel {

/// Coefficients of `index` in the loop variables `vars` (outermost first):
/// coefs[i] is how many elements the index moves when vars[i] grows by one.
/// A Ramp's stride goes to coefs[lane_slot] (when lane_slot >= 0). Non-linear
/// parts are approximated (x / c moves 1/c per step of x; x % c like x; a
/// product of two variables like their sum); returns false when any part was
/// approximated or unknown (an index read from memory).
/// `coefs` is resized to vars.size() (+1 for the lane slot) and zeroed first.
bool linear_coefficients(const Expr& index, const std::vector<const VarNode*>& vars, int lane_slot,
                         std::vector<double>* coefs);

/// Distinct elements and cache lines touched by an access.
struct Footprint {
  double elements = 1;
  double lines = 1;
};

/// Footprint of an access whose index moves coefs[i] elements per step of a
/// loop of extents[i], over the loops in `loops` (indices into both arrays).
/// Loops are combined from the smallest stride up: a loop whose stride jumps
/// past what the inner ones cover multiplies the footprint, one that overlaps
/// it only extends the covered span. Capped by `cap_elements` (the buffer).
Footprint footprint(const std::vector<double>& coefs, const std::vector<int64_t>& extents,
                    const std::vector<int>& loops, int elem_bytes, double cap_elements);

}  // namespace tessera::costmodel
