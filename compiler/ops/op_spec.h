// Operator specs: the one text form every CLI subcommand uses to name a
// single-operator workload, e.g.
//
//   matmul:M=1024,N=1024,K=1024
//   conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1
//   dense:M=1,N=1000,K=2048,bias=1,relu=1
//   softmax:M=128,N=1000
//
// Grammar: name ':' key '=' integer (',' key '=' integer)*. Every operator
// is float32 and lists its parameters (some with defaults) in list_ops().
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/te/compute_dag.h"

namespace tessera::ops {

/// One integer parameter of an operator spec.
struct OpParam {
  std::string name;
  std::optional<int64_t> default_value;                     ///< nullopt: the parameter is required
  int64_t min_value = 1;                                    ///< sizes: 1; padding and flags: 0
  int64_t max_value = std::numeric_limits<int64_t>::max();  ///< flags: 1
  std::string help;
  int64_t multiple_of = 1;  ///< the value must be a multiple of this (matmul_u8s8's K: 4)
};

/// An operator that specs can name, with its parameters in canonical order.
struct OpInfo {
  std::string name;
  std::string summary;
  std::vector<OpParam> params;
  /// "conv2d:N=..,C=..,...[,stride=1,pad=0]" for help messages.
  std::string usage() const;
};

/// Every operator parse_op_spec accepts, in a stable order.
std::vector<OpInfo> list_ops();

/// A parsed spec: the kernel's DAG (args are the inputs, then the output),
/// the canonical spec (every parameter, in list_ops() order, defaults
/// filled in) and the floating-point operations of one run.
struct OpInstance {
  std::string op;
  std::string spec;
  std::shared_ptr<const ComputeDAG> dag;
  double flops = 0;
};

/// Parses and builds a spec. An unknown operator or parameter, a repeated,
/// missing, malformed or out-of-range value, or parameters the operator
/// rejects (e.g. groups not dividing C) give kInvalidArgument listing what
/// is accepted.
Result<OpInstance> parse_op_spec(const std::string& text);

}  // namespace tessera::ops
