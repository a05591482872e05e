// 3-D Conv and ConvTranspose (compiler/frontend/onnx_conv3d.cc) and 3-D
// pooling on odd volumes, each against a direct C++ loop over the ONNX
// definition, through lower + the reference interpreter.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "compiler/model/compile_model.h"
#include "tests/compiler/frontend/onnx_run_util.h"

namespace tessera::frontend {
namespace {

using graph::test::close;
using graph::test::random_floats;
using graph::test::to_bytes;
using graph::test::to_floats;
using test::attr;
using test::ModelBuilder;
using test::run_model;
using Dims = std::array<int64_t, 3>;

// The window of a 3-D test case: strides, dilations, pads (begin d, h, w, end d, h, w).
struct Win {
  Dims stride{1, 1, 1}, dilation{1, 1, 1};
  std::array<int64_t, 6> pads{0, 0, 0, 0, 0, 0};
};

size_t at5(const std::array<int64_t, 5>& s, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
  return static_cast<size_t>((((a * s[1] + b) * s[2] + c) * s[3] + d) * s[4] + e);
}

// ONNX Conv: y[n, k, o] = b[k] + sum over c in k's group and taps t of
// x[n, c, o * stride + t * dilation - pad_begin] * w[k, c', t].
std::vector<float> conv3d_reference(const std::vector<float>& x, std::array<int64_t, 5> xs, const std::vector<float>& w,
                                    std::array<int64_t, 5> ws, const std::vector<float>& bias, int64_t groups,
                                    const Win& win, std::array<int64_t, 5>* ys_out) {
  std::array<int64_t, 5> ys{xs[0], ws[0], 0, 0, 0};
  for (int i = 0; i < 3; ++i)
    ys[2 + i] = (xs[2 + i] + win.pads[i] + win.pads[3 + i] - win.dilation[i] * (ws[2 + i] - 1) - 1) / win.stride[i] + 1;
  *ys_out = ys;
  std::vector<float> y(static_cast<size_t>(ys[0] * ys[1] * ys[2] * ys[3] * ys[4]));
  const int64_t cg = ws[1], kg = ws[0] / groups;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t k = 0; k < ys[1]; ++k)
      for (int64_t a = 0; a < ys[2]; ++a)
        for (int64_t b = 0; b < ys[3]; ++b)
          for (int64_t e = 0; e < ys[4]; ++e) {
            double s = bias.empty() ? 0.0 : bias[static_cast<size_t>(k)];
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t i = 0; i < ws[2]; ++i)
                for (int64_t j = 0; j < ws[3]; ++j)
                  for (int64_t l = 0; l < ws[4]; ++l) {
                    const int64_t z = a * win.stride[0] + i * win.dilation[0] - win.pads[0];
                    const int64_t r = b * win.stride[1] + j * win.dilation[1] - win.pads[1];
                    const int64_t q = e * win.stride[2] + l * win.dilation[2] - win.pads[2];
                    if (z < 0 || z >= xs[2] || r < 0 || r >= xs[3] || q < 0 || q >= xs[4]) continue;
                    s += double{x[at5(xs, n, (k / kg) * cg + c, z, r, q)]} * w[at5(ws, k, c, i, j, l)];
                  }
            y[at5(ys, n, k, a, b, e)] = static_cast<float>(s);
          }
  return y;
}

// ONNX ConvTranspose: x[n, c, i] * w[c, kg, t] adds into
// y[n, group(c) * Kg + kg, i * stride + t * dilation - pad_begin].
std::vector<float> conv_transpose3d_reference(const std::vector<float>& x, std::array<int64_t, 5> xs,
                                              const std::vector<float>& w, std::array<int64_t, 5> ws,
                                              const std::vector<float>& bias, int64_t groups, const Win& win,
                                              const Dims& out_pad, std::array<int64_t, 5>* ys_out) {
  std::array<int64_t, 5> ys{xs[0], ws[1] * groups, 0, 0, 0};
  for (int i = 0; i < 3; ++i)
    ys[2 + i] = win.stride[i] * (xs[2 + i] - 1) + out_pad[i] + (ws[2 + i] - 1) * win.dilation[i] + 1 - win.pads[i] -
                win.pads[3 + i];
  *ys_out = ys;
  std::vector<double> y(static_cast<size_t>(ys[0] * ys[1] * ys[2] * ys[3] * ys[4]), 0.0);
  const int64_t cg = xs[1] / groups, kg = ws[1];
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[1]; ++c)
      for (int64_t a = 0; a < xs[2]; ++a)
        for (int64_t b = 0; b < xs[3]; ++b)
          for (int64_t e = 0; e < xs[4]; ++e)
            for (int64_t k = 0; k < kg; ++k)
              for (int64_t i = 0; i < ws[2]; ++i)
                for (int64_t j = 0; j < ws[3]; ++j)
                  for (int64_t l = 0; l < ws[4]; ++l) {
                    const int64_t z = a * win.stride[0] + i * win.dilation[0] - win.pads[0];
                    const int64_t r = b * win.stride[1] + j * win.dilation[1] - win.pads[1];
                    const int64_t q = e * win.stride[2] + l * win.dilation[2] - win.pads[2];
                    if (z < 0 || z >= ys[2] || r < 0 || r >= ys[3] || q < 0 || q >= ys[4]) continue;
                    y[at5(ys, n, (c / cg) * kg + k, z, r, q)] +=
                        double{x[at5(xs, n, c, a, b, e)]} * w[at5(ws, c, k, i, j, l)];
                  }
  std::vector<float> out(y.size());
  for (size_t i = 0; i < y.size(); ++i)
    out[i] = static_cast<float>(
        y[i] +
        (bias.empty() ? 0.0 : bias[(i / static_cast<size_t>(ys[2] * ys[3] * ys[4])) % static_cast<size_t>(ys[1])]));
  return out;
}

size_t count(const std::array<int64_t, 5>& s) {
  return static_cast<size_t>(s[0] * s[1] * s[2] * s[3] * s[4]);
}

std::vector<int64_t> vec(const std::array<int64_t, 5>& s) {
  return {s.begin(), s.end()};
}

// A Conv or ConvTranspose node with its window attributes, weight and bias as initializers.
ModelBuilder window_model(const std::string& op, const std::array<int64_t, 5>& xs, const std::vector<float>& w,
                          const std::array<int64_t, 5>& ws, const std::vector<float>& bias, int64_t groups,
                          const Win& win, const std::array<int64_t, 5>& ys, onnx::NodeProto** node = nullptr) {
  ModelBuilder m(13);
  m.input("x", vec(xs));
  m.floats("w", vec(ws), w);
  std::vector<std::string> inputs{"x", "w"};
  if (!bias.empty()) {
    m.floats("b", {static_cast<int64_t>(bias.size())}, bias);
    inputs.push_back("b");
  }
  auto* n = m.node(op, inputs, {"y"});
  attr(n, "group", groups);
  attr(n, "strides", std::vector<int64_t>(win.stride.begin(), win.stride.end()));
  attr(n, "dilations", std::vector<int64_t>(win.dilation.begin(), win.dilation.end()));
  attr(n, "pads", std::vector<int64_t>(win.pads.begin(), win.pads.end()));
  m.output("y", vec(ys));
  if (node) *node = n;
  return m;
}

TEST(OnnxConv3d, GroupedStridedDilatedPaddedConvMatchesTheDefinition) {
  // A 5x7x3 volume, 2 groups, strides 2x1x2, dilation 2 in height, uneven pads.
  const std::array<int64_t, 5> xs{2, 4, 5, 7, 3}, ws{6, 2, 3, 2, 2};
  Win win;
  win.stride = {2, 1, 2};
  win.dilation = {1, 2, 1};
  win.pads = {1, 0, 1, 1, 1, 0};
  const auto x = random_floats(count(xs), 3), w = random_floats(count(ws), 4), b = random_floats(6, 5);
  std::array<int64_t, 5> ys{};
  const auto want = conv3d_reference(x, xs, w, ws, b, 2, win, &ys);
  auto y = run_model(window_model("Conv", xs, w, ws, b, 2, win, ys), {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxConv3d, SameUpperPaddingKeepsTheVolumeOverTheStride) {
  const std::array<int64_t, 5> xs{1, 3, 5, 7, 3}, ws{4, 3, 3, 3, 2};
  ModelBuilder m(13);
  m.input("x", vec(xs));
  const auto x = random_floats(count(xs), 6), w = random_floats(count(ws), 7);
  m.floats("w", vec(ws), w);
  auto* n = m.node("Conv", {"x", "w"}, {"y"});
  attr(n, "auto_pad", std::string("SAME_UPPER"));
  attr(n, "strides", std::vector<int64_t>{2, 2, 2});
  // Out = ceil(in / 2): 3x4x2; the total padding per axis 2, 2, 1, the smaller half first.
  m.output("y", {1, 4, 3, 4, 2});
  Win win;
  win.stride = {2, 2, 2};
  win.pads = {1, 1, 0, 1, 1, 1};
  std::array<int64_t, 5> ys{};
  const auto want = conv3d_reference(x, xs, w, ws, {}, 1, win, &ys);
  ASSERT_EQ(vec(ys), (std::vector<int64_t>{1, 4, 3, 4, 2}));
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxConv3d, GroupedStridedConvTransposeWithOutputPaddingMatchesTheDefinition) {
  const std::array<int64_t, 5> xs{1, 4, 3, 5, 2}, ws{4, 3, 3, 2, 3};  // 2 groups: 6 output channels
  Win win;
  win.stride = {2, 2, 1};
  win.dilation = {1, 1, 2};
  win.pads = {1, 0, 1, 0, 1, 1};
  const Dims out_pad{1, 1, 0};
  const auto x = random_floats(count(xs), 8), w = random_floats(count(ws), 9), b = random_floats(6, 10);
  std::array<int64_t, 5> ys{};
  const auto want = conv_transpose3d_reference(x, xs, w, ws, b, 2, win, out_pad, &ys);
  onnx::NodeProto* n = nullptr;
  ModelBuilder m = window_model("ConvTranspose", xs, w, ws, b, 2, win, ys, &n);
  attr(n, "output_padding", std::vector<int64_t>(out_pad.begin(), out_pad.end()));
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxConv3d, ConvTransposeOutputShapeSetsThePads) {
  const std::array<int64_t, 5> xs{1, 2, 3, 2, 3}, ws{2, 3, 2, 3, 3};
  ModelBuilder m(13);
  m.input("x", vec(xs));
  const auto x = random_floats(count(xs), 12), w = random_floats(count(ws), 13);
  m.floats("w", vec(ws), w);
  auto* n = m.node("ConvTranspose", {"x", "w"}, {"y"});
  attr(n, "strides", std::vector<int64_t>{2, 2, 2});
  attr(n, "output_shape", std::vector<int64_t>{5, 4, 6});
  m.output("y", {1, 3, 5, 4, 6});
  // Full sizes 6x5x7: totals 1, 1, 1, the larger half first (NOTSET).
  Win win;
  win.stride = {2, 2, 2};
  win.pads = {1, 1, 1, 0, 0, 0};
  std::array<int64_t, 5> ys{};
  const auto want = conv_transpose3d_reference(x, xs, w, ws, {}, 1, win, {0, 0, 0}, &ys);
  ASSERT_EQ(vec(ys), (std::vector<int64_t>{1, 3, 5, 4, 6}));
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(close(to_floats(*y), want));
}

TEST(OnnxConv3d, ConvIsOneTaskOfTheConv2dTemplates) {
  // The tuner schedules a 3-D conv through the 2-D conv's sketch space and knob templates.
  const std::array<int64_t, 5> xs{1, 8, 5, 7, 9}, ws{16, 8, 3, 3, 3};
  Win win;
  win.pads = {1, 1, 1, 1, 1, 1};
  auto g = import_onnx_bytes(
      window_model("Conv", xs, random_floats(count(ws), 1), ws, {}, 1, win, {1, 16, 5, 7, 9}).bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto plan = model::plan_model(*g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  int convs = 0;
  for (const std::string& op : plan->task_ops) convs += op.rfind("conv2d", 0) == 0;
  EXPECT_EQ(convs, 1);
}

TEST(OnnxConv3d, GroupThatDoesNotDivideTheChannelsIsAnError) {
  const std::array<int64_t, 5> xs{1, 3, 4, 4, 4}, ws{4, 1, 2, 2, 2};
  auto g = import_onnx_bytes(
      window_model("Conv", xs, random_floats(count(ws), 1), ws, {}, 3, Win{}, {1, 4, 3, 3, 3}).bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("group 3"), std::string::npos) << g.status().to_string();
}

TEST(OnnxConv3d, OutputPaddingNotBelowTheStrideIsAnError) {
  const std::array<int64_t, 5> xs{1, 2, 3, 3, 3}, ws{2, 2, 2, 2, 2};
  onnx::NodeProto* n = nullptr;
  ModelBuilder m =
      window_model("ConvTranspose", xs, random_floats(count(ws), 1), ws, {}, 1, Win{}, {1, 2, 5, 4, 4}, &n);
  attr(n, "output_padding", std::vector<int64_t>{1, 0, 0});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("output_padding"), std::string::npos) << g.status().to_string();
}

TEST(OnnxConv3d, MaxPool3dInCeilModeWithDilationMatchesTheDefinition) {
  const int64_t D = 5, H = 7, W = 3;
  ModelBuilder m(13);
  m.input("x", {1, 2, D, H, W});
  auto* pool = m.node("MaxPool", {"x"}, {"y"});
  attr(pool, "kernel_shape", std::vector<int64_t>{2, 3, 2});
  attr(pool, "strides", std::vector<int64_t>{2, 2, 2});
  attr(pool, "dilations", std::vector<int64_t>{1, 2, 1});
  attr(pool, "pads", std::vector<int64_t>{1, 1, 0, 1, 1, 0});
  attr(pool, "ceil_mode", int64_t{1});
  // Spans 5, 4, 1 over stride 2. Ceil mode adds a window in depth (3 -> 4)
  // that would start in the end padding, so it is dropped; in width it adds
  // one (1 -> 2) that starts inside the input.
  const int64_t od = 3, oh = 3, ow = 2;
  m.output("y", {1, 2, od, oh, ow});
  const auto x = random_floats(static_cast<size_t>(2 * D * H * W), 21);
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  std::vector<float> want;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t a = 0; a < od; ++a)
      for (int64_t b = 0; b < oh; ++b)
        for (int64_t e = 0; e < ow; ++e) {
          float best = -1e30f;
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 3; ++j)
              for (int64_t k = 0; k < 2; ++k) {
                const int64_t z = a * 2 + i - 1, r = b * 2 + 2 * j - 1, q = e * 2 + k;
                if (z < 0 || z >= D || r < 0 || r >= H || q < 0 || q >= W) continue;
                best = std::max(best, x[static_cast<size_t>(((c * D + z) * H + r) * W + q)]);
              }
          want.push_back(best);
        }
  EXPECT_TRUE(close(to_floats(*y), want));
}

}  // namespace
}  // namespace tessera::frontend
