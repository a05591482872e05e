#include "compiler/arith/linear.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"

namespace tessera::arith {
namespace {

TEST(LinearForm, CollectsCoefficientsAndTheConstant) {
  Var i("i"), j("j");
  LinearForm f = linear_form((i * 4 + j) * 3 - (j - 7) * 2 + 1);
  ASSERT_EQ(f.terms.size(), 2u);
  EXPECT_TRUE(f.terms[0].first.same_as(i));
  EXPECT_EQ(f.terms[0].second, 12);
  EXPECT_TRUE(f.terms[1].first.same_as(j));
  EXPECT_EQ(f.terms[1].second, 1);
  EXPECT_EQ(f.constant, 15);
}

TEST(LinearForm, StructurallyEqualAtomsMerge) {
  Var i("i"), n("n");
  LinearForm f = linear_form(i / 4 * 2 + (i / 4) * 3 + i * n);
  ASSERT_EQ(f.terms.size(), 2u);
  EXPECT_EQ(to_string(f.terms[0].first), to_string(i / 4));
  EXPECT_EQ(f.terms[0].second, 5);
  EXPECT_EQ(f.terms[1].second, 1);  // i * n is one atom
}

TEST(LinearForm, CancelledTermsPrintNothing) {
  Var i("i"), j("j");
  EXPECT_EQ(to_string(canonical(i + j - i)), to_string(j));
  EXPECT_EQ(to_string(canonical(i - i + 3 - 3)), "0");
}

TEST(LinearForm, CanonicalFormPutsPositiveTermsFirstAndTheConstantLast) {
  Var i("i"), j("j");
  Expr e = canonical(make_binary(ExprKind::kSub, make_binary(ExprKind::kAdd, make_int(5), j * 2), i));
  EXPECT_EQ(to_string(e), to_string(make_binary(ExprKind::kAdd, make_binary(ExprKind::kSub, j * 2, i), make_int(5))));
  EXPECT_EQ(to_string(canonical(make_binary(ExprKind::kSub, make_int(0), i * 3) - 2)),
            to_string(make_binary(ExprKind::kSub, make_binary(ExprKind::kSub, make_int(0), i * 3), make_int(2))));
}

TEST(VisitAffine, DoubleCoefficientsForRates) {
  Var i("i"), j("j");
  double rate_i = 0, rate_j = 0;
  int others = 0;
  double constant = visit_affine<double>((i * 8 - j) * 2 + 6, 0.5, [&](const Expr& atom, double c) {
    if (atom.same_as(i))
      rate_i += c;
    else if (atom.same_as(j))
      rate_j += c;
    else
      ++others;
  });
  EXPECT_DOUBLE_EQ(rate_i, 8);
  EXPECT_DOUBLE_EQ(rate_j, -1);
  EXPECT_DOUBLE_EQ(constant, 3);
  EXPECT_EQ(others, 0);
}

TEST(VisitAffine, NonAffinePartsAreAtoms) {
  Var i("i"), j("j");
  std::vector<std::string> atoms;
  visit_affine<int64_t>(i * j + i % 3 - 1, 1, [&](const Expr& atom, int64_t) { atoms.push_back(to_string(atom)); });
  EXPECT_EQ(atoms, (std::vector<std::string>{to_string(i * j), to_string(i % 3)}));
}

}  // namespace
}  // namespace tessera::arith
