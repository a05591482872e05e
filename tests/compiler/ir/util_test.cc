// Substitution and the queries over trees that passes share.
#include "compiler/ir/util.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"

namespace tessera {
namespace {

TEST(Substitute, ReplacesTheVariableAndFoldsConstants) {
  Var i("i"), j("j");
  Expr e = i * 4 + j;
  EXPECT_EQ(to_string(substitute(e, i, Expr(2))), "(8 + j)");
  int64_t v = 0;
  EXPECT_TRUE(is_const_int(substitute(e, VarMap{{i.node(), Expr(2)}, {j.node(), Expr(1)}}), &v));
  EXPECT_EQ(v, 9);
}

TEST(Substitute, LeavesUntouchedTreesShared) {
  Var i("i"), k("k");
  Expr e = i + 1;
  EXPECT_TRUE(substitute(e, k, Expr(3)).same_as(e));
}

TEST(Substitute, RewritesInsideStatements) {
  Buffer a = make_buffer("A", DType::f32(), {8});
  Var i("i"), n("n");
  Stmt s = make_for(i, 0, n, LoopKind::kSerial, make_store(a, 0.0f, i));
  EXPECT_EQ(to_string(substitute(s, n, Expr(8))), "for i in [0, 8) {\n  A[i] = 0.0f\n}\n");
}

TEST(UsesVar, FindsTheVariableByIdentity) {
  Var i("i"), other_i("i");
  EXPECT_TRUE(uses_var(i + 1, i.node()));
  EXPECT_FALSE(uses_var(i + 1, other_i.node()));
  EXPECT_TRUE(uses_any_var(i * other_i, [&](const VarNode* v) { return v == other_i.node(); }));
}

TEST(FreeVars, LoopVariablesAreNotFree) {
  Buffer a = make_buffer("A", DType::f32(), {64}), b = make_buffer("B", DType::f32(), {64});
  Var i("i"), n("n"), off("off");
  Stmt s = make_for(i, 0, n, LoopKind::kSerial, make_store(b, make_load(a, i + off), i));
  std::vector<Var> free = free_vars(s);
  ASSERT_EQ(free.size(), 2u);
  EXPECT_TRUE(free[0].same_as(n));
  EXPECT_TRUE(free[1].same_as(off));
}

TEST(BuffersUsed, InOrderOfFirstAppearance) {
  Buffer a = make_buffer("A", DType::f32(), {4}), b = make_buffer("B", DType::f32(), {4});
  Stmt s = make_seq({make_store(b, make_load(a, 0), 0), make_store(a, make_load(b, 1), 1)});
  std::vector<Buffer> used = buffers_used(s);
  ASSERT_EQ(used.size(), 2u);
  EXPECT_EQ(used[0], b);
  EXPECT_EQ(used[1], a);
}

}  // namespace
}  // namespace tessera
