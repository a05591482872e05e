#include "compiler/arith/sym_interval.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"

namespace tessera::arith {
namespace {

std::string text(const std::optional<SymInterval>& iv) {
  if (!iv) return "none";
  return "[" + to_string(iv->lo) + ", " + to_string(iv->hi) + "]";
}

TEST(EvalInterval, ExpressionsWithoutRelaxedVariablesArePoints) {
  Var i("i"), o("o");
  RelaxMap relax{{i.node(), {make_int(0), make_int(7)}}};
  EXPECT_EQ(text(eval_interval(o * 8 + 1, relax)), "[" + to_string(o * 8 + 1) + ", " + to_string(o * 8 + 1) + "]");
}

TEST(EvalInterval, TiledIndexSpansTheTile) {
  Var o("o"), i("i");
  RelaxMap relax{{i.node(), {make_int(0), make_int(7)}}};
  auto iv = eval_interval(o * 8 + i, relax);
  ASSERT_TRUE(iv.has_value());
  EXPECT_EQ(to_string(iv->lo), to_string(o * 8 + 0));
  EXPECT_EQ(to_string(iv->hi), to_string(o * 8 + 7));
}

TEST(EvalInterval, SubtractionAndNegativeScaleSwapEnds) {
  Var i("i"), j("j");
  RelaxMap relax{{i.node(), {make_int(0), make_int(3)}}, {j.node(), {make_int(1), make_int(2)}}};
  EXPECT_EQ(text(eval_interval(i - j, relax)), text(SymInterval{Expr(0) - 2, Expr(3) - 1}));
  EXPECT_EQ(text(eval_interval(i * -2, relax)), "[-6, 0]");
}

TEST(EvalInterval, DivisionModuloMinMaxAndSelect) {
  Var i("i"), n("n");
  RelaxMap relax{{i.node(), {n, n + 9}}};
  EXPECT_EQ(text(eval_interval(i / 4, relax)), "[" + to_string(n / 4) + ", " + to_string((n + 9) / 4) + "]");
  EXPECT_EQ(text(eval_interval(i % 4, relax)), "[0, 3]");
  EXPECT_EQ(text(eval_interval(min(i, Expr(5)), relax)),
            "[" + to_string(min(n, Expr(5))) + ", " + to_string(min(n + 9, Expr(5))) + "]");
  EXPECT_EQ(text(eval_interval(select(n > 0, i, i + 1), relax)),
            "[" + to_string(min(n, n + 1)) + ", " + to_string(max(n + 9, n + 9 + 1)) + "]");
}

TEST(EvalInterval, NonAffineUseOfARelaxedVariableIsUnknown) {
  Var i("i"), j("j");
  RelaxMap relax{{i.node(), {make_int(0), make_int(3)}}};
  EXPECT_FALSE(eval_interval(i * j, relax).has_value());
  EXPECT_FALSE(eval_interval(i / j, relax).has_value());
  EXPECT_FALSE(eval_interval(i % j, relax).has_value());
  EXPECT_FALSE(eval_interval(cast(DType::i32(), i), relax).has_value());
}

}  // namespace
}  // namespace tessera::arith
