#include "compiler/ir/functor.h"

namespace tessera {

void IRVisitor::visit_expr(const Expr& e) {
  if (!e.defined()) return;
  const ExprNode* n = e.get();
  switch (n->kind) {
    case ExprKind::kIntImm: return visit(static_cast<const IntImmNode*>(n));
    case ExprKind::kFloatImm: return visit(static_cast<const FloatImmNode*>(n));
    case ExprKind::kVar: return visit(static_cast<const VarNode*>(n));
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
    case ExprKind::kAnd:
    case ExprKind::kOr: return visit(static_cast<const BinaryNode*>(n));
    case ExprKind::kNot: return visit(static_cast<const NotNode*>(n));
    case ExprKind::kSelect: return visit(static_cast<const SelectNode*>(n));
    case ExprKind::kCast: return visit(static_cast<const CastNode*>(n));
    case ExprKind::kCall: return visit(static_cast<const CallNode*>(n));
    case ExprKind::kLoad: return visit(static_cast<const LoadNode*>(n));
    case ExprKind::kRamp: return visit(static_cast<const RampNode*>(n));
    case ExprKind::kBroadcast: return visit(static_cast<const BroadcastNode*>(n));
    case ExprKind::kTensorRead: return visit(static_cast<const TensorReadNode*>(n));
    case ExprKind::kReduce: return visit(static_cast<const ReduceNode*>(n));
  }
}

void IRVisitor::visit_stmt(const Stmt& s) {
  if (!s.defined()) return;
  const StmtNode* n = s.get();
  switch (n->kind) {
    case StmtKind::kStore: return visit(static_cast<const StoreNode*>(n));
    case StmtKind::kFor: return visit(static_cast<const ForNode*>(n));
    case StmtKind::kSeq: return visit(static_cast<const SeqNode*>(n));
    case StmtKind::kIfThenElse: return visit(static_cast<const IfThenElseNode*>(n));
    case StmtKind::kAllocate: return visit(static_cast<const AllocateNode*>(n));
    case StmtKind::kAttr: return visit(static_cast<const AttrNode*>(n));
  }
}

void IRVisitor::visit(const BinaryNode* op) {
  visit_expr(op->a);
  visit_expr(op->b);
}
void IRVisitor::visit(const NotNode* op) {
  visit_expr(op->a);
}
void IRVisitor::visit(const SelectNode* op) {
  visit_expr(op->cond);
  visit_expr(op->true_value);
  visit_expr(op->false_value);
}
void IRVisitor::visit(const CastNode* op) {
  visit_expr(op->value);
}
void IRVisitor::visit(const CallNode* op) {
  for (const Expr& a : op->args) visit_expr(a);
}
void IRVisitor::visit(const LoadNode* op) {
  visit_expr(op->index);
  if (op->predicate.defined()) visit_expr(op->predicate);
}
void IRVisitor::visit(const RampNode* op) {
  visit_expr(op->base);
  visit_expr(op->stride);
}
void IRVisitor::visit(const BroadcastNode* op) {
  visit_expr(op->value);
}
void IRVisitor::visit(const TensorReadNode* op) {
  for (const Expr& i : op->indices) visit_expr(i);
}
void IRVisitor::visit(const ReduceNode* op) {
  visit_expr(op->source);
}
void IRVisitor::visit(const StoreNode* op) {
  visit_expr(op->value);
  visit_expr(op->index);
  if (op->predicate.defined()) visit_expr(op->predicate);
}
void IRVisitor::visit(const ForNode* op) {
  visit_expr(op->min);
  visit_expr(op->extent);
  visit_stmt(op->body);
}
void IRVisitor::visit(const SeqNode* op) {
  for (const Stmt& s : op->stmts) visit_stmt(s);
}
void IRVisitor::visit(const IfThenElseNode* op) {
  visit_expr(op->cond);
  visit_stmt(op->then_case);
  visit_stmt(op->else_case);
}
void IRVisitor::visit(const AllocateNode* op) {
  visit_stmt(op->body);
}
void IRVisitor::visit(const AttrNode* op) {
  visit_stmt(op->body);
}

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  const ExprNode* n = e.get();
  switch (n->kind) {
    case ExprKind::kIntImm: return visit(static_cast<const IntImmNode*>(n), e);
    case ExprKind::kFloatImm: return visit(static_cast<const FloatImmNode*>(n), e);
    case ExprKind::kVar: return visit(static_cast<const VarNode*>(n), e);
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
    case ExprKind::kAnd:
    case ExprKind::kOr: return visit(static_cast<const BinaryNode*>(n), e);
    case ExprKind::kNot: return visit(static_cast<const NotNode*>(n), e);
    case ExprKind::kSelect: return visit(static_cast<const SelectNode*>(n), e);
    case ExprKind::kCast: return visit(static_cast<const CastNode*>(n), e);
    case ExprKind::kCall: return visit(static_cast<const CallNode*>(n), e);
    case ExprKind::kLoad: return visit(static_cast<const LoadNode*>(n), e);
    case ExprKind::kRamp: return visit(static_cast<const RampNode*>(n), e);
    case ExprKind::kBroadcast: return visit(static_cast<const BroadcastNode*>(n), e);
    case ExprKind::kTensorRead: return visit(static_cast<const TensorReadNode*>(n), e);
    case ExprKind::kReduce: return visit(static_cast<const ReduceNode*>(n), e);
  }
  return e;
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  const StmtNode* n = s.get();
  switch (n->kind) {
    case StmtKind::kStore: return visit(static_cast<const StoreNode*>(n), s);
    case StmtKind::kFor: return visit(static_cast<const ForNode*>(n), s);
    case StmtKind::kSeq: return visit(static_cast<const SeqNode*>(n), s);
    case StmtKind::kIfThenElse: return visit(static_cast<const IfThenElseNode*>(n), s);
    case StmtKind::kAllocate: return visit(static_cast<const AllocateNode*>(n), s);
    case StmtKind::kAttr: return visit(static_cast<const AttrNode*>(n), s);
  }
  return s;
}

Expr IRMutator::visit(const BinaryNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return make_binary(op->kind, a, b);
}
Expr IRMutator::visit(const NotNode* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : make_not(a);
}
Expr IRMutator::visit(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return make_select(c, t, f);
}
Expr IRMutator::visit(const CastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : make_cast(op->dtype.with_lanes(v.dtype().lanes), v);
}
Expr IRMutator::visit(const CallNode* op, const Expr& self) {
  std::vector<Expr> args;
  bool changed = false;
  for (const Expr& a : op->args) {
    args.push_back(mutate(a));
    changed |= !args.back().same_as(a);
  }
  return changed ? make_call(op->op, std::move(args)) : self;
}
Expr IRMutator::visit(const LoadNode* op, const Expr& self) {
  Expr i = mutate(op->index);
  Expr p = op->predicate.defined() ? mutate(op->predicate) : op->predicate;
  return i.same_as(op->index) && p.same_as(op->predicate) ? self : make_load(op->buffer, i, p);
}
Expr IRMutator::visit(const RampNode* op, const Expr& self) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return self;
  return make_ramp(b, s, op->lanes);
}
Expr IRMutator::visit(const BroadcastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : make_broadcast(v, op->lanes);
}
Expr IRMutator::visit(const TensorReadNode* op, const Expr& self) {
  std::vector<Expr> idx;
  bool changed = false;
  for (const Expr& i : op->indices) {
    idx.push_back(mutate(i));
    changed |= !idx.back().same_as(i);
  }
  return changed ? make_tensor_read(op->tensor, std::move(idx)) : self;
}
Expr IRMutator::visit(const ReduceNode* op, const Expr& self) {
  Expr s = mutate(op->source);
  return s.same_as(op->source) ? self : make_reduce(op->op, s, op->axes);
}

Stmt IRMutator::visit(const StoreNode* op, const Stmt& self) {
  Expr v = mutate(op->value), i = mutate(op->index);
  Expr p = op->predicate.defined() ? mutate(op->predicate) : op->predicate;
  if (v.same_as(op->value) && i.same_as(op->index) && p.same_as(op->predicate)) return self;
  return make_store(op->buffer, v, i, p);
}
Stmt IRMutator::visit(const ForNode* op, const Stmt& self) {
  Expr m = mutate(op->min), e = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (m.same_as(op->min) && e.same_as(op->extent) && b.same_as(op->body)) return self;
  return make_for(op->var, m, e, op->loop_kind, b);
}
Stmt IRMutator::visit(const SeqNode* op, const Stmt& self) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (const Stmt& s : op->stmts) {
    stmts.push_back(mutate(s));
    changed |= !stmts.back().same_as(s);
  }
  return changed ? make_seq(std::move(stmts)) : self;
}
Stmt IRMutator::visit(const IfThenElseNode* op, const Stmt& self) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return make_if(c, t, e);
}
Stmt IRMutator::visit(const AllocateNode* op, const Stmt& self) {
  Stmt b = mutate(op->body);
  return b.same_as(op->body) ? self : make_allocate(op->buffer, b);
}
Stmt IRMutator::visit(const AttrNode* op, const Stmt& self) {
  Stmt b = mutate(op->body);
  return b.same_as(op->body) ? self : make_attr(op->attr, op->value, b);
}

}  // namespace tessera
