// The IR verifier: a well-formed kernel passes, and each invariant it checks
// is caught with a message that names the violation. Nodes the builders
// would refuse are made directly, as a faulty pass could.
#include "compiler/ir/verify.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/te/tensor.h"

namespace tessera {
namespace {

Stmt raw(StmtNode* node) {
  return Stmt(Ref<const StmtNode>(node));
}

// A kernel over one float32 parameter A[16].
PrimFunc kernel(Stmt body, Buffer a) {
  return PrimFunc{"k", {std::move(a)}, std::move(body)};
}

// Expects verify() to fail with kInternal and a message containing `what`.
void expect_violation(const PrimFunc& f, const std::string& what, IrStage stage = IrStage::kFlat) {
  Status st = verify(f, VerifyOptions{.stage = stage});
  ASSERT_FALSE(st.is_ok()) << "no violation found; expected: " << what;
  EXPECT_EQ(st.code(), ErrorCode::kInternal);
  EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
}

class Verify : public ::testing::Test {
 protected:
  Buffer a = make_buffer("A", DType::f32(), {16});
  Var i{"i"};
  Var j{"j"};
};

TEST_F(Verify, WellFormedKernelPasses) {
  Buffer t = make_buffer("T", DType::f32(), {4}, MemoryScope::kLocal);
  Stmt fill = make_for(j, 0, 4, LoopKind::kSerial, make_store(t, make_load(a, i * 4 + j), j));
  Stmt back = make_for(j, 0, 4, LoopKind::kUnrolled, make_store(a, make_load(t, j) * 2.0f, i * 4 + j));
  Stmt body = make_for(i, 0, 4, LoopKind::kParallel, make_allocate(t, make_seq({fill, back})));
  EXPECT_TRUE(verify(kernel(body, a)).is_ok()) << verify(kernel(body, a)).to_string();
}

TEST_F(Verify, UnboundVariable) {
  expect_violation(kernel(make_store(a, 1.0f, i), a), "variable i is not bound by an enclosing loop");
}

TEST_F(Verify, LoopVariableUsedAfterItsLoop) {
  Stmt body = make_seq({make_for(i, 0, 16, LoopKind::kSerial, make_store(a, 0.0f, i)), make_store(a, 1.0f, i)});
  expect_violation(kernel(body, a), "variable i is not bound");
}

TEST_F(Verify, LoopRebindsTheVariableOfAnEnclosingLoop) {
  Stmt inner = make_for(i, 0, 4, LoopKind::kSerial, make_store(a, 0.0f, i));
  expect_violation(kernel(make_for(i, 0, 4, LoopKind::kSerial, inner), a),
                   "loop i rebinds the variable of an enclosing loop");
}

TEST_F(Verify, SiblingLoopsMayShareAVariable) {
  Stmt one = make_for(i, 0, 16, LoopKind::kSerial, make_store(a, 0.0f, i));
  Stmt two = make_for(i, 0, 16, LoopKind::kSerial, make_store(a, 1.0f, i));
  EXPECT_TRUE(verify(kernel(make_seq({one, two}), a)).is_ok());
}

TEST_F(Verify, LoopExtentOfAnotherType) {
  Stmt loop = raw(new ForNode(i, make_int(0), make_int(16, DType::i32()), LoopKind::kSerial, make_store(a, 0.0f, i)));
  expect_violation(kernel(loop, a), "loop i has a variable, min or extent that is not a scalar int64");
}

TEST_F(Verify, VectorizedLoopWithSymbolicExtent) {
  Stmt inner = make_for(j, 0, i, LoopKind::kVectorized, make_store(a, 0.0f, j));
  expect_violation(kernel(make_for(i, 0, 4, LoopKind::kSerial, inner), a),
                   "vectorized loop j has a non-constant extent");
}

TEST_F(Verify, SerialLoopWithSymbolicExtentIsFine) {
  Stmt inner = make_for(j, 0, i, LoopKind::kSerial, make_store(a, 0.0f, j));
  EXPECT_TRUE(verify(kernel(make_for(i, 0, 4, LoopKind::kSerial, inner), a)).is_ok());
}

TEST_F(Verify, NegativeExtent) {
  expect_violation(kernel(make_for(i, 0, -2, LoopKind::kSerial, make_store(a, 0.0f, i)), a),
                   "loop i has a negative extent -2");
}

TEST_F(Verify, LoopBoundsSeeOnlyEnclosingLoops) {
  // The extent may not use the loop's own variable.
  expect_violation(kernel(make_for(i, 0, i, LoopKind::kSerial, make_store(a, 0.0f, i)), a), "variable i is not bound");
}

TEST_F(Verify, BufferUsedOutsideItsAllocation) {
  Buffer t = make_buffer("T", DType::f32(), {16}, MemoryScope::kLocal);
  Stmt body = make_for(i, 0, 16, LoopKind::kSerial, make_store(a, make_load(t, i), i));
  expect_violation(kernel(body, a), "buffer T is loaded outside its allocation");
  Stmt store = make_for(i, 0, 16, LoopKind::kSerial, make_store(t, 0.0f, i));
  expect_violation(kernel(store, a), "buffer T is stored outside its allocation");
}

TEST_F(Verify, BufferAllocatedInsideItsOwnAllocation) {
  Buffer t = make_buffer("T", DType::f32(), {16}, MemoryScope::kLocal);
  Stmt body = make_allocate(t, make_allocate(t, make_for(i, 0, 16, LoopKind::kSerial, make_store(t, 0.0f, i))));
  expect_violation(kernel(body, a), "buffer T is allocated again inside its own allocation");
}

TEST_F(Verify, ParameterAllocated) {
  Stmt body = raw(new AllocateNode(a, make_for(i, 0, 16, LoopKind::kSerial, make_store(a, 0.0f, i))));
  expect_violation(kernel(body, a), "parameter A is allocated");
}

TEST_F(Verify, StoreOfTheWrongType) {
  Stmt store = raw(new StoreNode(a, make_int(1, DType::i32()), i));
  expect_violation(kernel(make_for(i, 0, 16, LoopKind::kSerial, store), a),
                   "store to A writes int32 into a float32 buffer");
}

TEST_F(Verify, NonIntegerIndex) {
  Stmt store = raw(new StoreNode(a, make_float(0.0), make_float(1.0)));
  expect_violation(kernel(store, a), "store to A has a non-integer index");
}

TEST_F(Verify, BranchOnANonBool) {
  Stmt branch = raw(new IfThenElseNode(i, make_store(a, 0.0f, i), Stmt()));
  expect_violation(kernel(make_for(i, 0, 16, LoopKind::kSerial, branch), a), "branch condition i is not a bool");
}

TEST_F(Verify, TensorReadAllowedOnlyBeforeFlattening) {
  Tensor x = placeholder({16}, DType::f32(), "X");
  Stmt body = make_for(i, 0, 16, LoopKind::kSerial, make_store(a, make_tensor_read(x, {i}), i));
  EXPECT_TRUE(verify(kernel(body, a), VerifyOptions{.stage = IrStage::kLoopNests}).is_ok());
  expect_violation(kernel(body, a), "tensor read of X is left after storage flattening");
}

TEST_F(Verify, ReduceIsNeverLoopIr) {
  IterVar k = make_iter_var("k", 4, IterKind::kReduce);
  Expr total = make_reduce(ReduceOp::kSum, make_load(a, k->var), {k});
  Stmt body = make_for(i, 0, 16, LoopKind::kSerial, make_store(a, total, i));
  expect_violation(kernel(body, a), "reduction sum is left in loop IR", IrStage::kLoopNests);
}

TEST_F(Verify, MessageNamesTheFunction) {
  Status st = verify(kernel(make_store(a, 1.0f, i), a));
  EXPECT_NE(st.message().find("in function k"), std::string::npos) << st.message();
  EXPECT_EQ(verify(PrimFunc{"empty", {}, Stmt()}).code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace tessera
