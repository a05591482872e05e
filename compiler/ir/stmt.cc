#include "compiler/ir/stmt.h"

#include <cassert>

namespace tessera {

Stmt make_store(Buffer buffer, Expr value, Expr index) {
  assert(buffer.defined() && value.defined() && index.defined());
  assert(value.dtype() == buffer->dtype.with_lanes(index.dtype().lanes));
  return Stmt(Ref<const StmtNode>(new StoreNode(std::move(buffer), std::move(value), std::move(index))));
}

const char* loop_kind_name(LoopKind kind) {
  switch (kind) {
    case LoopKind::kSerial: return "for";
    case LoopKind::kParallel: return "parallel";
    case LoopKind::kVectorized: return "vectorized";
    case LoopKind::kUnrolled: return "unrolled";
  }
  return "?";
}

Stmt make_for(Var var, Expr min, Expr extent, LoopKind kind, Stmt body) {
  assert(var.defined() && min.dtype() == kIndexType && extent.dtype() == kIndexType && body.defined());
  return Stmt(Ref<const StmtNode>(
      new ForNode(std::move(var), std::move(min), std::move(extent), kind, std::move(body))));
}

Stmt make_seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const auto* seq = s.as<SeqNode>()) {
      flat.insert(flat.end(), seq->stmts.begin(), seq->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(Ref<const StmtNode>(new SeqNode(std::move(flat))));
}

Stmt make_if(Expr cond, Stmt then_case, Stmt else_case) {
  assert(cond.dtype() == DType::boolean() && then_case.defined());
  return Stmt(Ref<const StmtNode>(new IfThenElseNode(std::move(cond), std::move(then_case), std::move(else_case))));
}

Stmt make_allocate(Buffer buffer, Stmt body) {
  assert(buffer->scope != MemoryScope::kGlobal);
  return Stmt(Ref<const StmtNode>(new AllocateNode(std::move(buffer), std::move(body))));
}

const char* attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::kAutoUnrollMaxStep: return "auto_unroll_max_step";
  }
  return "?";
}

Stmt make_attr(AttrKind kind, int64_t value, Stmt body) {
  return Stmt(Ref<const StmtNode>(new AttrNode(kind, value, std::move(body))));
}

}  // namespace tessera
