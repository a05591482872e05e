// The generic schedule: what a kernel without a knob template runs when no
// record exists (a model's elementwise chains, transposes, NHWC pooling,
// softmax and normalisation pieces, convolutions of shapes no template takes).
//
// It is the plain schedule any hand-writer would start from: producers that
// are elementwise, broadcast or injective are inlined into their readers,
// but for a small stage of statistics (it reads only reductions, and has a
// sixteenth of the output's elements or fewer: a channels-last instance
// norm's inverse deviations), computed once at the root instead of once an
// output vector;
// every remaining stage keeps its loops at the root, vectorizes its
// innermost axis (moved inside its reduction loops, so a sum accumulates
// whole vectors; a long axis no vector divides gets a masked remainder),
// and runs its outer loops in parallel when there is enough work to pay for
// the launch, fusing only as many as give each thread several chunks.
// A transpose (one stage whose vector stores contiguous elements read with
// a stride) is tiled: the loop along the input rows' contiguous axis is
// split by a cache line and its tile goes right outside the vector, so that
// a tile reads and writes whole lines (where the vector spans a line and
// the line divides the axis).
#pragma once

#include <memory>

#include "base/target.h"
#include "compiler/schedule/state.h"

namespace tessera {

/// The generic schedule of `dag` on `target`. It always replays and lowers
/// on the DAG it was made for; an error means a broken internal invariant
/// (callers fall back to the unscheduled loops).
Result<State> generic_schedule(std::shared_ptr<const ComputeDAG> dag, const Target& target);

}  // namespace tessera
