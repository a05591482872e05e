// The converters of compiler/frontend/onnx_quant_ops.cc through lowering and
// the reference interpreter, against references written here the way ONNX
// defines each operator: rounding ties to even, saturation at both ends,
// zero points at the extremes of their types, per-tensor and per-axis
// parameters, int32 products beyond float32's exact range; and the inputs
// that must be refused, each naming its node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/compiler/frontend/onnx_run_util.h"

namespace tessera::frontend {
namespace {

using graph::test::to_bytes;
using graph::test::to_floats;
using onnx::TensorProto;
using test::attr;
using test::bytes_of;
using test::ModelBuilder;
using test::run_model;
using test::values_of;

// ONNX's QuantizeLinear of one element: float32 division, half to even,
// plus the zero point, saturated.
template <typename T>
T quantize(float x, float scale, int zero_point) {
  const float q = std::nearbyint(x / scale) + static_cast<float>(zero_point);
  return static_cast<T>(std::clamp(q, static_cast<float>(std::numeric_limits<T>::min()),
                                   static_cast<float>(std::numeric_limits<T>::max())));
}

TEST(OnnxQuantOps, QuantizeLinearRoundsTiesToEvenAndSaturates) {
  ModelBuilder m(13);
  m.input("x", {10});
  m.floats("s", {}, {0.5f});
  m.raw<uint8_t>("zp", {}, TensorProto::UINT8, {128});
  m.node("QuantizeLinear", {"x", "s", "zp"}, {"y"});
  m.output("y", {10}, TensorProto::UINT8);
  // x / s: 0.5, 1.5, 2.5, -0.5, -1.5 (ties), past both ends, ordinary values.
  const std::vector<float> x = {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, 100.f, -100.f, 63.5f, -64.f, 0.1f};
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  std::vector<uint8_t> want;
  for (float v : x) want.push_back(quantize<uint8_t>(v, 0.5f, 128));
  EXPECT_EQ(values_of<uint8_t>(*y), want);
  EXPECT_EQ(want[0], 128);  // 0.5 rounds to 0
  EXPECT_EQ(want[1], 130);  // 1.5 rounds to 2
  EXPECT_EQ(want[5], 255);
  EXPECT_EQ(want[6], 0);
}

TEST(OnnxQuantOps, QuantizeLinearPerAxisWithZeroPointsAtTheExtremes) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4});
  m.floats("s", {3}, {0.1f, 1.0f, 0.03f});
  m.raw<int8_t>("zp", {3}, TensorProto::INT8, {-128, 0, 127});
  attr(m.node("QuantizeLinear", {"x", "s", "zp"}, {"y"}), "axis", int64_t{1});
  m.output("y", {2, 3, 4}, TensorProto::INT8);
  std::vector<float> x = graph::test::random_floats(24, 3);
  for (float& v : x) v *= 20;
  auto y = run_model(m, {to_bytes(x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const float s[3] = {0.1f, 1.0f, 0.03f};
  const int zp[3] = {-128, 0, 127};
  std::vector<int8_t> want;
  for (int i = 0; i < 24; ++i) want.push_back(quantize<int8_t>(x[i], s[(i / 4) % 3], zp[(i / 4) % 3]));
  EXPECT_EQ(values_of<int8_t>(*y), want);
}

TEST(OnnxQuantOps, DequantizeLinearPerTensorPerAxisAndInt32) {
  ModelBuilder m(13);
  m.input("q", {2, 3}, TensorProto::UINT8);
  m.input("w", {3, 2}, TensorProto::INT8);
  m.input("b", {3}, TensorProto::INT32);
  m.floats("s", {}, {0.25f});
  m.raw<uint8_t>("zp", {}, TensorProto::UINT8, {255});
  m.floats("ws", {3}, {0.5f, 2.0f, 0.125f});
  m.raw<int8_t>("wzp", {3}, TensorProto::INT8, {-128, 127, 0});
  m.floats("bs", {3}, {0.001f, 0.002f, 0.003f});
  m.node("DequantizeLinear", {"q", "s", "zp"}, {"y"});
  attr(m.node("DequantizeLinear", {"w", "ws", "wzp"}, {"wf"}), "axis", int64_t{0});
  attr(m.node("DequantizeLinear", {"b", "bs"}, {"bf"}), "axis", int64_t{0});
  m.output("y", {2, 3});
  m.output("wf", {3, 2});
  m.output("bf", {3});
  const std::vector<uint8_t> q = {0, 1, 128, 254, 255, 7};
  const std::vector<int8_t> w = {-128, 127, -128, 127, 0, -1};
  const std::vector<int32_t> b = {-1000000, 0, 123456789};
  auto outs = test::run_model_outputs(m, {bytes_of(q), bytes_of(w), bytes_of(b)});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  std::vector<float> y, wf, bf;
  for (uint8_t v : q) y.push_back(static_cast<float>(v - 255) * 0.25f);
  const float ws[3] = {0.5f, 2.0f, 0.125f}, bs[3] = {0.001f, 0.002f, 0.003f};
  const int wzp[3] = {-128, 127, 0};
  for (int i = 0; i < 6; ++i) wf.push_back(static_cast<float>(w[i] - wzp[i / 2]) * ws[i / 2]);
  for (int i = 0; i < 3; ++i) bf.push_back(static_cast<float>(b[i]) * bs[i]);
  EXPECT_EQ(to_floats(outs->at(0)), y);
  EXPECT_EQ(to_floats(outs->at(1)), wf);
  EXPECT_EQ(to_floats(outs->at(2)), bf);
}

// A weight stored as int8 with its DequantizeLinear (what a QDQ model
// holds) folds at import into the float values the kernel would compute.
TEST(OnnxQuantOps, ADequantizedConstantWeightFoldsAtImport) {
  ModelBuilder m(13);
  m.input("x", {1, 3});
  m.raw<int8_t>("w", {3, 2}, TensorProto::INT8, {-128, 127, 5, -5, 0, 64});
  m.floats("ws", {2}, {0.5f, 0.25f});
  m.raw<int8_t>("wzp", {2}, TensorProto::INT8, {0, 0});
  attr(m.node("DequantizeLinear", {"w", "ws", "wzp"}, {"wf"}), "axis", int64_t{1});
  m.node("MatMul", {"x", "wf"}, {"y"});
  m.output("y", {1, 2});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  for (const graph::Node& n : g->nodes()) EXPECT_NE(n.kind, graph::OpKind::kDequantize) << n.name;
  auto y = run_model(m, {to_bytes({1.0f, 2.0f, 3.0f})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // Column 0: (-128 + 2 * 5 + 0) * 0.5; column 1: (127 - 2 * 5 + 3 * 64) * 0.25.
  EXPECT_EQ(to_floats(*y), (std::vector<float>{-59.0f, 77.25f}));
}

struct Dynamic {
  std::vector<uint8_t> y;
  float scale = 0;
  uint8_t zero_point = 0;
};

// DynamicQuantizeLinear as ONNX Runtime computes it.
Dynamic dynamic_reference(const std::vector<float>& x) {
  const float lo = std::min(0.0f, *std::min_element(x.begin(), x.end()));
  const float hi = std::max(0.0f, *std::max_element(x.begin(), x.end()));
  Dynamic d;
  d.scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  d.zero_point = quantize<uint8_t>(-lo, d.scale, 0);
  for (float v : x) d.y.push_back(quantize<uint8_t>(v, d.scale, d.zero_point));
  return d;
}

// n values from `first` by `step`, each nudged off the ramp (so neither
// bound sits at an end).
std::vector<float> ramp(int n, float first, float step) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(first + step * static_cast<float>((i * 37) % n));
  return v;
}

class OnnxDynamicQuantize : public ::testing::TestWithParam<std::vector<float>> {};

TEST_P(OnnxDynamicQuantize, MatchesTheReferenceScaleZeroPointAndValues) {
  const std::vector<float>& x = GetParam();
  const int64_t n = static_cast<int64_t>(x.size());
  ModelBuilder m(13);
  m.input("x", {1, n});
  m.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  m.output("y", {1, n}, TensorProto::UINT8);
  m.output("scale", {});
  m.output("zp", {}, TensorProto::UINT8);
  auto outs = test::run_model_outputs(m, {to_bytes(x)});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  const Dynamic want = dynamic_reference(x);
  EXPECT_EQ(values_of<uint8_t>(outs->at(0)), want.y);
  EXPECT_EQ(to_floats(outs->at(1)), std::vector<float>{want.scale});
  EXPECT_EQ(values_of<uint8_t>(outs->at(2)), std::vector<uint8_t>{want.zero_point});
}

INSTANTIATE_TEST_SUITE_P(Inputs, OnnxDynamicQuantize,
                         ::testing::Values(std::vector<float>{-3.5f, 0.f, 1.25f, 7.f, -0.01f, 2.5f},
                                           std::vector<float>{0.5f, 1.f, 2.f, 4.f},  // min widened to 0
                                           std::vector<float>{-4.f, -2.f, -1.f},     // max widened to 0
                                           std::vector<float>{0.f, 0.f, 0.f},        // one value: scale 1
                                           ramp(200, -1.5f, 0.021f),                 // rows of 8 lanes
                                           ramp(192, 0.75f, -0.013f)));              // rows of 64 lanes

// (x - x_zp) * (w - w_zp) summed in int64, for the integer products.
std::vector<int32_t> matmul_reference(const std::vector<uint8_t>& a, const std::vector<int8_t>& b, int m, int k, int n,
                                      const std::vector<int>& a_zp, const std::vector<int>& b_zp) {
  std::vector<int32_t> c(static_cast<size_t>(m * n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int p = 0; p < k; ++p) acc += int64_t{a[i * k + p] - a_zp[i]} * (b[p * n + j] - b_zp[j]);
      c[static_cast<size_t>(i * n + j)] = static_cast<int32_t>(acc);
    }
  return c;
}

// K = 1000 at the extremes: sums up to 3.3e7, past float32's exact 2^24.
TEST(OnnxQuantOps, MatMulIntegerIsExactWithPerRowAndPerColumnZeroPoints) {
  const int m = 3, k = 1000, n = 5;
  std::vector<uint8_t> a(m * k);
  std::vector<int8_t> b(k * n);
  for (int i = 0; i < m * k; ++i) a[i] = i % 7 == 0 ? 3 : 255;
  for (int i = 0; i < k * n; ++i) b[i] = i % 5 == 0 ? 100 : -128;
  const std::vector<uint8_t> a_zp = {0, 1, 2};
  const std::vector<int8_t> b_zp = {0, 127, -1, 5, 0};
  ModelBuilder m_(13);
  m_.input("a", {m, k}, TensorProto::UINT8);
  m_.raw<int8_t>("b", {k, n}, TensorProto::INT8, b);
  m_.raw<uint8_t>("a_zp", {m}, TensorProto::UINT8, a_zp);
  m_.raw<int8_t>("b_zp", {n}, TensorProto::INT8, b_zp);
  m_.node("MatMulInteger", {"a", "b", "a_zp", "b_zp"}, {"y"});
  m_.output("y", {m, n}, TensorProto::INT32);
  auto y = run_model(m_, {bytes_of(a)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*y), matmul_reference(a, b, m, k, n, {0, 1, 2}, {0, 127, -1, 5, 0}));
}

// The form ONNX Runtime's dynamic quantizer writes (uint8 activations with
// one zero point, constant int8 weights with a zero one, K a multiple of 4)
// takes the dot-product path: one matmul_u8s8 node on packed weights and a
// zero-point correction over N. Batched, with the zero point a constant and
// one computed at run time; exact either way.
TEST(OnnxQuantOps, MatMulIntegerOfRuntimeZeroPointTakesTheDotProductPath) {
  const int batch = 2, m = 3, k = 16, n = 5;
  std::vector<uint8_t> a(batch * m * k);
  std::vector<int8_t> b(k * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>((i * 67 + 3) % 256);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>((i * 89 + 5) % 256 - 128);
  for (bool runtime_zero_point : {false, true}) {
    ModelBuilder mb(13);
    mb.input("a", {batch, m, k}, TensorProto::UINT8);
    mb.raw<int8_t>("b", {k, n}, TensorProto::INT8, b);
    mb.raw<int8_t>("b_zp", {}, TensorProto::INT8, {0});
    if (runtime_zero_point)
      mb.input("a_zp", {}, TensorProto::UINT8);
    else
      mb.raw<uint8_t>("a_zp", {}, TensorProto::UINT8, {200});
    mb.node("MatMulInteger", {"a", "b", "a_zp", "b_zp"}, {"y"});
    mb.output("y", {batch, m, n}, TensorProto::INT32);
    auto g = import_onnx_bytes(mb.bytes());
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    int products = 0;
    for (const graph::Node& node : g->nodes()) products += node.kind == graph::OpKind::kMatMulU8S8;
    EXPECT_EQ(products, 1);
    // The zero-point correction is the product's epilogue, in its kernel.
    auto optimized = graph::optimize_graph(*g);
    ASSERT_TRUE(optimized.is_ok());
    for (const graph::FusedGroup& group : graph::fuse_ops(*optimized))
      if (optimized->nodes()[static_cast<size_t>(group.anchor)].kind == graph::OpKind::kMatMulU8S8)
        EXPECT_EQ(group.nodes.size(), 2u) << group.name;
    std::vector<test::Bytes> inputs = {bytes_of(a)};
    if (runtime_zero_point) inputs.push_back(bytes_of(std::vector<uint8_t>{200}));
    auto y = run_model(mb, inputs);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    std::vector<int32_t> want;
    for (int p = 0; p < batch; ++p) {
      const std::vector<uint8_t> rows(a.begin() + p * m * k, a.begin() + (p + 1) * m * k);
      for (int32_t v : matmul_reference(rows, b, m, k, n, std::vector<int>(m, 200), std::vector<int>(n, 0)))
        want.push_back(v);
    }
    EXPECT_EQ(values_of<int32_t>(*y), want) << (runtime_zero_point ? "zero point at run time" : "constant");
  }
}

// Padding holds the input's zero point: after its subtraction, zeros. `c`
// input channels in all; w is kout x c/groups x r x r.
std::vector<int32_t> conv_reference(const std::vector<uint8_t>& x, const std::vector<int8_t>& w, int c, int h, int wd,
                                    int kout, int r, int pad, int x_zp, const std::vector<int>& w_zp,
                                    const std::vector<int32_t>& bias, int groups = 1) {
  const int oh = h + 2 * pad - r + 1, ow = wd + 2 * pad - r + 1;
  const int cg = c / groups, kg = kout / groups;
  std::vector<int32_t> y(static_cast<size_t>(kout * oh * ow));
  for (int o = 0; o < kout; ++o)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j) {
        int32_t acc = bias.empty() ? 0 : bias[o];
        for (int g = 0; g < cg; ++g)
          for (int u = 0; u < r; ++u)
            for (int v = 0; v < r; ++v) {
              const int yy = i + u - pad, xx = j + v - pad, ch = (o / kg) * cg + g;
              if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
              acc += (x[(ch * h + yy) * wd + xx] - x_zp) * (w[((o * cg + g) * r + u) * r + v] - w_zp[o]);
            }
        y[static_cast<size_t>((o * oh + i) * ow + j)] = acc;
      }
  return y;
}

struct ConvData {
  std::vector<uint8_t> x;
  std::vector<int8_t> w;
};

ConvData conv_data(int c, int h, int wd, int kout, int r, int groups = 1) {
  ConvData d;
  for (int i = 0; i < c * h * wd; ++i) d.x.push_back(static_cast<uint8_t>((i * 37 + 11) % 256));
  for (int i = 0; i < kout * c / groups * r * r; ++i) d.w.push_back(static_cast<int8_t>((i * 53 + 7) % 256 - 128));
  return d;
}

TEST(OnnxQuantOps, ConvIntegerPadsWithTheZeroPointAndTakesPerChannelWeightZeroPoints) {
  const int c = 3, h = 6, wd = 5, kout = 4, r = 3;
  const ConvData d = conv_data(c, h, wd, kout, r);
  ModelBuilder m(13);
  m.input("x", {1, c, h, wd}, TensorProto::UINT8);
  m.raw<int8_t>("w", {kout, c, r, r}, TensorProto::INT8, d.w);
  m.raw<uint8_t>("x_zp", {}, TensorProto::UINT8, {131});
  m.raw<int8_t>("w_zp", {kout}, TensorProto::INT8, {0, -128, 127, 3});
  attr(m.node("ConvInteger", {"x", "w", "x_zp", "w_zp"}, {"y"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.output("y", {1, kout, h, wd}, TensorProto::INT32);
  auto y = run_model(m, {bytes_of(d.x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*y), conv_reference(d.x, d.w, c, h, wd, kout, r, 1, 131, {0, -128, 127, 3}, {}));
}

TEST(OnnxQuantOps, QLinearConvRequantizesPerChannelWithItsBias) {
  const int c = 2, h = 5, wd = 5, kout = 3, r = 3;
  const ConvData d = conv_data(c, h, wd, kout, r);
  const float xs = 0.02f, ys = 0.5f;
  const std::vector<float> ws = {0.01f, 0.003f, 0.05f};
  const std::vector<int32_t> bias = {1000, -5000, 77};
  ModelBuilder m(13);
  m.input("x", {1, c, h, wd}, TensorProto::UINT8);
  m.floats("xs", {}, {xs});
  m.raw<uint8_t>("xzp", {}, TensorProto::UINT8, {120});
  m.raw<int8_t>("w", {kout, c, r, r}, TensorProto::INT8, d.w);
  m.floats("ws", {kout}, ws);
  m.raw<int8_t>("wzp", {kout}, TensorProto::INT8, {0, 0, 0});
  m.floats("ys", {}, {ys});
  m.raw<uint8_t>("yzp", {}, TensorProto::UINT8, {100});
  m.raw<int32_t>("b", {kout}, TensorProto::INT32, bias);
  m.node("QLinearConv", {"x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"}, {"y"});
  m.output("y", {1, kout, h - 2, wd - 2}, TensorProto::UINT8);
  auto y = run_model(m, {bytes_of(d.x)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const auto acc = conv_reference(d.x, d.w, c, h, wd, kout, r, 0, 120, {0, 0, 0}, bias);
  std::vector<uint8_t> want;
  const size_t plane = static_cast<size_t>((h - 2) * (wd - 2));
  for (size_t i = 0; i < acc.size(); ++i) {
    const float multiplier = ws[i / plane] * xs / ys;
    want.push_back(quantize<uint8_t>(static_cast<float>(acc[i]) * multiplier, 1.0f, 100));
  }
  EXPECT_EQ(values_of<uint8_t>(*y), want);
}

int count_kind(const graph::Graph& g, graph::OpKind kind) {
  int n = 0;
  for (const graph::Node& node : g.nodes()) n += node.kind == kind;
  return n;
}

// Input channels a multiple of 4, uint8 x with one zero point and constant
// int8 weights with zero points of 0: the dot-product conv (conv_u8s8),
// padding by the zero point, exact in NCHW as imported and in NHWC with its
// weights packed to words. A zero point known only at run time takes it too,
// the padding reading it.
TEST(OnnxQuantOps, ConvIntegerOfFourChannelMultiplesTakesTheDotProductPath) {
  const int c = 8, h = 5, wd = 6, kout = 5, r = 3;
  const ConvData d = conv_data(c, h, wd, kout, r);
  for (int variant = 0; variant < 3; ++variant) {
    const bool runtime_zero_point = variant > 0;
    const int pad = variant == 2 ? 1 : variant == 1 ? 0 : 1;
    ModelBuilder m(13);
    m.input("x", {1, c, h, wd}, TensorProto::UINT8);
    m.raw<int8_t>("w", {kout, c, r, r}, TensorProto::INT8, d.w);
    if (runtime_zero_point)
      m.input("x_zp", {}, TensorProto::UINT8);
    else
      m.raw<uint8_t>("x_zp", {}, TensorProto::UINT8, {131});
    m.raw<int8_t>("w_zp", {kout}, TensorProto::INT8, std::vector<int8_t>(kout, 0));
    attr(m.node("ConvInteger", {"x", "w", "x_zp", "w_zp"}, {"y"}), "pads", std::vector<int64_t>(4, pad));
    const int oh = h + 2 * pad - r + 1, ow = wd + 2 * pad - r + 1;
    m.output("y", {1, kout, oh, ow}, TensorProto::INT32);
    auto g = import_onnx_bytes(m.bytes());
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    EXPECT_EQ(count_kind(*g, graph::OpKind::kConvU8S8), 1) << "variant " << variant;
    auto opt = graph::optimize_graph(*g);
    ASSERT_TRUE(opt.is_ok());
    auto nhwc = graph::convert_layout_nhwc(*opt);
    ASSERT_TRUE(nhwc.is_ok()) << nhwc.status().to_string();
    // The zero point's correction (per channel, computed at run time) follows
    // the conv in NHWC: the subtraction reads the conv's output itself.
    std::map<graph::ValueId, graph::OpKind> producer;
    for (const graph::Node& n : nhwc->nodes()) {
      for (graph::ValueId v : n.outputs) producer[v] = n.kind;
      if (n.kind == graph::OpKind::kSub) EXPECT_EQ(producer.at(n.inputs[0]), graph::OpKind::kConvU8S8) << variant;
    }
    std::map<graph::ValueId, test::Bytes> feed = {{opt->inputs()[0], bytes_of(d.x)}};
    if (runtime_zero_point) feed[opt->inputs()[1]] = bytes_of(std::vector<uint8_t>{131});
    const auto want = conv_reference(d.x, d.w, c, h, wd, kout, r, pad, 131, std::vector<int>(kout, 0), {});
    for (const graph::Graph* run : {&*opt, &*nhwc}) {
      auto y = graph::test::run_graph(*run, feed);
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      EXPECT_EQ(values_of<int32_t>(y->at(0)), want) << "variant " << variant << (run == &*nhwc ? " nhwc" : " nchw");
    }
  }
}

// A Conv between DequantizeLinear nodes, as a static QDQ model holds it
// (uint8 activations, per-channel int8 weights folded at import, a float
// bias): the int32 conv_u8s8 scaled by x_scale * w_scale[k] plus the bias,
// the float conv of the dequantized values up to float32 rounding, and the
// NHWC form (packed weights) equal to the NCHW one. `c` input channels.
void check_dequantized_conv(int c, bool int8_activations = false, int groups = 1, int kout = 3) {
  const int h = 6, wd = 6, r = 3;
  const ConvData d = conv_data(c, h, wd, kout, r, groups);
  const float xs = 0.02f;
  std::vector<float> ws, bias;
  for (int k = 0; k < kout; ++k) {
    ws.push_back(std::vector<float>{0.01f, 0.003f, 0.05f}[k % 3]);
    bias.push_back(std::vector<float>{0.5f, -1.25f, 3.0f}[k % 3] + 0.125f * k);
  }
  ModelBuilder m(13);
  // int8 activations hold the same differences from a zero point 128 less.
  m.input("x", {1, c, h, wd}, int8_activations ? TensorProto::INT8 : TensorProto::UINT8);
  m.floats("xs", {}, {xs});
  if (int8_activations)
    m.raw<int8_t>("xzp", {}, TensorProto::INT8, {120 - 128});
  else
    m.raw<uint8_t>("xzp", {}, TensorProto::UINT8, {120});
  m.raw<int8_t>("w", {kout, c / groups, r, r}, TensorProto::INT8, d.w);
  m.floats("ws", {kout}, ws);
  m.raw<int8_t>("wzp", {kout}, TensorProto::INT8, std::vector<int8_t>(static_cast<size_t>(kout), 0));
  m.floats("b", {kout}, bias);
  m.node("DequantizeLinear", {"x", "xs", "xzp"}, {"xf"});
  attr(m.node("DequantizeLinear", {"w", "ws", "wzp"}, {"wf"}), "axis", int64_t{0});
  onnx::NodeProto* conv = m.node("Conv", {"xf", "wf", "b"}, {"y"});
  attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  attr(conv, "group", int64_t{groups});
  m.output("y", {1, kout, h, wd});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(count_kind(*g, graph::OpKind::kConvU8S8), 1);
  EXPECT_EQ(count_kind(*g, graph::OpKind::kConv), 0);
  auto opt = graph::optimize_graph(*g);
  ASSERT_TRUE(opt.is_ok());
  auto nhwc = graph::convert_layout_nhwc(*opt);
  ASSERT_TRUE(nhwc.is_ok()) << nhwc.status().to_string();
  const auto acc = conv_reference(d.x, d.w, c, h, wd, kout, r, 1, 120, std::vector<int>(kout, 0), {}, groups);
  std::vector<uint8_t> x = d.x;
  if (int8_activations)
    for (uint8_t& v : x) v = static_cast<uint8_t>(v - 128);  // the int8 v - 128's bits
  std::vector<std::vector<float>> outputs;
  for (const graph::Graph* run : {&*opt, &*nhwc}) {
    auto y = graph::test::run_graph(*run, {{run->inputs()[0], bytes_of(x)}});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    outputs.push_back(to_floats(y->at(0)));
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  const size_t plane = static_cast<size_t>(h * wd);
  for (size_t i = 0; i < acc.size(); ++i) {
    const double want = static_cast<double>(acc[i]) * xs * ws[i / plane] + bias[i / plane];
    EXPECT_NEAR(outputs[0][i], want, 1e-5 * std::max(1.0, std::fabs(want))) << i;
  }
}

TEST(OnnxQuantOps, AConvOfDequantizedOperandsRunsOnTheIntegers) {
  check_dequantized_conv(4);
}

// An image's three channels are padded to four, by the zero point with
// weights of zero.
TEST(OnnxQuantOps, AConvOfDequantizedImageChannelsRunsOnTheIntegers) {
  check_dequantized_conv(3);
}

// int8 activations (ONNX Runtime's S8S8 form) are shifted to uint8 (x + 128,
// zero point + 128) for the dot product.
TEST(OnnxQuantOps, AConvOfDequantizedInt8ActivationsRunsOnTheIntegers) {
  check_dequantized_conv(4, true);
}

// A depthwise conv (a MobileNet's: one channel a group), with int8
// activations and with a channel multiplier of 2; and a grouped conv of
// whole words (two groups of 8 channels) on the dot product.
TEST(OnnxQuantOps, ADepthwiseConvOfDequantizedOperandsRunsOnTheIntegers) {
  check_dequantized_conv(5, false, 5, 5);
  check_dequantized_conv(4, true, 4, 4);
  check_dequantized_conv(3, false, 3, 6);
}
TEST(OnnxQuantOps, AGroupedConvOfWholeWordsRunsOnTheIntegers) {
  check_dequantized_conv(16, false, 2, 6);
}

// A MatMul, or a Gemm with its weights transposed and a bias, between
// DequantizeLinear nodes as a static QDQ model holds them (uint8 or int8
// activations, per-column int8 weights): matmul_u8s8 on packed words, then
// x_scale * w_scale[n] and the bias; equal to the float product of the
// dequantized values up to float32 rounding.
void check_dequantized_matmul(bool gemm, bool int8_activations) {
  const int m = 3, k = 12, n = 5;
  std::vector<uint8_t> x;
  std::vector<int8_t> w;
  for (int i = 0; i < m * k; ++i) x.push_back(static_cast<uint8_t>((i * 37 + 11) % 256));
  for (int i = 0; i < k * n; ++i) w.push_back(static_cast<int8_t>((i * 53 + 7) % 256 - 128));
  const float xs = 0.02f;
  const int xz = 120;
  const std::vector<float> ws = {0.01f, 0.003f, 0.05f, 0.02f, 0.007f}, bias = {0.5f, -1.25f, 3.0f, 0.0f, 1.0f};
  ModelBuilder mb(13);
  mb.input("x", {m, k}, int8_activations ? TensorProto::INT8 : TensorProto::UINT8);
  mb.floats("xs", {}, {xs});
  if (int8_activations)
    mb.raw<int8_t>("xzp", {}, TensorProto::INT8, {xz - 128});
  else
    mb.raw<uint8_t>("xzp", {}, TensorProto::UINT8, {static_cast<uint8_t>(xz)});
  // Gemm's weights N x K (transB), MatMul's K x N; the scales along N.
  std::vector<int8_t> stored = w;
  if (gemm)
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < k; ++c) stored[static_cast<size_t>(r * k + c)] = w[static_cast<size_t>(c * n + r)];
  mb.raw<int8_t>("w", gemm ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, TensorProto::INT8, stored);
  mb.floats("ws", {n}, ws);
  mb.raw<int8_t>("wzp", {n}, TensorProto::INT8, std::vector<int8_t>(n, 0));
  mb.node("DequantizeLinear", {"x", "xs", "xzp"}, {"xf"});
  attr(mb.node("DequantizeLinear", {"w", "ws", "wzp"}, {"wf"}), "axis", int64_t{gemm ? 0 : 1});
  if (gemm) {
    mb.floats("b", {n}, bias);
    attr(mb.node("Gemm", {"xf", "wf", "b"}, {"y"}), "transB", int64_t{1});
  } else {
    mb.node("MatMul", {"xf", "wf"}, {"y"});
  }
  mb.output("y", {m, n});
  auto g = import_onnx_bytes(mb.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(count_kind(*g, graph::OpKind::kMatMulU8S8), 1);
  EXPECT_EQ(count_kind(*g, graph::OpKind::kGemm) + count_kind(*g, graph::OpKind::kMatMul), 0);
  std::vector<uint8_t> xin = x;
  if (int8_activations)
    for (uint8_t& v : xin) v = static_cast<uint8_t>(v - 128);
  auto y = graph::test::run_graph(*g, {{g->inputs()[0], bytes_of(xin)}});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const std::vector<float> got = to_floats(y->at(0));
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c) {
      int64_t acc = 0;
      for (int i = 0; i < k; ++i) acc += (x[static_cast<size_t>(r * k + i)] - xz) * w[static_cast<size_t>(i * n + c)];
      const double want = static_cast<double>(acc) * xs * ws[c] + (gemm ? bias[c] : 0.0f);
      EXPECT_NEAR(got[static_cast<size_t>(r * n + c)], want, 1e-5 * std::max(1.0, std::fabs(want))) << r << "," << c;
    }
}

TEST(OnnxQuantOps, AMatMulOfDequantizedOperandsRunsOnTheIntegers) {
  check_dequantized_matmul(false, false);
  check_dequantized_matmul(false, true);
}
TEST(OnnxQuantOps, AGemmOfDequantizedOperandsRunsOnTheIntegersWithItsBias) {
  check_dequantized_matmul(true, false);
  check_dequantized_matmul(true, true);
}

TEST(OnnxQuantOps, QLinearMatMulRequantizesPerColumn) {
  const int m = 4, k = 9, n = 3;
  std::vector<uint8_t> a;
  std::vector<int8_t> b;
  for (int i = 0; i < m * k; ++i) a.push_back(static_cast<uint8_t>((i * 29) % 256));
  for (int i = 0; i < k * n; ++i) b.push_back(static_cast<int8_t>((i * 41) % 256 - 128));
  const std::vector<float> bs = {0.01f, 0.02f, 0.004f};
  ModelBuilder mb(13);
  mb.input("a", {m, k}, TensorProto::UINT8);
  mb.floats("as", {}, {0.05f});
  mb.raw<uint8_t>("azp", {}, TensorProto::UINT8, {128});
  mb.raw<int8_t>("b", {k, n}, TensorProto::INT8, b);
  mb.floats("bs", {n}, bs);
  mb.raw<int8_t>("bzp", {n}, TensorProto::INT8, {0, 0, 0});
  mb.floats("ys", {}, {0.1f});
  mb.raw<int8_t>("yzp", {}, TensorProto::INT8, {-10});
  mb.node("QLinearMatMul", {"a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"}, {"y"});
  mb.output("y", {m, n}, TensorProto::INT8);
  auto y = run_model(mb, {bytes_of(a)});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const auto acc = matmul_reference(a, b, m, k, n, std::vector<int>(m, 128), {0, 0, 0});
  std::vector<int8_t> want;
  for (size_t i = 0; i < acc.size(); ++i)
    want.push_back(quantize<int8_t>(static_cast<float>(acc[i]) * (bs[i % n] * 0.05f / 0.1f), 1.0f, -10));
  EXPECT_EQ(values_of<int8_t>(*y), want);
}

// Bad input: each refused at import with the node's name and why.
struct BadCase {
  const char* name;
  std::function<void(ModelBuilder&)> build;
  const char* why;
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) {
  return os << c.name;
}

class OnnxQuantRefusal : public ::testing::TestWithParam<BadCase> {};

TEST_P(OnnxQuantRefusal, NamesTheNodeAndWhy) {
  ModelBuilder m(13);
  GetParam().build(m);
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("'bad'"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find(GetParam().why), std::string::npos) << g.status().message();
}

void quantize_with_scale(ModelBuilder& m, float scale) {
  m.input("x", {4});
  m.floats("s", {}, {scale});
  m.node("QuantizeLinear", {"x", "s"}, {"y"}, "bad");
  m.output("y", {4}, TensorProto::UINT8);
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, OnnxQuantRefusal,
    ::testing::Values(BadCase{"ZeroScale", [](ModelBuilder& m) { quantize_with_scale(m, 0.0f); },
                              "not a positive finite number"},
                      BadCase{"NegativeScale", [](ModelBuilder& m) { quantize_with_scale(m, -0.5f); },
                              "not a positive finite number"},
                      BadCase{"PerAxisLengthDiffers",
                              [](ModelBuilder& m) {
                                m.input("x", {2, 3});
                                m.floats("s", {2}, {0.1f, 0.2f});
                                m.raw<uint8_t>("zp", {2}, TensorProto::UINT8, {0, 0});
                                attr(m.node("QuantizeLinear", {"x", "s", "zp"}, {"y"}, "bad"), "axis", int64_t{1});
                                m.output("y", {2, 3}, TensorProto::UINT8);
                              },
                              "has 2 values, but axis 1"},
                      BadCase{"ZeroPointOfAnotherType",
                              [](ModelBuilder& m) {
                                m.input("a", {2, 2}, TensorProto::UINT8);
                                m.input("b", {2, 2}, TensorProto::INT8);
                                m.raw<int8_t>("azp", {}, TensorProto::INT8, {0});
                                m.node("MatMulInteger", {"a", "b", "azp"}, {"y"}, "bad");
                                m.output("y", {2, 2}, TensorProto::INT32);
                              },
                              "zero point is int8, its tensor uint8"},
                      BadCase{"QuantizingToInt32",
                              [](ModelBuilder& m) {
                                m.input("x", {4});
                                m.floats("s", {}, {0.5f});
                                m.raw<int32_t>("zp", {}, TensorProto::INT32, {0});
                                m.node("QuantizeLinear", {"x", "s", "zp"}, {"y"}, "bad");
                                m.output("y", {4}, TensorProto::INT32);
                              },
                              "quantizing to int32 is not supported"}));

}  // namespace
}  // namespace tessera::frontend
