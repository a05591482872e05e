// Structural equality and hashing: free variables by identity, bound ones
// by position, floats at their precision.
#include "compiler/ir/structural.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/op.h"

namespace tessera {
namespace {

Stmt fill_loop(const Buffer& a, const Var& i, float value, LoopKind kind = LoopKind::kSerial) {
  return make_for(i, 0, 4, kind, make_store(a, Expr(value), i));
}

TEST(StructuralEqual, SameShapeBuiltTwiceIsEqual) {
  Var i("i");
  Expr a = i * 4 + 1, b = i * 4 + 1;
  EXPECT_FALSE(a.same_as(b));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEqual, FreeVariablesAreComparedByIdentity) {
  Var i("i"), j("i");
  EXPECT_FALSE(structural_equal(i + 1, j + 1));
  EXPECT_FALSE(structural_equal(Expr(i), Expr(j)));
}

TEST(StructuralEqual, TypesAndConstantsMatter) {
  EXPECT_FALSE(structural_equal(Expr(1), make_int(1, DType::i32())));
  EXPECT_FALSE(structural_equal(Expr(1), Expr(2)));
  EXPECT_FALSE(structural_equal(Expr(1.0f), make_float(1.0, DType::f64())));
}

TEST(StructuralEqual, LoopVariablesAreMatchedByPosition) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Var i("i"), j("j");
  EXPECT_TRUE(structural_equal(fill_loop(a, i, 1.0f), fill_loop(a, j, 1.0f)));
  EXPECT_EQ(structural_hash(fill_loop(a, i, 1.0f)), structural_hash(fill_loop(a, j, 1.0f)));
  EXPECT_FALSE(structural_equal(fill_loop(a, i, 1.0f), fill_loop(a, j, 2.0f)));
  EXPECT_FALSE(structural_equal(fill_loop(a, i, 1.0f), fill_loop(a, j, 1.0f, LoopKind::kParallel)));
}

TEST(StructuralEqual, ALoopVariableIsNotAFreeOne) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Var i("i"), j("j"), n("n");
  // for i { A[i] = ... }  vs  for j { A[n] = ... }
  Stmt x = make_for(i, 0, 4, LoopKind::kSerial, make_store(a, 1.0f, i));
  Stmt y = make_for(j, 0, 4, LoopKind::kSerial, make_store(a, 1.0f, n));
  EXPECT_FALSE(structural_equal(x, y));
}

TEST(StructuralEqual, NestedLoopsMatchEachLevel) {
  Buffer a = make_buffer("A", DType::f32(), {16});
  Var i("i"), j("j"), p("p"), q("q");
  auto nest = [&](const Var& outer, const Var& inner, bool swap) {
    Expr index = swap ? inner * 4 + outer : outer * 4 + inner;
    return make_for(outer, 0, 4, LoopKind::kSerial,
                    make_for(inner, 0, 4, LoopKind::kSerial, make_store(a, 0.0f, index)));
  };
  EXPECT_TRUE(structural_equal(nest(i, j, false), nest(p, q, false)));
  EXPECT_FALSE(structural_equal(nest(i, j, false), nest(p, q, true)));
  EXPECT_NE(structural_hash(nest(i, j, false)), structural_hash(nest(p, q, true)));
}

TEST(StructuralEqual, AllocatedBuffersAreMatchedByPositionAndType) {
  Buffer out = make_buffer("out", DType::f32(), {4});
  auto with_tmp = [&](std::vector<int64_t> shape) {
    Buffer tmp = make_buffer("tmp", DType::f32(), shape, MemoryScope::kLocal);
    return make_allocate(tmp, make_seq({make_store(tmp, 1.0f, 0), make_store(out, make_load(tmp, 0), 0)}));
  };
  EXPECT_TRUE(structural_equal(with_tmp({4}), with_tmp({4})));
  EXPECT_EQ(structural_hash(with_tmp({4})), structural_hash(with_tmp({4})));
  EXPECT_FALSE(structural_equal(with_tmp({4}), with_tmp({8})));
}

TEST(StructuralEqual, Float32ConstantsCompareAsFloats) {
  Expr wide = make_float(0.1), narrow = make_float(static_cast<float>(0.1));
  EXPECT_TRUE(structural_equal(wide, narrow));
  EXPECT_EQ(structural_hash(wide), structural_hash(narrow));
  EXPECT_FALSE(structural_equal(make_float(0.1, DType::f64()), make_float(static_cast<float>(0.1), DType::f64())));
  EXPECT_TRUE(structural_equal(make_float(NAN), make_float(NAN)));
  EXPECT_TRUE(structural_equal(make_float(0.0), make_float(-0.0)));
  EXPECT_EQ(structural_hash(make_float(0.0)), structural_hash(make_float(-0.0)));
}

TEST(StructuralEqual, IfWithAndWithoutElseDiffer) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Var i("i");
  Stmt then_case = make_store(a, 1.0f, 0);
  EXPECT_FALSE(structural_equal(make_if(i < 2, then_case), make_if(i < 2, then_case, then_case)));
  EXPECT_TRUE(structural_equal(make_if(i < 2, then_case), make_if(i < 2, make_store(a, 1.0f, 0))));
}

TEST(StructuralEqual, FunctionsMatchParametersByPosition) {
  Buffer a = make_buffer("A", DType::f32(), {4}), b = make_buffer("B", DType::f32(), {4});
  Var i("i"), j("j");
  PrimFunc f{"f", {a}, fill_loop(a, i, 1.0f)};
  PrimFunc g{"g", {b}, fill_loop(b, j, 1.0f)};
  EXPECT_TRUE(structural_equal(f, g));
  PrimFunc h{"h", {make_buffer("C", DType::f32(), {8})}, fill_loop(b, j, 1.0f)};
  EXPECT_FALSE(structural_equal(f, h));
}

}  // namespace
}  // namespace tessera
