#include "compiler/frontend/onnx_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compiler/graph/passes.h"
#include "tests/compiler/frontend/onnx_test_util.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::frontend {
namespace {

using graph::test::close;
using graph::test::random_floats;
using graph::test::to_bytes;
using graph::test::to_floats;
using test::attr;
using test::ModelBuilder;

// Imports, optimizes and runs a one-input model; returns output 0.
Result<std::vector<float>> import_and_run(const std::string& bytes, const std::vector<float>& x,
                                          const ImportOptions& options = {}) {
  TESSERA_ASSIGN_OR_RETURN(graph::Graph g, import_onnx_bytes(bytes, options));
  TESSERA_ASSIGN_OR_RETURN(graph::Graph opt, graph::optimize_graph(g));
  TESSERA_ASSIGN_OR_RETURN(auto outs, graph::test::run_graph(opt, {{opt.inputs().at(0), to_bytes(x)}}));
  return to_floats(outs.at(0));
}

std::vector<float> max_pool(const std::vector<float>& x, int64_t c, int64_t h, int64_t w, int64_t k, int64_t s,
                            int64_t pad, int64_t oh, int64_t ow) {
  std::vector<float> out(static_cast<size_t>(c * oh * ow), -INFINITY);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx)
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < k; ++j) {
            const int64_t iy = y * s + i - pad, ix = xx * s + j - pad;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            float& o = out[(ch * oh + y) * ow + xx];
            o = std::max(o, x[(ch * h + iy) * w + ix]);
          }
  return out;
}

// conv(group 2, dilation 2) -> BN -> relu -> maxpool -> conv(SAME_UPPER, stride
// 2) -> + bias -> leaky_relu -> global pool -> flatten via Shape/Gather ->
// gemm -> softmax.
ModelBuilder small_cnn(int64_t batch_dim) {
  ModelBuilder m(13);
  m.input("x", {batch_dim, 4, 7, 7});
  m.floats("w1", {6, 2, 3, 3}, random_floats(108, 1));
  m.floats("b1", {6}, random_floats(6, 2));
  m.floats("gamma", {6}, {1.0f, 0.5f, 2.0f, -1.0f, 0.75f, 1.25f});
  m.floats("beta", {6}, random_floats(6, 3));
  m.floats("mean", {6}, random_floats(6, 4));
  m.floats("var", {6}, {1.0f, 0.5f, 0.25f, 2.0f, 1.5f, 0.8f});
  m.floats("w2", {8, 6, 3, 3}, random_floats(432, 5));
  m.floats("b2", {8, 1, 1}, random_floats(8, 6));
  m.floats("fc.w", {5, 8}, random_floats(40, 7));
  m.floats("fc.b", {5}, random_floats(5, 8));
  m.int64s("zero", {}, {0});
  m.int64s("minus1", {1}, {-1});
  auto* c1 = m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  attr(c1, "group", int64_t{2});
  attr(c1, "dilations", std::vector<int64_t>{2, 2});
  attr(c1, "pads", std::vector<int64_t>{2, 2, 2, 2});
  m.node("BatchNormalization", {"c1", "gamma", "beta", "mean", "var"}, {"bn"}, "bn1");
  m.node("Relu", {"bn"}, {"r1"});
  auto* p = m.node("MaxPool", {"r1"}, {"p1"});
  attr(p, "kernel_shape", std::vector<int64_t>{3, 3});
  attr(p, "strides", std::vector<int64_t>{2, 2});
  attr(p, "pads", std::vector<int64_t>{1, 1, 1, 1});
  auto* c2 = m.node("Conv", {"p1", "w2"}, {"c2"}, "conv2");
  attr(c2, "auto_pad", std::string("SAME_UPPER"));
  attr(c2, "strides", std::vector<int64_t>{2, 2});
  m.node("Add", {"c2", "b2"}, {"a2"});
  auto* lr = m.node("LeakyRelu", {"a2"}, {"l2"});
  attr(lr, "alpha", 0.1f);
  m.node("GlobalAveragePool", {"l2"}, {"g"});
  m.node("Shape", {"g"}, {"shape"});
  m.node("Gather", {"shape", "zero"}, {"n"});
  auto* u = m.node("Unsqueeze", {"n", "zero"}, {"n1"});
  (void)u;
  auto* cat = m.node("Concat", {"n1", "minus1"}, {"target"});
  attr(cat, "axis", int64_t{0});
  m.node("Reshape", {"g", "target"}, {"flat"});
  auto* gemm = m.node("Gemm", {"flat", "fc.w", "fc.b"}, {"logits"});
  attr(gemm, "transB", int64_t{1});
  m.node("Softmax", {"logits"}, {"y"});
  m.output("y", {batch_dim, 5});
  return m;
}

std::vector<float> small_cnn_reference(const std::vector<float>& x) {
  graph::ConvAttrs a1;
  a1.groups = 2;
  a1.dilation_h = a1.dilation_w = 2;
  a1.pad_top = a1.pad_left = a1.pad_bottom = a1.pad_right = 2;
  auto v = graph::test::naive_conv(x, {1, 4, 7, 7}, random_floats(108, 1), {6, 2, 3, 3}, random_floats(6, 2), a1);
  const std::vector<float> gamma{1.0f, 0.5f, 2.0f, -1.0f, 0.75f, 1.25f}, var{1.0f, 0.5f, 0.25f, 2.0f, 1.5f, 0.8f};
  const auto beta = random_floats(6, 3), mean = random_floats(6, 4);
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t c = i / 49;
    v[i] = std::max(0.0f, (v[i] - mean[c]) / std::sqrt(var[c] + 1e-5f) * gamma[c] + beta[c]);
  }
  v = max_pool(v, 6, 7, 7, 3, 2, 1, 4, 4);
  graph::ConvAttrs a2;  // SAME_UPPER on 4x4, k3, s2: total pad 1 -> 0 before, 1 after
  a2.stride_h = a2.stride_w = 2;
  a2.pad_bottom = a2.pad_right = 1;
  v = graph::test::naive_conv(v, {1, 6, 4, 4}, random_floats(432, 5), {8, 6, 3, 3}, {}, a2);
  const auto b2 = random_floats(8, 6);
  std::vector<float> pooled(8, 0.0f);
  for (size_t i = 0; i < v.size(); ++i) {
    float t = v[i] + b2[i / 4];
    pooled[i / 4] += (t > 0 ? t : 0.1f * t) / 4.0f;
  }
  const auto fw = random_floats(40, 7);
  std::vector<float> logits = random_floats(5, 8);
  for (int o = 0; o < 5; ++o)
    for (int c = 0; c < 8; ++c) logits[o] += pooled[c] * fw[o * 8 + c];
  const float mx = *std::max_element(logits.begin(), logits.end());
  float total = 0;
  for (float& l : logits) total += (l = std::exp(l - mx));
  for (float& l : logits) l /= total;
  return logits;
}

TEST(OnnxImport, SmallCnnMatchesReference) {
  const auto x = random_floats(196, 9);
  auto got = import_and_run(small_cnn(1).bytes(), x);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(close(*got, small_cnn_reference(x), 1e-4, 1e-6));
}

TEST(OnnxImport, ShapeOpsFoldAndBatchNormFoldsIntoConv) {
  auto g = import_onnx_bytes(small_cnn(1).bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  for (const graph::Node& n : g->nodes()) EXPECT_NE(n.kind, graph::OpKind::kShape) << n.name;
  auto opt = graph::optimize_graph(*g);
  ASSERT_TRUE(opt.is_ok());
  const auto groups = graph::fuse_ops(*opt);
  std::vector<std::string> names;
  for (const auto& grp : groups) names.push_back(grp.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fused_conv_relu", "fused_max_pool", "fused_conv_add_leaky_relu",
                                             "fused_global_avg_pool", "fused_reshape", "fused_gemm", "fused_softmax"}))
      << graph::groups_to_string(*opt, groups);
}

TEST(OnnxImport, UnsupportedOperatorsAreEachListedWithTheirNodeNames) {
  ModelBuilder m;
  m.input("x", {1, 4});
  m.node("Relu", {"x"}, {"a"}, "fine");
  m.node("NonMaxSuppression", {"a"}, {"b"}, "nms_1");
  m.node("Foo", {"b"}, {"y"}, "mystery");
  m.output("y", {1, 4});
  auto g = import_onnx_bytes(m.bytes(), {}, "model.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("model.onnx: 2 problems"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'nms_1' (NonMaxSuppression): unsupported operator"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'mystery' (Foo): unsupported operator"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("fine"), std::string::npos) << msg;
}

TEST(OnnxImport, TruncatedFileIsAParseError) {
  const std::string bytes = small_cnn(1).bytes();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{7}}) {
    auto g = import_onnx_bytes(bytes.substr(0, cut), {}, "cut.onnx");
    ASSERT_FALSE(g.is_ok()) << "cut at " << cut;
    EXPECT_EQ(g.status().code(), ErrorCode::kParseError) << g.status().to_string();
  }
  auto garbage = import_onnx_bytes("this is not a protobuf at all \xff\xff\xff", {}, "junk.onnx");
  EXPECT_EQ(garbage.status().code(), ErrorCode::kParseError);
  EXPECT_EQ(import_onnx_bytes("").status().code(), ErrorCode::kParseError);
}

TEST(OnnxImport, CorruptedBytesNeverCrash) {
  // Flip bytes of a valid model all over: every import returns a value (a
  // graph or an error), never a crash. Run under the sanitizers this also
  // checks for undefined behaviour.
  const std::string bytes = small_cnn(1).bytes();
  uint32_t seed = 12345;
  int errors = 0;
  for (int round = 0; round < 300; ++round) {
    std::string mutated = bytes;
    for (int k = 0; k < 1 + round % 4; ++k) {
      seed = seed * 1664525u + 1013904223u;
      const size_t at = (seed >> 8) % mutated.size();
      seed = seed * 1664525u + 1013904223u;
      mutated[at] = static_cast<char>(seed >> 24);
    }
    auto g = import_onnx_bytes(mutated, {}, "mutated.onnx");
    if (!g.is_ok()) {
      ++errors;
      EXPECT_TRUE(g.status().code() == ErrorCode::kParseError || g.status().code() == ErrorCode::kInvalidArgument)
          << g.status().to_string();
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(OnnxImport, ZeroStrideIsAnErrorNotADivisionByZero) {
  ModelBuilder m;
  m.input("x", {1, 1, 4, 4});
  auto* p = m.node("MaxPool", {"x"}, {"y"}, "pool0");
  attr(p, "kernel_shape", std::vector<int64_t>{2, 2});
  attr(p, "strides", std::vector<int64_t>{0, 1});
  m.output("y", {1, 1, 2, 2});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("node 'pool0' (MaxPool): strides must be positive"), std::string::npos)
      << g.status().message();
}

TEST(OnnxImport, MissingFileIsNotFound) {
  EXPECT_EQ(import_onnx_file("/nonexistent/model.onnx").status().code(), ErrorCode::kNotFound);
}

TEST(OnnxImport, UnboundDynamicDimensionNamesTheInputAndItsReaders) {
  auto g = import_onnx_bytes(small_cnn(-1).bytes(), {}, "dyn.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("input 'x' has unbound dynamic dimensions (N1)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--input-shape x:d0,d1,..."), std::string::npos) << msg;
  EXPECT_NE(msg.find("read by node 'conv1' (Conv)"), std::string::npos) << msg;
}

TEST(OnnxImport, BoundDynamicDimensionImportsAndRuns) {
  auto shapes = parse_input_shapes({"x:1,4,7,7"});
  ASSERT_TRUE(shapes.is_ok());
  const auto x = random_floats(196, 9);
  auto got = import_and_run(small_cnn(-1).bytes(), x, ImportOptions{*shapes});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(close(*got, small_cnn_reference(x), 1e-4, 1e-6));
}

TEST(OnnxImport, BindingThatContradictsTheModelIsAnError) {
  auto g = import_onnx_bytes(small_cnn(-1).bytes(), ImportOptions{{{"x", {1, 3, 7, 7}}, {"nope", {1}}}});
  ASSERT_FALSE(g.is_ok());
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("dim 1 is 3 but the model fixes it to 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'nope', which is not a model input"), std::string::npos) << msg;
}

TEST(OnnxImport, ReshapeToARuntimeShapeIsListedAsNotStatic) {
  ModelBuilder m;
  m.input("x", {2, 6});
  m.input("shape", {2}, onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "shape"}, {"r"}, "dyn_reshape");
  m.node("Relu", {"r"}, {"y"}, "after");
  m.output("y", {3, 4});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("node 'dyn_reshape' (Reshape): the target shape is not static"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("after"), std::string::npos) << "a follow-on error should not be listed: " << msg;
}

TEST(OnnxImport, LegacyAttributesOfOldOpsetsAreListedPerNode) {
  ModelBuilder m(6);
  m.input("x", {2, 3});
  // (Add's broadcast and axis of opset 6 are supported: onnx_legacy_test.cc.)
  auto* dropout = m.node("Dropout", {"x"}, {"a"}, "old_dropout");
  attr(dropout, "is_test", int64_t{0});
  m.node("Relu", {"a"}, {"y"}, "ok_relu");
  m.output("y", {2, 3});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(
      g.status().message().find("node 'old_dropout' (Dropout): legacy attribute 'is_test=0' (training, opset < 7)"),
      std::string::npos)
      << g.status().message();
}

TEST(OnnxImport, SplitBecomesOneSlicePerOutput) {
  ModelBuilder m(13);
  m.input("x", {2, 6});
  m.int64s("parts", {3}, {1, 2, 3});
  auto* split = m.node("Split", {"x", "parts"}, {"a", "b", "c"}, "split");
  attr(split, "axis", int64_t{1});
  m.node("Relu", {"c"}, {"y"});
  m.output("a", {2, 1});
  m.output("y", {2, 3});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto x = random_floats(12, 3);
  auto outs = graph::test::run_graph(*g, {{g->inputs()[0], to_bytes(x)}});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_TRUE(close(to_floats((*outs)[0]), {x[0], x[6]}));
  std::vector<float> want;
  for (int r = 0; r < 2; ++r)
    for (int c = 3; c < 6; ++c) want.push_back(std::max(0.0f, x[r * 6 + c]));
  EXPECT_TRUE(close(to_floats((*outs)[1]), want));
}

TEST(ParseInputShapes, AcceptsNameColonDims) {
  auto s = parse_input_shapes({"x:1,3,224,224", "ids:4"});
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->at("x"), (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(s->at("ids"), (std::vector<int64_t>{4}));
}

// name=dims, and tvmc's bracketed dims; a name holding colons keeps them.
TEST(ParseInputShapes, AcceptsAnEqualsSignAndBracketedDims) {
  auto s = parse_input_shapes({"x=1,3,48,192", "y:[2,5]", "input:0:[4]"});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->at("x"), (std::vector<int64_t>{1, 3, 48, 192}));
  EXPECT_EQ(s->at("y"), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(s->at("input:0"), (std::vector<int64_t>{4}));
}

TEST(ParseInputShapes, RejectsMalformedSpecs) {
  for (const char* bad : {"x", ":1,2", "x:", "x:1,a", "x:0", "x:1,,2", "x:[]", "x:[1,2", "=3"}) {
    auto s = parse_input_shapes({bad});
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(parse_input_shapes({"x:1", "x:2"}).is_ok());
}

}  // namespace
}  // namespace tessera::frontend
