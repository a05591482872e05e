// Tensor expressions: placeholders, computes with index lambdas, reductions.
//
//   Tensor A = placeholder({M, K}, DType::f32(), "A");
//   IterVar k = reduce_axis(K, "k");
//   Tensor C = compute({M, N}, [&](const Vars& i) {
//     return sum(A(i[0], k) * B(k, i[1]), {k});
//   }, "C");
//
// Every compute has one output. Shapes are static.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/expr.h"

namespace tessera {

/// What an operation computes, for search-space rules and fusion.
enum class OpPattern : uint8_t {
  kElementwise,  ///< out[i] = f(in[i]) with the same shape
  kBroadcast,    ///< out[i] = f(in[g(i)]) reading fewer dimensions
  kInjective,    ///< any index map without reduction (transpose, pad, reshape)
  kReduction,    ///< has reduce axes without much reuse (sum, softmax parts)
  kComplex,      ///< reduction with data reuse: matmul, conv
};
const char* op_pattern_name(OpPattern p);

/// The operation that produces a tensor.
struct OperationNode : Object {
  enum class Kind : uint8_t { kPlaceholder, kCompute };
  OperationNode(Kind k, std::string n) : kind(k), name(std::move(n)) {}
  const Kind kind;
  const std::string name;
};

struct PlaceholderOpNode final : OperationNode {
  explicit PlaceholderOpNode(std::string n) : OperationNode(Kind::kPlaceholder, std::move(n)) {}
};

/// out[axes...] = body, where body may be a Reduce over reduce_axes.
struct ComputeOpNode final : OperationNode {
  ComputeOpNode(std::string n, std::vector<IterVar> a, std::vector<IterVar> r, Expr b, OpPattern p)
      : OperationNode(Kind::kCompute, std::move(n)),
        axes(std::move(a)),
        reduce_axes(std::move(r)),
        body(std::move(b)),
        pattern(p) {}
  const std::vector<IterVar> axes;
  const std::vector<IterVar> reduce_axes;
  const Expr body;
  const OpPattern pattern;
};

using Vars = std::vector<Var>;

/// An input tensor of the given shape and type.
Tensor placeholder(std::vector<int64_t> shape, DType dtype, std::string name);

/// out[i...] = f(i...). With `pattern` unset it is inferred (reduction when the
/// body is a Reduce; injective otherwise).
Tensor compute(std::vector<int64_t> shape, const std::function<Expr(const Vars&)>& f, std::string name,
               std::optional<OpPattern> pattern = std::nullopt);

/// A reduction axis over [0, extent).
IterVar reduce_axis(int64_t extent, std::string name);
Expr sum(Expr source, std::vector<IterVar> axes);
Expr max_reduce(Expr source, std::vector<IterVar> axes);
Expr min_reduce(Expr source, std::vector<IterVar> axes);

/// tensor[indices] as an expression: `read(A, {i, k})`.
Expr read(const Tensor& t, std::vector<Expr> indices);

/// The compute op of a tensor, or nullptr for a placeholder.
const ComputeOpNode* compute_op(const Tensor& t);
const OperationNode* op_of(const Tensor& t);
bool is_placeholder(const Tensor& t);

/// The tensors a compute reads, in order of first appearance.
std::vector<Tensor> input_tensors(const Tensor& t);

}  // namespace tessera
