// A direct evaluator of tensor expressions: the value of a tensor at chosen
// points, computed from the computation's definition (the compute bodies of
// a ComputeDAG) without scheduling or lowering it. The tuner checks every
// candidate kernel against it, so that a bug in the lowering passes or the
// code generator cannot hide by being shared with the reference.
//
// Semantics:
//  - Float arithmetic is done in double and each operation's result is
//    rounded to its float type (float16, bfloat16, float32, float64); a reduction accumulates in
//    double and rounds once, when its element is stored. The result is the
//    exact sum to within fp32 rounding of the inputs, not one particular
//    summation order.
//  - Integer arithmetic wraps to its type's width; Div and Mod are floor
//    division and modulo; float-to-integer casts truncate toward zero
//    (saturating, NaN -> 0), as in compiler/codegen/interpreter.h.
//  - Select evaluates only the branch its condition picks (padding reads out
//    of range in the other one).
//  - Elements of reductions are memoised, so a chain of reductions (softmax,
//    layer norm) costs one pass per reduced row, not one per reader.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "compiler/te/compute_dag.h"

namespace tessera {

/// Evaluates the tensors of one ComputeDAG over caller-owned input data.
class TensorEvaluator {
 public:
  /// `args[i]` is the row-major data of dag.args()[i] for every placeholder
  /// argument (entries of computed arguments are ignored and may be null).
  /// kInvalidArgument when the counts differ, a placeholder's data is null,
  /// or a tensor has a type the evaluator does not model (vectors).
  static Result<TensorEvaluator> make(const ComputeDAG& dag, std::vector<const void*> args);

  TensorEvaluator(TensorEvaluator&&) noexcept;
  TensorEvaluator& operator=(TensorEvaluator&&) noexcept;
  ~TensorEvaluator();

  /// The value of dag.args()[arg] at each row-major flat index in `points`,
  /// as doubles (integers exactly). kRuntimeError naming the tensor for a read
  /// out of bounds or an integer division by zero; kInvalidArgument for an
  /// index outside the tensor.
  Result<std::vector<double>> evaluate(int arg, const std::vector<int64_t>& points);

 private:
  struct Impl;
  explicit TensorEvaluator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
