// Node kernels against naive references: ConvTranspose by phases (stride
// dividing the window and the output) and in its direct form.
#include "compiler/graph/build_node.h"

#include <gtest/gtest.h>

#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

struct ConvTransposeCase {
  std::string name;
  int64_t c, h, w, k, r, s, groups;
  ConvAttrs a;
  int64_t out_pad = 0;  // ONNX output_padding, both axes
};

void PrintTo(const ConvTransposeCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<int64_t> out_shape(const ConvTransposeCase& t) {
  const int64_t oh =
      (t.h - 1) * t.a.stride_h - t.a.pad_top - t.a.pad_bottom + t.a.dilation_h * (t.r - 1) + 1 + t.out_pad;
  const int64_t ow =
      (t.w - 1) * t.a.stride_w - t.a.pad_left - t.a.pad_right + t.a.dilation_w * (t.s - 1) + 1 + t.out_pad;
  return {1, t.k, oh, ow};
}

// The scatter form: every input pixel adds its weighted window to the output.
std::vector<float> naive_conv_transpose(const ConvTransposeCase& t, const std::vector<float>& x,
                                        const std::vector<float>& w, const std::vector<float>& bias) {
  const std::vector<int64_t> os = out_shape(t);
  const int64_t oh = os[2], ow = os[3], cg = t.c / t.groups, kg = t.k / t.groups;
  std::vector<double> out(static_cast<size_t>(t.k * oh * ow));
  for (int64_t c = 0; c < t.c; ++c)
    for (int64_t iy = 0; iy < t.h; ++iy)
      for (int64_t ix = 0; ix < t.w; ++ix)
        for (int64_t kk = 0; kk < kg; ++kk)
          for (int64_t r = 0; r < t.r; ++r)
            for (int64_t s = 0; s < t.s; ++s) {
              const int64_t oy = iy * t.a.stride_h - t.a.pad_top + r * t.a.dilation_h;
              const int64_t ox = ix * t.a.stride_w - t.a.pad_left + s * t.a.dilation_w;
              if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
              const int64_t k = (c / cg) * kg + kk;
              out[static_cast<size_t>((k * oh + oy) * ow + ox)] +=
                  static_cast<double>(x[static_cast<size_t>((c * t.h + iy) * t.w + ix)]) *
                  w[static_cast<size_t>(((c * kg + kk) * t.r + r) * t.s + s)];
            }
  std::vector<float> result(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    result[i] = static_cast<float>(out[i] + (bias.empty() ? 0.0 : bias[i / static_cast<size_t>(oh * ow)]));
  return result;
}

ConvAttrs strided(int64_t stride, int64_t pad, int64_t dilation = 1) {
  ConvAttrs a;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = pad;
  a.dilation_h = a.dilation_w = dilation;
  return a;
}

class ConvTranspose : public ::testing::TestWithParam<ConvTransposeCase> {};

TEST_P(ConvTranspose, MatchesTheScatterReference) {
  ConvTransposeCase t = GetParam();
  t.a.groups = t.groups;
  Graph g;
  ValueId x = g.add_input("x", {1, t.c, t.h, t.w}, DType::f32());
  const std::vector<float> wv = test::random_floats(static_cast<size_t>(t.c * (t.k / t.groups) * t.r * t.s), 5);
  const std::vector<float> bv = test::random_floats(static_cast<size_t>(t.k), 6);
  ValueId w = g.add_constant("w", Constant::from_floats({t.c, t.k / t.groups, t.r, t.s}, wv));
  ValueId b = g.add_constant("b", Constant::from_floats({t.k}, bv));
  ValueId y = g.add_op("deconv", OpKind::kConvTranspose, t.a, {x, w, b}, out_shape(t), DType::f32());
  g.set_outputs({y});
  const std::vector<float> xv = test::random_floats(static_cast<size_t>(t.c * t.h * t.w), 4);
  auto out = test::run_graph(g, {{x, test::to_bytes(xv)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_TRUE(test::close(test::to_floats((*out)[0]), naive_conv_transpose(t, xv, wv, bv)));

  // The phases are their own stage exactly when the stride divides the
  // window and the output and there is no dilation.
  const std::vector<Node> nodes = g.nodes();
  const Node* node = nullptr;
  for (const Node& n : nodes)
    if (n.kind == OpKind::kConvTranspose) node = &n;
  ASSERT_NE(node, nullptr);
  const std::vector<Tensor> args = {placeholder({1, t.c, t.h, t.w}, DType::f32(), "x"),
                                    placeholder({t.c, t.k / t.groups, t.r, t.s}, DType::f32(), "w"),
                                    placeholder({t.k}, DType::f32(), "b")};
  auto built = build_node(g, *node, args);
  ASSERT_TRUE(built.is_ok()) << built.status().to_string();
  auto dag = ComputeDAG::make({args[0], args[1], args[2], *built});
  ASSERT_TRUE(dag.is_ok()) << dag.status().to_string();
  bool has_phases = false;
  for (const Tensor& tensor : dag->tensors()) has_phases = has_phases || tensor->name == "deconv.phases";
  const std::vector<int64_t> os = out_shape(t);
  const int64_t stride = t.a.stride_h;
  EXPECT_EQ(has_phases,
            stride > 1 && t.a.dilation_h == 1 && t.r % stride == 0 && os[2] % stride == 0 && os[3] % stride == 0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvTranspose,
                         ::testing::Values(
                             // By phases: the window and the output divide by the stride.
                             ConvTransposeCase{"k2_s2", 3, 5, 6, 4, 2, 2, 1,
                                               strided(2, 0)},  // a detector's x2 upsampling
                             ConvTransposeCase{"k4_s2_pad1", 2, 4, 5, 3, 4, 4, 1, strided(2, 1)},  // the GAN upsampling
                             ConvTransposeCase{"k4_s2_groups", 4, 3, 4, 6, 4, 4, 2, strided(2, 1)},  // grouped
                             ConvTransposeCase{"k6_s3", 2, 3, 3, 2, 6, 6, 1, strided(3, 0)},         // stride 3
                             // Direct: a window or an output the stride does not divide, dilation.
                             ConvTransposeCase{"k3_s2_pad1_outpad1", 2, 4, 4, 3, 3, 3, 1, strided(2, 1), 1},
                             ConvTransposeCase{"k3_s2_pad1", 2, 4, 5, 3, 3, 3, 1, strided(2, 1)},
                             ConvTransposeCase{"k2_s2_dilated", 2, 4, 4, 2, 2, 2, 1, strided(2, 0, 2)},
                             ConvTransposeCase{"k3_s1_pad1", 3, 4, 4, 2, 3, 3, 1, strided(1, 1)}),
                         [](const ::testing::TestParamInfo<ConvTransposeCase>& info) { return info.param.name; });

// Erf in float32 is a rational approximation (vectorizable); it stays within
// 5e-7 (four ulp of 1) of std::erf from -6 to 6, saturating to +-1 past +-4.
TEST(BuildNode, Float32ErfMatchesStdErf) {
  constexpr int kPoints = 1201;
  Graph g;
  ValueId x = g.add_input("x", {kPoints}, DType::f32());
  ValueId y = g.add_op("erf", OpKind::kErf, NoAttrs{}, {x}, {kPoints}, DType::f32());
  g.set_outputs({y});
  std::vector<float> xs(kPoints);
  for (int i = 0; i < kPoints; ++i) xs[static_cast<size_t>(i)] = -6.0f + 0.01f * static_cast<float>(i);
  auto got = test::run_graph(g, {{x, test::to_bytes(xs)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  const std::vector<float> out = test::to_floats((*got)[0]);
  for (int i = 0; i < kPoints; ++i)
    EXPECT_NEAR(out[static_cast<size_t>(i)], std::erf(static_cast<double>(xs[static_cast<size_t>(i)])), 5e-7)
        << "x = " << xs[static_cast<size_t>(i)];
}

// Softmax in float32: exp of a vector is a polynomial (llvm_math.cc). Rows
// spanning 0 to -100 match the double reference, and past -87.3 (where exp
// falls below the smallest normal float) the probability is exactly 0, not
// a denormal, which would slow the products that read it.
TEST(BuildNode, Float32SoftmaxMatchesDoubleReference) {
  constexpr int64_t kRows = 4, kCols = 301;
  Graph g;
  ValueId x = g.add_input("x", {kRows, kCols}, DType::f32());
  ValueId y = g.add_op("sm", OpKind::kSoftmax, AxisAttrs{1}, {x}, {kRows, kCols}, DType::f32());
  g.set_outputs({y});
  std::vector<float> xs(kRows * kCols);
  const auto noise = test::random_floats(xs.size(), 41);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c)  // row r spans a width of 3, 10, 30, 100
      xs[r * kCols + c] = static_cast<float>(-std::pow(10.0, 0.5 * (1 + r)) * c / kCols) + 0.01f * noise[r * kCols + c];
  auto got = test::run_graph(g, {{x, test::to_bytes(xs)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  const std::vector<float> out = test::to_floats((*got)[0]);
  for (int64_t r = 0; r < kRows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < kCols; ++c) mx = std::max(mx, static_cast<double>(xs[r * kCols + c]));
    for (int64_t c = 0; c < kCols; ++c) sum += std::exp(xs[r * kCols + c] - mx);
    for (int64_t c = 0; c < kCols; ++c) {
      const double d = xs[r * kCols + c] - mx, want = std::exp(d) / sum;
      // x - max is rounded to float (an ulp of |d| moves exp by |d| * 2^-24).
      EXPECT_NEAR(out[r * kCols + c], want, want * (1e-6 + 1.2e-7 * std::fabs(d)) + 1e-37)
          << "row " << r << " col " << c;
      if (d < -87.3) EXPECT_EQ(out[r * kCols + c], 0.0f) << "row " << r << " col " << c;
    }
  }
}

}  // namespace
}  // namespace tessera::graph
