// Sketch generation rules (Ansor's, for CPUs), applied to the stages of a
// ComputeDAG from the outputs backwards:
//
//   always-inline   elementwise / broadcast / injective stages that are not
//                   outputs (pad stages included) are computed inline;
//   tile + fuse     a stage with data reuse (OpPattern::kComplex) whose only
//                   consumer (through inlined stages) is an elementwise stage
//                   reading it at the same point: the consumer keeps the
//                   outer "SS" tiles, the stage is tiled "RSRS" and computed
//                   at the consumer's last outer tile loop;
//   cache_write     a kComplex stage without such a consumer: a ".local"
//                   stage takes the computation and is fused into the
//                   original as above;
//   tile            a kComplex stage tiled "SSRSRS" at the root (the
//                   alternative to the two above);
//   pack            (ours, not Ansor's) each tiled structure also with its
//                   inputs that are read along a reduction with the vector
//                   axis last (matmul's B[k, j]) copied per tile by
//                   cache_read at the vector axis' S2 loop;
//   rfactor         a reduction with few outputs and a long reduction: the
//                   reduce axis is split and its inner part made spatial, so
//                   the partial sums run in parallel (alongside the plain one);
//   gemv rfactor    (ours) a complex stage that no input is contiguous along
//                   its vector axis but one is along a long reduction
//                   (dense with one row: W[j, k]): also as an rfactor of k
//                   whose partial sums, vectorized along k, may be computed
//                   at the final sum's loops (a small contiguous vector per
//                   output, not a gather of W across rows);
//   skip            every other stage keeps its loops (kSimple): one spatial
//                   axis split for vectors, parallel at the root, and a
//                   compute location that annotation may move.
//
// Where a rule offers alternatives, each gives its own sketch.
#pragma once

#include <vector>

#include "base/target.h"
#include "compiler/space/sketch/sketch.h"

namespace tessera {

/// The sketches of `dag` for `target`: at least one, at most
/// options.max_sketches. kInvalidArgument when the DAG has no compute stage.
Result<std::vector<Sketch>> generate_sketches(const ComputeDAG& dag, const Target& target,
                                              const SketchOptions& options = {});

}  // namespace tessera
