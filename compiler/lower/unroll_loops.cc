#include "compiler/lower/unroll_loops.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/util.h"

namespace tessera {
namespace {

Stmt unroll(const ForNode* loop, const Stmt& body, int64_t extent) {
  std::vector<Stmt> copies;
  copies.reserve(extent);
  for (int64_t i = 0; i < extent; ++i) copies.push_back(substitute(body, loop->var, loop->min + make_int(i)));
  return make_seq(std::move(copies));
}

class Unroller final : public IRMutator {
 public:
  // Statement instances executed by the last mutated statement.
  int64_t steps = 0;

 protected:
  using IRMutator::visit;

  Stmt visit(const StoreNode* op, const Stmt& self) override {
    steps = 1;
    return self;
  }
  Stmt visit(const SeqNode* op, const Stmt& self) override {
    std::vector<Stmt> out;
    int64_t total = 0;
    for (const Stmt& s : op->stmts) {
      out.push_back(mutate(s));
      total += steps;
    }
    steps = total;
    return make_seq(std::move(out));
  }
  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    Stmt t = mutate(op->then_case);
    int64_t st = steps;
    Stmt e = mutate(op->else_case);
    steps = std::max(st, op->else_case.defined() ? steps : 0) + 1;
    return make_if(op->cond, t, e);
  }
  Stmt visit(const AttrNode* op, const Stmt& self) override {
    if (op->attr != AttrKind::kAutoUnrollMaxStep) return IRMutator::visit(op, self);
    int64_t saved = max_step_;
    max_step_ = op->value;
    Stmt body = mutate(op->body);
    max_step_ = saved;
    return body;  // the hint is spent
  }
  Stmt visit(const ForNode* op, const Stmt& self) override {
    // A tensorized nest is the code generator's to emit, loops and all.
    if (op->loop_kind == LoopKind::kTensorized) {
      steps = int64_t{1} << 30;
      return self;
    }
    Stmt body = mutate(op->body);
    int64_t extent = -1;
    bool constant = is_const_int(op->extent, &extent);
    int64_t total = constant ? steps * extent : 1 << 30;
    if (op->loop_kind == LoopKind::kUnrolled && constant) {
      steps = total;
      return unroll(op, body, extent);
    }
    if (op->loop_kind == LoopKind::kSerial && constant && max_step_ > 0 && total <= max_step_) {
      steps = total;
      return unroll(op, body, extent);
    }
    steps = total;
    LoopKind kind = op->loop_kind == LoopKind::kUnrolled ? LoopKind::kSerial : op->loop_kind;
    return make_for(op->var, op->min, op->extent, kind, body);
  }

 private:
  int64_t max_step_ = 0;
};

}  // namespace

Stmt unroll_loops(const Stmt& s) {
  return Unroller()(s);
}

}  // namespace tessera
