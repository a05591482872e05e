// A ComputeDAG: the tensors of one kernel, in topological order, with a
// workload key that identifies its structure.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/te/tensor.h"

namespace tessera {

/// The tensors reachable from a kernel's outputs. `args` is the kernel's
/// parameter order (its inputs, then its outputs).
class ComputeDAG {
 public:
  /// Builds the DAG of `args`; every placeholder the outputs read must be in
  /// `args`, and at least one compute must be.
  static Result<ComputeDAG> make(std::vector<Tensor> args);

  /// Every tensor, producers before consumers.
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Tensor>& args() const { return args_; }
  /// Index of `t` in tensors(), or -1.
  int index_of(const Tensor& t) const;
  bool is_output(const Tensor& t) const;

  /// Canonical text: the same for DAGs that differ only in names.
  const std::string& canonical_text() const { return canonical_; }
  /// workload_key_of(canonical_text()): XXH3-128, 32 hex digits (compiler/te/workload_key.h).
  const std::string& workload_key() const { return key_; }
  /// Floating-point operations of one run (a multiply-add counts two).
  double flop_count() const { return flops_; }
  /// Readable form: one line per tensor.
  std::string to_string() const;

 private:
  std::vector<Tensor> tensors_, args_;
  std::string canonical_, key_;
  double flops_ = 0;
};

}  // namespace tessera
