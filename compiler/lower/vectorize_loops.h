// Vectorization: a kVectorized loop becomes one iteration over vectors
// (ramps and broadcasts). A loop whose body cannot be vectorized safely (a
// store to an address that does not depend on the loop, a branch on the lane,
// an allocation inside) runs as a serial loop instead.
#pragma once

#include "compiler/ir/stmt.h"

namespace tessera {

Stmt vectorize_loops(const Stmt& s);

}  // namespace tessera
