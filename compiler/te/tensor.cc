#include "compiler/te/tensor.h"

#include <unordered_set>

#include "compiler/ir/functor.h"

namespace tessera {

const char* op_pattern_name(OpPattern p) {
  switch (p) {
    case OpPattern::kElementwise: return "elementwise";
    case OpPattern::kBroadcast: return "broadcast";
    case OpPattern::kInjective: return "injective";
    case OpPattern::kReduction: return "reduction";
    case OpPattern::kComplex: return "complex";
  }
  return "?";
}

Tensor placeholder(std::vector<int64_t> shape, DType dtype, std::string name) {
  Ref<const Object> op(new PlaceholderOpNode(name));
  return make_ref<const TensorNode>(std::move(name), std::move(shape), dtype, op);
}

Tensor compute(std::vector<int64_t> shape, const std::function<Expr(const Vars&)>& f, std::string name,
               std::optional<OpPattern> pattern) {
  static const char* kAxisNames[] = {"i", "j", "k", "l", "m", "n"};
  std::vector<IterVar> axes;
  Vars vars;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string axis_name = d < 6 ? kAxisNames[d] : "ax" + std::to_string(d);
    axes.push_back(make_iter_var(axis_name, shape[d], IterKind::kSpatial));
    vars.push_back(axes.back()->var);
  }
  Expr body = f(vars);
  std::vector<IterVar> reduce_axes;
  if (const auto* r = body.as<ReduceNode>()) reduce_axes = r->axes;
  OpPattern p = pattern.value_or(reduce_axes.empty() ? OpPattern::kInjective : OpPattern::kReduction);
  DType dtype = body.dtype();
  Ref<const Object> op(new ComputeOpNode(name, std::move(axes), std::move(reduce_axes), body, p));
  return make_ref<const TensorNode>(std::move(name), std::move(shape), dtype, op);
}

IterVar reduce_axis(int64_t extent, std::string name) {
  return make_iter_var(std::move(name), extent, IterKind::kReduce);
}

Expr sum(Expr source, std::vector<IterVar> axes) {
  return make_reduce(ReduceOp::kSum, std::move(source), std::move(axes));
}
Expr max_reduce(Expr source, std::vector<IterVar> axes) {
  return make_reduce(ReduceOp::kMax, std::move(source), std::move(axes));
}
Expr min_reduce(Expr source, std::vector<IterVar> axes) {
  return make_reduce(ReduceOp::kMin, std::move(source), std::move(axes));
}

Expr read(const Tensor& t, std::vector<Expr> indices) {
  return make_tensor_read(t, std::move(indices));
}

const OperationNode* op_of(const Tensor& t) {
  return static_cast<const OperationNode*>(t->op.get());
}

const ComputeOpNode* compute_op(const Tensor& t) {
  const OperationNode* op = op_of(t);
  return op->kind == OperationNode::Kind::kCompute ? static_cast<const ComputeOpNode*>(op) : nullptr;
}

bool is_placeholder(const Tensor& t) {
  return op_of(t)->kind == OperationNode::Kind::kPlaceholder;
}

namespace {
class TensorReadCollector final : public IRVisitor {
 public:
  std::vector<Tensor> tensors;

 protected:
  using IRVisitor::visit;
  void visit(const TensorReadNode* op) override {
    if (seen_.insert(op->tensor.get()).second) tensors.push_back(op->tensor);
    IRVisitor::visit(op);
  }

 private:
  std::unordered_set<const TensorNode*> seen_;
};
}  // namespace

std::vector<Tensor> input_tensors(const Tensor& t) {
  const ComputeOpNode* op = compute_op(t);
  if (!op) return {};
  TensorReadCollector c;
  c(op->body);
  return c.tensors;
}

}  // namespace tessera
