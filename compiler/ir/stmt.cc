#include "compiler/ir/stmt.h"

#include "base/check.h"

namespace tessera {

Stmt make_store(Buffer buffer, Expr value, Expr index, Expr predicate) {
  TESSERA_CHECK(buffer.defined() && value.defined() && index.defined()) << "Store with an undefined part";
  TESSERA_CHECK(value.dtype() == buffer->dtype.with_lanes(index.dtype().lanes))
      << "Store of " << value.dtype().to_string() << " to " << buffer->name << " of " << buffer->dtype.to_string()
      << " at " << index.dtype().lanes << " lanes";
  TESSERA_CHECK(!predicate.defined() || predicate.dtype() == DType::boolean(index.dtype().lanes))
      << "Store to " << buffer->name << " with a predicate of type " << predicate.dtype().to_string();
  return Stmt(
      Ref<const StmtNode>(new StoreNode(std::move(buffer), std::move(value), std::move(index), std::move(predicate))));
}

const char* loop_kind_name(LoopKind kind) {
  switch (kind) {
    case LoopKind::kSerial: return "for";
    case LoopKind::kParallel: return "parallel";
    case LoopKind::kVectorized: return "vectorized";
    case LoopKind::kUnrolled: return "unrolled";
    case LoopKind::kTensorized: return "tensorized";
  }
  return "?";
}

Stmt make_for(Var var, Expr min, Expr extent, LoopKind kind, Stmt body) {
  TESSERA_CHECK(var.defined() && min.defined() && extent.defined() && body.defined()) << "For with an undefined part";
  TESSERA_CHECK(min.dtype() == kIndexType && extent.dtype() == kIndexType)
      << "For " << var.name() << " over [" << min.dtype().to_string() << ", +" << extent.dtype().to_string()
      << "), not index type";
  return Stmt(
      Ref<const StmtNode>(new ForNode(std::move(var), std::move(min), std::move(extent), kind, std::move(body))));
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
  TESSERA_CHECK(cond.defined() && then_case.defined()) << "IfThenElse with an undefined part";
  TESSERA_CHECK(cond.dtype() == DType::boolean()) << "IfThenElse condition of type " << cond.dtype().to_string();
  return Stmt(Ref<const StmtNode>(new IfThenElseNode(std::move(cond), std::move(then_case), std::move(else_case))));
}

Stmt make_allocate(Buffer buffer, Stmt body) {
  TESSERA_CHECK(buffer.defined()) << "Allocate of an undefined buffer";
  TESSERA_CHECK(buffer->scope != MemoryScope::kGlobal) << "Allocate of global buffer " << buffer->name;
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
