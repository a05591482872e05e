#include "compiler/te/compute_dag.h"

#include <cstdio>
#include <functional>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/printer.h"
#include "compiler/te/workload_key.h"

namespace tessera {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// Float operations of one evaluation of an expression; a u8 x s8 dot
// product counts as its four integer multiply-adds (8 operations, its
// accumulation included), so that an int8 product's rate reads like a
// float one's.
class FlopCounter final : public IRVisitor {
 public:
  double flops = 0;

 protected:
  using IRVisitor::visit;
  void visit(const BinaryNode* op) override {
    if (op->a.dtype().is_float() && !is_comparison(op->kind)) flops += 1;
    IRVisitor::visit(op);
  }
  void visit(const CallNode* op) override {
    // Four multiply-adds (an integer sum's combine is not counted); two
    // products and their add (the float sum's combine counts the other add).
    // A pack moves bits.
    flops += op->op == CallOp::kDotU8S8 ? 8 : op->op == CallOp::kDotBf16 ? 3 : op->op == CallOp::kPackBf16 ? 0 : 1;
    IRVisitor::visit(op);
  }
  void visit(const ReduceNode* op) override {
    if (op->dtype.is_float()) flops += 1;  // the combine
    IRVisitor::visit(op);
  }
};

}  // namespace

Result<ComputeDAG> ComputeDAG::make(std::vector<Tensor> args) {
  ComputeDAG dag;
  std::unordered_set<const TensorNode*> in_args, visited;
  for (const Tensor& t : args) {
    if (!t.defined()) return Status(ErrorCode::kInvalidArgument, "null tensor in kernel arguments");
    if (!in_args.insert(t.get()).second)
      return Status(ErrorCode::kInvalidArgument, "tensor " + t->name + " appears twice in kernel arguments");
  }
  // Post-order DFS from the computed arguments: producers first.
  std::function<Status(const Tensor&)> visit = [&](const Tensor& t) -> Status {
    if (!visited.insert(t.get()).second) return Status::ok();
    if (is_placeholder(t) && !in_args.count(t.get()))
      return Status(ErrorCode::kInvalidArgument, "placeholder " + t->name + " is read but is not a kernel argument");
    for (const Tensor& in : input_tensors(t)) TESSERA_RETURN_IF_ERROR(visit(in));
    dag.tensors_.push_back(t);
    return Status::ok();
  };
  bool any_compute = false;
  for (const Tensor& t : args) {
    TESSERA_RETURN_IF_ERROR(visit(t));
    any_compute |= !is_placeholder(t);
  }
  if (!any_compute) return Status(ErrorCode::kInvalidArgument, "kernel arguments contain no compute");
  dag.args_ = std::move(args);

  IRPrinter printer(/*canonical=*/true);
  std::string text;
  for (const Tensor& t : dag.tensors_) {
    text += printer.name_of(t.get()) + " = ";
    if (const ComputeOpNode* op = compute_op(t)) {
      text += "compute" + shape_text(t->shape) + " " + t->dtype.to_string() + " " + op_pattern_name(op->pattern) + " (";
      for (const IterVar& a : op->axes) text += printer.name_of(a->var.node()) + " ";
      text += ") " + printer.print(op->body);
      FlopCounter fc;
      fc(op->body);
      double points = 1;
      for (int64_t d : t->shape) points *= static_cast<double>(d);
      for (const IterVar& r : op->reduce_axes) points *= static_cast<double>(r->extent);
      dag.flops_ += fc.flops * points;
    } else {
      text += "placeholder" + shape_text(t->shape) + " " + t->dtype.to_string();
    }
    text += "\n";
  }
  text += "args:";
  for (const Tensor& t : dag.args_) text += " " + printer.name_of(t.get());
  dag.canonical_ = text;
  dag.key_ = workload_key_of(text);
  return dag;
}

int ComputeDAG::index_of(const Tensor& t) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i] == t) return static_cast<int>(i);
  return -1;
}

bool ComputeDAG::is_output(const Tensor& t) const {
  for (const Tensor& a : args_)
    if (a == t && !is_placeholder(t)) return true;
  return false;
}

std::string ComputeDAG::to_string() const {
  IRPrinter printer;
  std::string out;
  for (const Tensor& t : tensors_) {
    out += t->name + shape_text(t->shape) + " " + t->dtype.to_string();
    if (const ComputeOpNode* op = compute_op(t)) {
      out += " = compute(";
      for (size_t i = 0; i < op->axes.size(); ++i) out += (i ? ", " : "") + printer.name_of(op->axes[i]->var.node());
      out += ") " + printer.print(op->body);
    } else {
      out += " = placeholder";
    }
    out += "\n";
  }
  return out;
}

}  // namespace tessera
