// Operator converters (compiler/frontend/onnx_ops.cc, onnx_shape_ops.cc) on small models: what
// the ONNX node-test conformance found, each checked against a C++ reference
// through lower + the reference interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/frontend/onnx_import.h"
#include "compiler/graph/passes.h"
#include "tests/compiler/frontend/onnx_test_util.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::frontend {
namespace {

using graph::test::Bytes;
using graph::test::close;
using graph::test::random_floats;
using graph::test::to_bytes;
using graph::test::to_floats;
using test::attr;
using test::ModelBuilder;

template <typename T>
Bytes bytes_of(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T>
std::vector<T> values_of(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

// Imports, optimizes and runs a model whose inputs are given in order; returns output 0.
Result<Bytes> run_model(const ModelBuilder& m, const std::vector<Bytes>& inputs) {
  TESSERA_ASSIGN_OR_RETURN(graph::Graph g, import_onnx_bytes(m.bytes()));
  TESSERA_ASSIGN_OR_RETURN(graph::Graph opt, graph::optimize_graph(g));
  std::map<graph::ValueId, Bytes> feed;
  for (size_t i = 0; i < inputs.size(); ++i) feed[opt.inputs().at(i)] = inputs[i];
  TESSERA_ASSIGN_OR_RETURN(auto outs, graph::test::run_graph(opt, feed));
  return outs.at(0);
}

TEST(OnnxOps, PowOfIntegersIsComputedExactly) {
  ModelBuilder m(15);
  m.input("x", {4}, onnx::TensorProto::INT64);
  m.input("y", {4}, onnx::TensorProto::INT64);
  m.node("Pow", {"x", "y"}, {"z"});
  m.output("z", {4}, onnx::TensorProto::INT64);
  auto z = run_model(m, {bytes_of<int64_t>({2, 3, -2, 7}), bytes_of<int64_t>({40, 3, 3, 0})});
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  EXPECT_EQ(values_of<int64_t>(*z), (std::vector<int64_t>{int64_t{1} << 40, 27, -8, 1}));
}

TEST(OnnxOps, PowOfAnIntegerBaseToAFloatExponentTruncates) {
  ModelBuilder m(15);
  m.input("x", {3}, onnx::TensorProto::INT32);
  m.input("y", {3});
  m.node("Pow", {"x", "y"}, {"z"});
  m.output("z", {3}, onnx::TensorProto::INT32);
  auto z = run_model(m, {bytes_of<int32_t>({4, 3, 2}), bytes_of<float>({0.5f, 0.5f, 1.5f})});
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*z), (std::vector<int32_t>{2, 1, 2}));  // 2, 1.73, 2.83
}

TEST(OnnxOps, PowOfAFloatBaseToAnIntegerExponentFedAtRunTime) {
  ModelBuilder m(15);
  m.input("x", {3});
  m.input("y", {3}, onnx::TensorProto::INT64);
  m.node("Pow", {"x", "y"}, {"z"});
  m.output("z", {3});
  auto z = run_model(m, {to_bytes({1.5f, -2.0f, 0.5f}), bytes_of<int64_t>({2, 3, -1})});
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  EXPECT_TRUE(close(to_floats(*z), {2.25f, -8.0f, 2.0f}));
}

TEST(OnnxOps, Conv1dRunsAsAUnitHeightConv2d) {
  ModelBuilder m(13);
  m.input("x", {1, 2, 7});
  const auto w = random_floats(3 * 2 * 3, 7);
  m.floats("w", {3, 2, 3}, w);
  m.floats("b", {3}, {0.5f, -0.25f, 1.0f});
  auto* conv = m.node("Conv", {"x", "w", "b"}, {"y"});
  attr(conv, "strides", std::vector<int64_t>{2});
  attr(conv, "pads", std::vector<int64_t>{1, 2});
  m.output("y", {1, 3, 4});
  const auto x = random_floats(14, 8);
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  std::vector<float> want;
  for (int k = 0; k < 3; ++k)
    for (int o = 0; o < 4; ++o) {
      float acc = k == 0 ? 0.5f : k == 1 ? -0.25f : 1.0f;
      for (int c = 0; c < 2; ++c)
        for (int r = 0; r < 3; ++r) {
          const int i = o * 2 + r - 1;
          if (i >= 0 && i < 7) acc += x[c * 7 + i] * w[(k * 2 + c) * 3 + r];
        }
      want.push_back(acc);
    }
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxOps, MaxPool1dRunsAsAUnitHeightPool) {
  ModelBuilder m(13);
  m.input("x", {1, 1, 5});
  auto* pool = m.node("MaxPool", {"x"}, {"y"});
  attr(pool, "kernel_shape", std::vector<int64_t>{2});
  attr(pool, "pads", std::vector<int64_t>{1, 0});
  m.output("y", {1, 1, 5});
  auto y = run_model(m, {to_bytes({1, -3, 2, 5, -1})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(close(to_floats(*y), {1, 1, 2, 5, 5}));
}

TEST(OnnxOps, MaxPoolOfUint8NeverPicksThePadding) {
  ModelBuilder m(13);
  m.input("x", {1, 1, 2, 2}, onnx::TensorProto::UINT8);
  auto* pool = m.node("MaxPool", {"x"}, {"y"});
  attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  attr(pool, "pads", std::vector<int64_t>{1, 1, 0, 0});
  m.output("y", {1, 1, 2, 2}, onnx::TensorProto::UINT8);
  auto y = run_model(m, {bytes_of<uint8_t>({3, 200, 7, 1})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(*y), (std::vector<uint8_t>{3, 200, 7, 200}));
}

// ONNX's reference cubic resize of one row (cubic_coeffs, edge padding,
// exclude_outside renormalizing) with half_pixel coordinates.
std::vector<float> cubic_row(const std::vector<float>& x, int64_t out_len, double a, bool exclude_outside) {
  const auto n = static_cast<int64_t>(x.size());
  const double scale = static_cast<double>(out_len) / static_cast<double>(n);
  std::vector<float> out;
  for (int64_t i = 0; i < out_len; ++i) {
    const double c = (static_cast<double>(i) + 0.5) / scale - 0.5;
    const double fl = std::floor(c), t = c - fl;
    auto far = [&](double s) { return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a; };
    auto near = [&](double s) { return ((a + 2) * s - (a + 3)) * s * s + 1; };
    double w[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
    double sum = 0, acc = 0;
    for (int j = 0; j < 4; ++j) {
      const auto k = static_cast<int64_t>(fl) + j - 1;
      if (exclude_outside && (k < 0 || k >= n)) w[j] = 0;
      sum += w[j];
    }
    for (int j = 0; j < 4; ++j) {
      const int64_t k = std::clamp<int64_t>(static_cast<int64_t>(fl) + j - 1, 0, n - 1);
      acc += (exclude_outside ? w[j] / sum : w[j]) * x[static_cast<size_t>(k)];
    }
    out.push_back(static_cast<float>(acc));
  }
  return out;
}

TEST(OnnxOps, CubicResizeMatchesOnnxReference) {
  for (bool exclude_outside : {false, true}) {
    ModelBuilder m(13);
    m.input("x", {1, 1, 1, 5});
    m.floats("roi", {0}, {});
    m.floats("scales", {4}, {1, 1, 1, 1.6f});
    auto* resize = m.node("Resize", {"x", "roi", "scales"}, {"y"});
    attr(resize, "mode", std::string("cubic"));
    attr(resize, "cubic_coeff_a", -0.5f);
    attr(resize, "exclude_outside", int64_t{exclude_outside});
    m.output("y", {1, 1, 1, 8});
    const std::vector<float> x = {1, 4, -2, 3, 0.5f};
    auto y = run_model(m, {to_bytes(x)});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    EXPECT_TRUE(close(to_floats(*y), cubic_row(x, 8, -0.5, exclude_outside))) << exclude_outside;
  }
}

TEST(OnnxOps, EdgeAndReflectPadsImport) {
  for (const std::string mode : {"edge", "reflect"}) {
    ModelBuilder m(13);
    m.input("x", {2, 3});
    m.int64s("pads", {4}, {0, 2, 1, 1});
    auto* pad = m.node("Pad", {"x", "pads"}, {"y"});
    attr(pad, "mode", mode);
    m.output("y", {3, 6});
    auto y = run_model(m, {to_bytes({1, 2, 3, 4, 5, 6})});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    if (mode == "edge")
      EXPECT_TRUE(close(to_floats(*y), {1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6, 4, 4, 4, 5, 6, 6}));
    else
      EXPECT_TRUE(close(to_floats(*y), {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2}));
  }
}

TEST(OnnxOps, ReflectPadAsWideAsTheInputIsAnError) {
  ModelBuilder m(13);
  m.input("x", {1, 3});
  m.int64s("pads", {4}, {0, 3, 0, 0});
  attr(m.node("Pad", {"x", "pads"}, {"y"}, "pad"), "mode", std::string("reflect"));
  m.output("y", {1, 6});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("node 'pad' (Pad): reflect pads of dimension 1 must be smaller than its size 3"),
            std::string::npos)
      << g.status().message();
}

TEST(OnnxOps, DropoutInTrainingModeWithRatioZeroIsTheIdentity) {
  ModelBuilder m(13);
  m.input("x", {3});
  m.floats("ratio", {}, {0.0f});
  auto* t = m.model.mutable_graph()->add_initializer();
  t->set_name("training");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  m.node("Dropout", {"x", "ratio", "training"}, {"y", "mask"});
  m.output("y", {3});
  auto y = run_model(m, {to_bytes({1, -2, 3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(close(to_floats(*y), {1, -2, 3}));

  m.model.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string("\0\0\0?", 4));  // 0.5f
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("random dropping"), std::string::npos) << g.status().message();
}

TEST(OnnxOps, BatchNormInTrainingModeUsesTheBatchStatistics) {
  // x: N=2, C=2, 1x2; channel 0 holds 1 2 3 4 (mean 2.5, variance 1.25),
  // channel 1 holds 0 0 2 2 (mean 1, variance 1).
  ModelBuilder m(15);
  m.input("x", {2, 2, 1, 2});
  m.floats("scale", {2}, {1.0f, 2.0f});
  m.floats("bias", {2}, {0.0f, 1.0f});
  m.floats("mean", {2}, {10.0f, 20.0f});
  m.floats("var", {2}, {3.0f, 5.0f});
  auto* bn = m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y", "running_mean", "running_var"});
  attr(bn, "training_mode", int64_t{1});
  attr(bn, "epsilon", 0.0f);
  attr(bn, "momentum", 0.75f);
  m.output("y", {2, 2, 1, 2});
  m.output("running_mean", {2});
  m.output("running_var", {2});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto opt = graph::optimize_graph(*g);
  ASSERT_TRUE(opt.is_ok()) << opt.status().to_string();
  auto outs = graph::test::run_graph(*opt, {{opt->inputs().at(0), to_bytes({1, 2, 0, 0, 3, 4, 2, 2})}});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  const float s = 1 / std::sqrt(1.25f);
  EXPECT_TRUE(close(to_floats(outs->at(0)), {-1.5f * s, -0.5f * s, -1, -1, 0.5f * s, 1.5f * s, 3, 3}));
  EXPECT_TRUE(close(to_floats(outs->at(1)), {10 * 0.75f + 2.5f * 0.25f, 20 * 0.75f + 1 * 0.25f}));
  EXPECT_TRUE(close(to_floats(outs->at(2)), {3 * 0.75f + 1.25f * 0.25f, 5 * 0.75f + 1 * 0.25f}));
}

TEST(OnnxOps, TfCropAndResizeSamplesTheRoiAndExtrapolatesOutside) {
  // Last axis: roi [0.5, 1.5] of 4 values -> coordinates 1.5, 3, 4.5 (outside).
  ModelBuilder m(13);
  m.input("x", {1, 1, 1, 4});
  m.floats("roi", {8}, {0, 0, 0, 0.5f, 1, 1, 1, 1.5f});
  m.floats("scales", {0}, {});
  m.int64s("sizes", {4}, {1, 1, 1, 3});
  auto* resize = m.node("Resize", {"x", "roi", "scales", "sizes"}, {"y"});
  attr(resize, "mode", std::string("linear"));
  attr(resize, "coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  attr(resize, "extrapolation_value", -7.0f);
  m.output("y", {1, 1, 1, 3});
  auto y = run_model(m, {to_bytes({0, 1, 2, 3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(close(to_floats(*y), {1.5f, 3.0f, -7.0f}));
}

TEST(OnnxOps, AveragePool3dWithPaddingRunsAsTwo2dPools) {
  // 3x4x5 input, kernel 2x2x3, strides 2x1x2, pads (d 1|0, h 0|1, w 1|1),
  // padding not counted: every window divides by its own valid count.
  const int64_t D = 3, H = 4, W = 5, kd = 2, kh = 2, kw = 3, sd = 2, sh = 1, sw = 2;
  const int64_t pd = 1, ph = 0, pw = 1, od = (D + 1 - kd) / sd + 1, oh = (H + 1 - kh) / sh + 1,
                ow = (W + 2 - kw) / sw + 1;
  ModelBuilder m(13);
  m.input("x", {1, 2, D, H, W});
  auto* pool = m.node("AveragePool", {"x"}, {"y"});
  attr(pool, "kernel_shape", std::vector<int64_t>{kd, kh, kw});
  attr(pool, "strides", std::vector<int64_t>{sd, sh, sw});
  attr(pool, "pads", std::vector<int64_t>{pd, ph, pw, 0, 1, 1});
  m.output("y", {1, 2, od, oh, ow});
  const auto x = random_floats(static_cast<size_t>(2 * D * H * W), 11);
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  std::vector<float> want;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t a = 0; a < od; ++a)
      for (int64_t b = 0; b < oh; ++b)
        for (int64_t e = 0; e < ow; ++e) {
          double sum = 0;
          int count = 0;
          for (int64_t i = 0; i < kd; ++i)
            for (int64_t j = 0; j < kh; ++j)
              for (int64_t k = 0; k < kw; ++k) {
                const int64_t z = a * sd + i - pd, r = b * sh + j - ph, q = e * sw + k - pw;
                if (z < 0 || z >= D || r < 0 || r >= H || q < 0 || q >= W) continue;
                sum += x[static_cast<size_t>(((c * D + z) * H + r) * W + q)];
                ++count;
              }
          want.push_back(static_cast<float>(sum / count));
        }
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxOps, MaxPoolIndicesAreTheFirstMaximumOfEachWindow) {
  // 1x1x3x4, kernel 2x2, stride 1x2, pads top 1: windows over rows -1..0,
  // 0..1, 1..2 and columns 0..1, 2..3. Ties pick the first in window order.
  const std::vector<float> x = {1, 5, 2, 2,  //
                                7, 0, 3, 9,  //
                                7, 7, 4, 9};
  for (int64_t order : {0, 1}) {
    ModelBuilder m(12);
    m.input("x", {1, 1, 3, 4});
    auto* pool = m.node("MaxPool", {"x"}, {"y", "i"});
    attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
    attr(pool, "strides", std::vector<int64_t>{1, 2});
    attr(pool, "pads", std::vector<int64_t>{1, 0, 0, 0});
    attr(pool, "storage_order", order);
    m.output("i", {1, 1, 3, 2}, onnx::TensorProto::INT64);
    auto i = run_model(m, {to_bytes(x)});
    ASSERT_TRUE(i.is_ok()) << i.status().to_string();
    // (row, col) of each window's first maximum.
    const int64_t at[6][2] = {{0, 1}, {0, 2}, {1, 0}, {1, 3}, {1, 0}, {1, 3}};
    std::vector<int64_t> want;
    for (const auto& rc : at) want.push_back(order == 0 ? rc[0] * 4 + rc[1] : rc[1] * 3 + rc[0]);
    EXPECT_EQ(values_of<int64_t>(*i), want) << "storage_order " << order;
  }
}

}  // namespace
}  // namespace tessera::frontend
