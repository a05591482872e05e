// The generic schedule: what a kernel without a knob template runs when no
// record exists (a model's elementwise chains, transposes, NHWC pooling,
// softmax and normalisation pieces, convolutions of shapes no template takes).
//
// It is the plain schedule any hand-writer would start from: producers that
// are elementwise, broadcast or injective are inlined into their readers;
// every remaining stage keeps its loops at the root, vectorizes its
// innermost axis (moved inside its reduction loops, so a sum accumulates
// whole vectors), and runs its outer loops in parallel when there is enough
// work to pay for the launch.
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
