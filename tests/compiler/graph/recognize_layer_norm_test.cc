// recognize_layer_norm: the primitive-node LayerNorm of exporters becomes one
// kLayerNorm node (checked numerically against loops), and near misses stay.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/graph/passes.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

constexpr int64_t kRows = 3, kWidth = 20;
const std::vector<int64_t> kShape = {1, kRows, kWidth};

struct Primitive {
  Graph g;
  ValueId x = -1, mean = -1, out = -1;
};

// torch.onnx's LayerNorm over the last axis; `pow` squares by Pow(d, 2), else
// Mul(d, d); `affine` adds * gamma + beta with gamma shaped [1, width].
Primitive primitive_layer_norm(bool pow, bool affine) {
  Primitive p;
  Graph& g = p.g;
  const DType f = DType::f32();
  const std::vector<int64_t> reduced = {1, kRows, 1};
  p.x = g.add_input("x", kShape, f);
  p.mean = g.add_op("mean", OpKind::kReduceMean, ReduceAttrs{{2}, true}, {p.x}, reduced, f);
  ValueId d = g.add_op("sub", OpKind::kSub, NoAttrs{}, {p.x, p.mean}, kShape, f);
  ValueId sq = pow ? g.add_op("pow", OpKind::kPow, NoAttrs{},
                              {d, g.add_constant("two", Constant::from_floats({}, {2}))}, kShape, f)
                   : g.add_op("square", OpKind::kMul, NoAttrs{}, {d, d}, kShape, f);
  ValueId var = g.add_op("var", OpKind::kReduceMean, ReduceAttrs{{2}, true}, {sq}, reduced, f);
  ValueId eps = g.add_constant("eps", Constant::from_floats({}, {1e-3f}));
  ValueId ve = g.add_op("add_eps", OpKind::kAdd, NoAttrs{}, {var, eps}, reduced, f);
  ValueId sd = g.add_op("sqrt", OpKind::kUnary, UnaryAttrs{ops::UnaryFn::kSqrt, {}}, {ve}, reduced, f);
  p.out = g.add_op("div", OpKind::kDiv, NoAttrs{}, {d, sd}, kShape, f);
  if (affine) {
    std::vector<float> gamma(kWidth), beta(kWidth);
    for (int64_t i = 0; i < kWidth; ++i) gamma[i] = 0.5f + 0.1f * i, beta[i] = 0.05f * i - 0.3f;
    ValueId gm = g.add_constant("gamma", Constant::from_floats({1, kWidth}, gamma));
    ValueId bt = g.add_constant("beta", Constant::from_floats({kWidth}, beta));
    p.out = g.add_op("scale", OpKind::kMul, NoAttrs{}, {p.out, gm}, kShape, f);
    p.out = g.add_op("shift", OpKind::kAdd, NoAttrs{}, {bt, p.out}, kShape, f);
  }
  return p;
}

std::vector<float> naive_layer_norm(const std::vector<float>& x, bool affine) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < kRows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < kWidth; ++i) mean += x[r * kWidth + i];
    mean /= kWidth;
    for (int64_t i = 0; i < kWidth; ++i) var += (x[r * kWidth + i] - mean) * (x[r * kWidth + i] - mean);
    var /= kWidth;
    for (int64_t i = 0; i < kWidth; ++i) {
      double v = (x[r * kWidth + i] - mean) / std::sqrt(var + 1e-3);
      if (affine) v = v * (0.5 + 0.1 * i) + (0.05 * i - 0.3);
      y[r * kWidth + i] = static_cast<float>(v);
    }
  }
  return y;
}

TEST(RecognizeLayerNorm, PowFormWithScaleAndShiftIsOneNode) {
  Primitive p = primitive_layer_norm(/*pow=*/true, /*affine=*/true);
  p.g.set_outputs({p.out});
  auto got = recognize_layer_norm(p.g);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->nodes().size(), 1u) << graph_to_string(*got);
  const Node& ln = got->nodes()[0];
  EXPECT_EQ(ln.kind, OpKind::kLayerNorm);
  EXPECT_EQ(ln.outputs[0], p.out);
  EXPECT_EQ(std::get<NormAttrs>(ln.attrs).axis, 2);
  EXPECT_NEAR(std::get<NormAttrs>(ln.attrs).epsilon, 1e-3, 1e-9);
  EXPECT_EQ(got->value(ln.inputs[1]).shape, (std::vector<int64_t>{kWidth}));  // gamma reshaped from [1, width]
  const auto x = test::random_floats(kRows * kWidth, 21);
  auto out = test::run_graph(*got, {{p.x, test::to_bytes(x)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_TRUE(test::close(test::to_floats((*out)[0]), naive_layer_norm(x, true)));
}

TEST(RecognizeLayerNorm, MulFormWithoutAffineGetsUnitScaleAndZeroShift) {
  Primitive p = primitive_layer_norm(/*pow=*/false, /*affine=*/false);
  p.g.set_outputs({p.out});
  auto got = optimize_graph(p.g);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->nodes().size(), 1u) << graph_to_string(*got);
  EXPECT_EQ(got->nodes()[0].kind, OpKind::kLayerNorm);
  const auto x = test::random_floats(kRows * kWidth, 22);
  auto out = test::run_graph(*got, {{p.x, test::to_bytes(x)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_TRUE(test::close(test::to_floats((*out)[0]), naive_layer_norm(x, false)));
}

TEST(RecognizeLayerNorm, AnIntermediateReadOutsideKeepsThePrimitiveNodes) {
  Primitive p = primitive_layer_norm(/*pow=*/true, /*affine=*/false);
  p.g.set_outputs({p.out, p.mean});  // the mean is also an output
  auto got = recognize_layer_norm(p.g);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->nodes().size(), p.g.nodes().size());
  for (const Node& n : got->nodes()) EXPECT_NE(n.kind, OpKind::kLayerNorm);
}

}  // namespace
}  // namespace tessera::graph
