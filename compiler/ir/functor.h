// Visitor and mutator bases over expressions and statements.
//
// Dispatch switches over the kind lists, so a new kind must be handled here.
// The mutator rebuilds a node only when a child changed, so unchanged
// subtrees stay shared.
#pragma once

#include "compiler/ir/stmt.h"

namespace tessera {

/// Walks every node; override a `visit` to act, call the base to recurse.
class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  void operator()(const Expr& e) { visit_expr(e); }
  void operator()(const Stmt& s) { visit_stmt(s); }

  void visit_expr(const Expr& e);
  void visit_stmt(const Stmt& s);

 protected:
  virtual void visit(const IntImmNode*) {}
  virtual void visit(const FloatImmNode*) {}
  virtual void visit(const VarNode*) {}
  virtual void visit(const BinaryNode* op);
  virtual void visit(const NotNode* op);
  virtual void visit(const SelectNode* op);
  virtual void visit(const CastNode* op);
  virtual void visit(const CallNode* op);
  virtual void visit(const LoadNode* op);
  virtual void visit(const RampNode* op);
  virtual void visit(const BroadcastNode* op);
  virtual void visit(const TensorReadNode* op);
  virtual void visit(const ReduceNode* op);

  virtual void visit(const StoreNode* op);
  virtual void visit(const ForNode* op);
  virtual void visit(const SeqNode* op);
  virtual void visit(const IfThenElseNode* op);
  virtual void visit(const AllocateNode* op);
  virtual void visit(const AttrNode* op);
};

/// Rewrites a tree; each `visit` returns the replacement of its node.
class IRMutator {
 public:
  virtual ~IRMutator() = default;
  Expr operator()(const Expr& e) { return mutate(e); }
  Stmt operator()(const Stmt& s) { return mutate(s); }

  Expr mutate(const Expr& e);
  Stmt mutate(const Stmt& s);

 protected:
  virtual Expr visit(const IntImmNode* op, const Expr& self) { return self; }
  virtual Expr visit(const FloatImmNode* op, const Expr& self) { return self; }
  virtual Expr visit(const VarNode* op, const Expr& self) { return self; }
  virtual Expr visit(const BinaryNode* op, const Expr& self);
  virtual Expr visit(const NotNode* op, const Expr& self);
  virtual Expr visit(const SelectNode* op, const Expr& self);
  virtual Expr visit(const CastNode* op, const Expr& self);
  virtual Expr visit(const CallNode* op, const Expr& self);
  virtual Expr visit(const LoadNode* op, const Expr& self);
  virtual Expr visit(const RampNode* op, const Expr& self);
  virtual Expr visit(const BroadcastNode* op, const Expr& self);
  virtual Expr visit(const TensorReadNode* op, const Expr& self);
  virtual Expr visit(const ReduceNode* op, const Expr& self);

  virtual Stmt visit(const StoreNode* op, const Stmt& self);
  virtual Stmt visit(const ForNode* op, const Stmt& self);
  virtual Stmt visit(const SeqNode* op, const Stmt& self);
  virtual Stmt visit(const IfThenElseNode* op, const Stmt& self);
  virtual Stmt visit(const AllocateNode* op, const Stmt& self);
  virtual Stmt visit(const AttrNode* op, const Stmt& self);
};

}  // namespace tessera
