// The text form: reads like the loop nest and says everything needed to
// parse it back (names, scopes, typed constants).
#include "compiler/ir/printer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/op.h"
#include "compiler/te/tensor.h"

namespace tessera {
namespace {

TEST(Printer, LoopNestReadsLikeCode) {
  Buffer a = make_buffer("A", DType::f32(), {8, 4}), b = make_buffer("B", DType::f32(), {8, 4});
  Var i("i"), j("j");
  Stmt s = make_for(i, 0, 8, LoopKind::kParallel,
                    make_for(j, 2, 2, LoopKind::kUnrolled, make_store(b, make_load(a, i * 4 + j) * 2.0f, i * 4 + j)));
  EXPECT_EQ(to_string(s),
            "parallel i in [0, 8) {\n"
            "  unrolled j in [2, +2) {\n"
            "    B[((i*4) + j)] = (A[((i*4) + j)]*2.0f)\n"
            "  }\n"
            "}\n");
}

TEST(Printer, FunctionListsItsParameters) {
  Buffer a = make_buffer("A", DType::f32(), {2, 3});
  PrimFunc f{"k", {a}, make_store(a, 0.0f, 0)};
  EXPECT_EQ(to_string(f), "func k(A: float32[2, 3]) {\n  A[0] = 0.0f\n}\n");
}

TEST(Printer, DistinctVariablesWithOneNameGetSuffixes) {
  Var n1("n"), n2("n");
  EXPECT_EQ(to_string(n1 + n2), "(n + n_1)");
}

TEST(Printer, SiblingLoopsReuseANameNestedOnesDoNot) {
  Buffer a = make_buffer("A", DType::f32(), {16});
  Var i1("i"), i2("i"), i3("i");
  Stmt siblings = make_seq({make_for(i1, 0, 4, LoopKind::kSerial, make_store(a, 0.0f, i1)),
                            make_for(i2, 0, 4, LoopKind::kSerial, make_store(a, 1.0f, i2))});
  EXPECT_EQ(to_string(siblings), "for i in [0, 4) {\n  A[i] = 0.0f\n}\nfor i in [0, 4) {\n  A[i] = 1.0f\n}\n");
  Stmt nested =
      make_for(i1, 0, 4, LoopKind::kSerial, make_for(i3, 0, 4, LoopKind::kSerial, make_store(a, 0.0f, i1 * 4 + i3)));
  EXPECT_EQ(to_string(nested), "for i in [0, 4) {\n  for i_1 in [0, 4) {\n    A[((i*4) + i_1)] = 0.0f\n  }\n}\n");
}

TEST(Printer, LoopVariableDoesNotTakeTheNameOfAFreeOne) {
  Buffer a = make_buffer("A", DType::f32(), {16});
  Var loop("n"), free_n("n");
  Stmt s = make_for(loop, 0, 4, LoopKind::kSerial, make_store(a, 0.0f, loop + free_n));
  EXPECT_EQ(to_string(s), "for n_1 in [0, 4) {\n  A[(n_1 + n)] = 0.0f\n}\n");
}

TEST(Printer, NamesBecomeIdentifiers) {
  Buffer odd = make_buffer("onnx::Conv/1", DType::f32(), {4}), kw = make_buffer("for", DType::f32(), {4});
  Stmt s = make_seq(
      {make_store(odd, 0.0f, 0), make_store(kw, 0.0f, 0), make_store(make_buffer("3d", DType::f32(), {1}), 0.0f, 0)});
  EXPECT_EQ(to_string(s), "onnx__Conv_1[0] = 0.0f\nfor_[0] = 0.0f\n_3d[0] = 0.0f\n");
}

TEST(Printer, AllocFollowedByStatementsIsBraced) {
  Buffer out = make_buffer("out", DType::f32(), {4});
  Buffer tmp = make_buffer("tmp", DType::f32(), {4}, MemoryScope::kLocal);
  Stmt alloc = make_allocate(tmp, make_store(tmp, 1.0f, 0));
  EXPECT_EQ(to_string(alloc), "alloc tmp: float32[4] local\ntmp[0] = 1.0f\n");
  EXPECT_EQ(to_string(make_seq({alloc, make_store(out, 2.0f, 0)})),
            "alloc tmp: float32[4] local {\n  tmp[0] = 1.0f\n}\nout[0] = 2.0f\n");
  Stmt attr = make_attr(AttrKind::kAutoUnrollMaxStep, 16, make_store(out, 2.0f, 0));
  EXPECT_EQ(to_string(make_seq({attr, make_store(out, 3.0f, 1)})),
            "attr auto_unroll_max_step = 16 {\n  out[0] = 2.0f\n}\nout[1] = 3.0f\n");
}

TEST(Printer, ConstantsCarryTheirType) {
  EXPECT_EQ(to_string(make_int(5, DType::i32())), "int32(5)");
  EXPECT_EQ(to_string(make_cast(DType::i32(), Expr(5))), "int32(int64(5))");
  EXPECT_EQ(to_string(make_cast(DType::f32(), Expr(5))), "float32(5)");
  EXPECT_EQ(to_string(make_float(1.5, DType::f64())), "1.5float64");
  EXPECT_EQ(to_string(make_float(1.0 / 3.0, DType::f64())), "0.33333333333333331float64");
  EXPECT_EQ(to_string(make_float(-INFINITY)), "-inff");
  EXPECT_EQ(to_string(make_float(2.0, DType::f16())), "2.0float16");
  EXPECT_EQ(to_string(make_bool(false)), "false");
}

TEST(Printer, CanonicalNamesAreByFirstAppearance) {
  IRPrinter p(/*canonical=*/true);
  Var x("x"), y("y");
  Tensor t = placeholder({4}, DType::f32(), "T");
  EXPECT_EQ(p.print(read(t, {y}) + cast(DType::f32(), x)), "(t0[v0] + float32(v1))");
  EXPECT_EQ(p.name_of(y.node()), "v0");
  // The canonical text is what workload keys hash: float64 keeps 9 digits.
  EXPECT_EQ(p.print(make_float(1.0 / 3.0, DType::f64())), "0.333333333float64");
}

TEST(Printer, FreeNamesAreWhatAParserNeeds) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Var i("i"), n("n");
  IRPrinter p;
  p.print(make_for(i, 0, n, LoopKind::kSerial, make_store(a, 0.0f, i)));
  ASSERT_EQ(p.free_names().vars.size(), 1u);
  EXPECT_EQ(p.free_names().vars[0].first, "n");
  ASSERT_EQ(p.free_names().buffers.size(), 1u);
  EXPECT_EQ(p.free_names().buffers[0].second, a);
}

}  // namespace
}  // namespace tessera
