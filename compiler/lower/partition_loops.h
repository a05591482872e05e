// partition_loops: loops whose tiles do not divide their extent run a guard-
// free main part and guarded remainders.
//
// A split whose factor does not divide its loop leaves guards such as
// `i.0*8 + i.1 < 997` in the loop nest (place_guards). For a serial or
// parallel loop `v` whose body holds guards linear in v, this pass computes
// the range of v on which every such guard holds for all values of the loops
// inside (a guard is `c*v + inner + outer < b`, with `inner` bounded by the
// inner loops' constant ranges and `outer` any expression of enclosing
// variables), and splits the loop into a head, a middle where those guards
// are dropped, and a tail (Halide's loop partitioning). A parallel loop is
// not split (two launches, the remainder's alone on one thread after the
// middle's): its body becomes `if (v in the middle) {body without those
// guards} else {body}`. The bounds are
// expressions, so a tile whose position depends on a fused parallel loop is
// partitioned at run time. Head and tail keep their guards and are not
// partitioned further (the copies would multiply); a vectorized loop inside
// them turns its guard into a lane mask (vectorize_loops). Vectorized and
// unrolled loops are not partitioned themselves.
#pragma once

#include "compiler/ir/stmt.h"

namespace tessera {

/// Partitions every serial and parallel loop of `s` around its guards.
Stmt partition_loops(const Stmt& s);

}  // namespace tessera
