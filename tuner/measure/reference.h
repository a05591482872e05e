// The reference a candidate kernel's output is checked against while tuning:
// values of the task's output at sampled points, evaluated from the
// computation's definition (compiler/te/evaluate.h), never from a lowering
// the candidate shares. The worker runs the candidate once on the same
// random inputs and compares those points (rpc::ReferenceCheck).
//
// Points: every corner of the output (each dimension at its first or last
// index), points on every face (one dimension at its first or last index,
// the others random), points in the last 16 indices of every dimension
// (remainders of tiles that do not divide live there), and random points
// anywhere. A small output is compared whole.
//
// Tolerance: floats pass when |got - want| <= tol * (1 + |want|), with
// tol = max(floor, 4 * K * 2^-24) for the longest reduction of K terms in
// the DAG: fp32 summation in any order errs by at most about K * 2^-24 times
// the sum of the terms' magnitudes, and the workers' inputs lie in [-1, 1].
// Integers compare exactly.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/schedule/layout.h"
#include "compiler/te/compute_dag.h"
#include "rpc/measure_types.h"

namespace tessera::tuner {

/// How many points a sampled check compares.
struct CheckPointOptions {
  int64_t whole_below = 4096;  ///< outputs of at most this many elements are compared whole
  int face_points = 4;         ///< per face (dimension d at 0, and at its last index)
  int tail_points = 4;         ///< per dimension, in its last 16 indices
  int random_points = 256;     ///< anywhere in the output
};

/// The sorted, distinct row-major flat indices of an output of `shape` that a
/// check compares, drawn deterministically from `seed`.
std::vector<int64_t> check_points(const std::vector<int64_t>& shape, uint64_t seed,
                                  const CheckPointOptions& options = {});

/// The float tolerance for checking `dag`'s output: max(floor, 4 * K * u),
/// K the largest number of terms one element of a reduction in `dag` sums
/// and u the unit roundoff of its narrowest computed float type (2^-24 for
/// float32, 2^-11 for float16, 2^-8 for bfloat16).
double check_tolerance(const ComputeDAG& dag, double floor);

/// The expected values of `dag`'s last argument at `points`, for a kernel
/// called with argument i filled by NDArray::fill_random(input_seed + i) and
/// the arguments of `packed` stored in their packed layouts (the bytes are
/// read unpacked, as the kernel reads them). kInvalidArgument when the
/// evaluator does not model the DAG's types (float16, bfloat16): the task is
/// then measured unchecked.
Result<rpc::ReferenceCheck> evaluate_reference(const ComputeDAG& dag,
                                               const std::vector<std::pair<int, PackedLayout>>& packed,
                                               uint64_t input_seed, std::vector<int64_t> points, double tolerance);

}  // namespace tessera::tuner
