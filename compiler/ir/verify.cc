#include "compiler/ir/verify.h"

#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/printer.h"

namespace tessera {
namespace {

class Verifier final : public IRVisitor {
 public:
  Verifier(const PrimFunc& func, const VerifyOptions& options) : options_(options) {
    for (const Buffer& b : func.params) {
      params_.insert(b.get());
      live_.insert(b.get());
    }
  }

  Status result() const { return error_; }

 protected:
  using IRVisitor::visit;

  void visit(const VarNode* op) override {
    if (!bound_.count(op)) fail("variable " + op->name + " is not bound by an enclosing loop");
  }

  void visit(const LoadNode* op) override {
    check_buffer(op->buffer, "loaded");
    if (!op->index.dtype().is_integral()) fail("load of " + op->buffer->name + " has a non-integer index");
    IRVisitor::visit(op);
  }

  void visit(const TensorReadNode* op) override {
    if (options_.stage == IrStage::kFlat)
      fail("tensor read of " + op->tensor->name + " is left after storage flattening");
    IRVisitor::visit(op);
  }

  void visit(const ReduceNode* op) override {
    fail("reduction " + std::string(reduce_op_name(op->op)) + " is left in loop IR");
    IRVisitor::visit(op);
  }

  void visit(const StoreNode* op) override {
    check_buffer(op->buffer, "stored");
    if (!op->index.dtype().is_integral()) fail("store to " + op->buffer->name + " has a non-integer index");
    if (op->value.dtype().element_of() != op->buffer->dtype)
      fail("store to " + op->buffer->name + " writes " + op->value.dtype().to_string() + " into a " +
           op->buffer->dtype.to_string() + " buffer");
    IRVisitor::visit(op);
  }

  void visit(const ForNode* op) override {
    const std::string where = "loop " + op->var.name();
    if (op->min.dtype() != kIndexType || op->extent.dtype() != kIndexType || op->var.dtype() != kIndexType)
      fail(where + " has a variable, min or extent that is not a scalar " + kIndexType.to_string());
    int64_t extent = 0;
    const bool constant = is_const_int(op->extent, &extent);
    if ((op->loop_kind == LoopKind::kVectorized || op->loop_kind == LoopKind::kUnrolled) && !constant)
      fail(std::string(loop_kind_name(op->loop_kind)) + " " + where + " has a non-constant extent");
    if (constant && extent < 0) fail(where + " has a negative extent " + std::to_string(extent));
    visit_expr(op->min);
    visit_expr(op->extent);
    if (!bound_.insert(op->var.node()).second) {
      fail(where + " rebinds the variable of an enclosing loop");
      return;
    }
    visit_stmt(op->body);
    bound_.erase(op->var.node());
  }

  void visit(const IfThenElseNode* op) override {
    if (op->cond.dtype() != DType::boolean()) fail("branch condition " + to_string(op->cond) + " is not a bool");
    IRVisitor::visit(op);
  }

  void visit(const AllocateNode* op) override {
    const BufferNode* b = op->buffer.get();
    if (params_.count(b)) fail("parameter " + b->name + " is allocated");
    if (!live_.insert(b).second) {
      fail("buffer " + b->name + " is allocated again inside its own allocation");
      return;
    }
    visit_stmt(op->body);
    live_.erase(b);
  }

 private:
  void fail(const std::string& what) {
    if (error_.is_ok()) error_ = Status(ErrorCode::kInternal, "verify: " + what);
  }
  void check_buffer(const Buffer& b, const char* how) {
    if (!live_.count(b.get())) fail("buffer " + b->name + " is " + how + " outside its allocation");
  }

  const VerifyOptions& options_;
  std::unordered_set<const VarNode*> bound_;
  std::unordered_set<const BufferNode*> params_, live_;
  Status error_;
};

}  // namespace

Status verify(const PrimFunc& func, const VerifyOptions& options) {
  if (!func.body.defined()) return Status(ErrorCode::kInternal, "verify: function " + func.name + " has no body");
  Verifier v(func, options);
  v(func.body);
  Status st = v.result();
  if (st.is_ok()) return st;
  return Status(ErrorCode::kInternal, st.message() + " (in function " + func.name + ")");
}

}  // namespace tessera
