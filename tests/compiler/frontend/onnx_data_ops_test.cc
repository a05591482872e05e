// The converters of compiler/frontend/onnx_data_ops.cc on small models with
// odd shapes, run through lower + the reference interpreter, against values
// computed by hand.
#include <gtest/gtest.h>

#include "tests/compiler/frontend/onnx_run_util.h"

namespace tessera::frontend {
namespace {

using graph::test::to_bytes;
using graph::test::to_floats;
using test::attr;
using test::bytes_of;
using test::ModelBuilder;
using test::run_model;
using test::values_of;

std::vector<float> iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(OnnxDataOps, ConstantOfShapeSizeRangeAndEyeLikeAreConstants) {
  ModelBuilder m(17);
  m.input("x", {2, 3});
  m.int64s("shape", {2}, {2, 3});
  m.int64s("start", {}, {7});
  m.int64s("limit", {}, {-2});
  m.int64s("delta", {}, {-3});
  auto* c = m.node("ConstantOfShape", {"shape"}, {"fill"});
  auto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(2.5f);
  m.node("Add", {"x", "fill"}, {"y"});
  m.node("Size", {"x"}, {"size"});
  m.node("Range", {"start", "limit", "delta"}, {"range"});
  attr(m.node("EyeLike", {"x"}, {"eye"}), "k", int64_t{1});
  m.output("y", {2, 3});
  m.output("size", {}, onnx::TensorProto::INT64);
  m.output("range", {3}, onnx::TensorProto::INT64);
  m.output("eye", {2, 3});
  auto outs = test::run_model_outputs(m, {to_bytes({0, 1, 2, 3, 4, 5})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(to_floats(outs->at(0)), (std::vector<float>{2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f}));
  EXPECT_EQ(values_of<int64_t>(outs->at(1)), (std::vector<int64_t>{6}));
  EXPECT_EQ(values_of<int64_t>(outs->at(2)), (std::vector<int64_t>{7, 4, 1}));
  EXPECT_EQ(to_floats(outs->at(3)), (std::vector<float>{0, 1, 0, 0, 0, 1}));
}

TEST(OnnxDataOps, ConstantOfShapeWithAZeroDimensionIsAnEmptyTensor) {
  ModelBuilder m(17);
  m.int64s("shape", {2}, {0, 3});
  m.node("ConstantOfShape", {"shape"}, {"y"});
  m.output("y", {0, 3});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const graph::ValueId y = g->outputs().at(0);
  ASSERT_TRUE(g->is_constant(y));
  EXPECT_EQ(g->value(y).shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(g->constant(y).bytes.empty());
}

TEST(OnnxDataOps, ExpandBroadcastsBothWaysAndTileRepeats) {
  ModelBuilder m(17);
  m.input("x", {3, 1});
  m.int64s("shape", {3}, {2, 1, 4});
  m.int64s("repeats", {2}, {2, 3});
  m.node("Expand", {"x", "shape"}, {"e"});
  m.node("Tile", {"x", "repeats"}, {"t"});
  m.output("e", {2, 3, 4});
  m.output("t", {6, 3});
  auto outs = test::run_model_outputs(m, {to_bytes({1, 2, 3})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  std::vector<float> e;
  for (int i = 0; i < 2; ++i)
    for (float v : {1, 2, 3})
      for (int k = 0; k < 4; ++k) e.push_back(v);
  EXPECT_EQ(to_floats(outs->at(0)), e);
  EXPECT_EQ(to_floats(outs->at(1)), (std::vector<float>{1, 1, 1, 2, 2, 2, 3, 3, 3, 1, 1, 1, 2, 2, 2, 3, 3, 3}));
}

TEST(OnnxDataOps, GatherElementsWithNegativeIndices) {
  ModelBuilder m(17);
  m.input("data", {3, 4});
  m.input("idx", {2, 3}, onnx::TensorProto::INT64);
  attr(m.node("GatherElements", {"data", "idx"}, {"y"}), "axis", int64_t{1});
  m.output("y", {2, 3});
  auto y = run_model(m, {to_bytes(iota(12)), bytes_of<int64_t>({0, -1, 2, 3, 1, -4})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(to_floats(*y), (std::vector<float>{0, 3, 2, 7, 5, 4}));
}

TEST(OnnxDataOps, TriluKeepsATriangleOfEachMatrix) {
  ModelBuilder m(17);
  m.input("x", {2, 3, 4});
  m.int64s("k", {}, {-1});
  m.node("Trilu", {"x", "k"}, {"upper"});
  attr(m.node("Trilu", {"x"}, {"lower"}), "upper", int64_t{0});
  m.output("upper", {2, 3, 4});
  m.output("lower", {2, 3, 4});
  const std::vector<float> x = iota(24);
  auto outs = test::run_model_outputs(m, {to_bytes(x)});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  std::vector<float> upper, lower;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        const float v = x[b * 12 + i * 4 + j];
        upper.push_back(j - i >= -1 ? v : 0);
        lower.push_back(j <= i ? v : 0);
      }
  EXPECT_EQ(to_floats(outs->at(0)), upper);
  EXPECT_EQ(to_floats(outs->at(1)), lower);
}

TEST(OnnxDataOps, DepthToSpaceAndBack) {
  for (const char* mode : {"DCR", "CRD"}) {
    ModelBuilder m(17);
    m.input("x", {1, 8, 1, 3});
    auto* d = m.node("DepthToSpace", {"x"}, {"d"});
    attr(d, "blocksize", int64_t{2});
    attr(d, "mode", std::string(mode));
    attr(m.node("SpaceToDepth", {"d"}, {"s"}), "blocksize", int64_t{2});
    m.output("d", {1, 2, 2, 6});
    m.output("s", {1, 8, 1, 3});
    const std::vector<float> x = iota(24);
    auto outs = test::run_model_outputs(m, {to_bytes(x)});
    ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
    // d[0, c, h * 2 + i, w * 2 + j] = x[0, channel, h, w] with channel
    // (i * 2 + j) * 2 + c for DCR and c * 4 + i * 2 + j for CRD.
    std::vector<float> want(24);
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 2; ++i)
        for (int w = 0; w < 3; ++w)
          for (int j = 0; j < 2; ++j) {
            const int channel = std::string(mode) == "DCR" ? (i * 2 + j) * 2 + c : c * 4 + i * 2 + j;
            want[c * 12 + i * 6 + w * 2 + j] = x[channel * 3 + w];
          }
    EXPECT_EQ(to_floats(outs->at(0)), want) << mode;
    if (std::string(mode) == "DCR") EXPECT_EQ(to_floats(outs->at(1)), x);  // SpaceToDepth inverts DCR
  }
}

TEST(OnnxDataOps, OneHotWrapsNegativeIndices) {
  ModelBuilder m(17);
  m.input("idx", {2, 2}, onnx::TensorProto::INT64);
  m.int64s("depth", {}, {3});
  m.input("values", {2});
  attr(m.node("OneHot", {"idx", "depth", "values"}, {"y"}), "axis", int64_t{1});
  m.output("y", {2, 3, 2});
  auto y = run_model(m, {bytes_of<int64_t>({0, -1, 2, 5}), to_bytes({-1, 7})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // y[i, k, j] = k == idx[i, j] (wrapped) ? 7 : -1; index 5 is out of range: all off.
  EXPECT_EQ(to_floats(*y), (std::vector<float>{7, -1, -1, -1, -1, 7, -1, -1, -1, -1, 7, -1}));
}

TEST(OnnxDataOps, CastLikeTakesTheSecondInputsType) {
  ModelBuilder m(17);
  m.input("x", {3});
  m.input("like", {1}, onnx::TensorProto::INT32);
  m.node("CastLike", {"x", "like"}, {"y"});
  m.output("y", {3}, onnx::TensorProto::INT32);
  auto y = run_model(m, {to_bytes({1.9f, -2.5f, 3}), bytes_of<int32_t>({0})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*y), (std::vector<int32_t>{1, -2, 3}));
}

TEST(OnnxDataOps, GatherNDWithABatchDimension) {
  ModelBuilder m(13);
  m.input("data", {2, 3, 2});
  m.input("idx", {2, 1, 1}, onnx::TensorProto::INT64);
  attr(m.node("GatherND", {"data", "idx"}, {"y"}), "batch_dims", int64_t{1});
  m.output("y", {2, 1, 2});
  auto y = run_model(m, {to_bytes(iota(12)), bytes_of<int64_t>({2, -3})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // Batch 0 row 2: {4, 5}; batch 1 row -3 = 0: {6, 7}.
  EXPECT_EQ(to_floats(*y), (std::vector<float>{4, 5, 6, 7}));
}

TEST(OnnxDataOps, ScatterElementsLastWriteWinsAndAddAccumulates) {
  ModelBuilder m(16);
  m.input("data", {2, 3});
  m.input("idx", {2, 2}, onnx::TensorProto::INT64);
  m.input("upd", {2, 2});
  attr(m.node("ScatterElements", {"data", "idx", "upd"}, {"none"}), "axis", int64_t{1});
  auto* add = m.node("ScatterElements", {"data", "idx", "upd"}, {"add"});
  attr(add, "axis", int64_t{1});
  attr(add, "reduction", std::string("add"));
  m.output("none", {2, 3});
  m.output("add", {2, 3});
  auto outs = test::run_model_outputs(
      m, {to_bytes({0, 0, 0, 1, 1, 1}), bytes_of<int64_t>({2, -1, 0, 1}), to_bytes({5, 6, 7, 8})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  // Row 0: both updates land on column 2, the later (6) wins; row 1: 7 at 0, 8 at 1.
  EXPECT_EQ(to_floats(outs->at(0)), (std::vector<float>{0, 0, 6, 7, 8, 1}));
  EXPECT_EQ(to_floats(outs->at(1)), (std::vector<float>{0, 0, 11, 8, 9, 1}));
}

TEST(OnnxDataOps, ScatterNDReplacesRowsAndMultiplies) {
  ModelBuilder m(16);
  m.input("data", {3, 2});
  m.input("idx", {2, 1}, onnx::TensorProto::INT64);
  m.input("upd", {2, 2});
  m.node("ScatterND", {"data", "idx", "upd"}, {"none"});
  attr(m.node("ScatterND", {"data", "idx", "upd"}, {"mul"}), "reduction", std::string("mul"));
  m.output("none", {3, 2});
  m.output("mul", {3, 2});
  auto outs =
      test::run_model_outputs(m, {to_bytes({1, 2, 3, 4, 5, 6}), bytes_of<int64_t>({2, 0}), to_bytes({10, 20, 30, 40})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(to_floats(outs->at(0)), (std::vector<float>{30, 40, 3, 4, 10, 20}));
  EXPECT_EQ(to_floats(outs->at(1)), (std::vector<float>{30, 80, 3, 4, 50, 120}));
}

TEST(OnnxDataOps, EinsumContractionsDiagonalsAndImplicitOutputs) {
  ModelBuilder m(13);
  m.input("a", {2, 3, 5});
  m.input("b", {2, 5, 3});
  m.input("c", {2, 3, 3});
  attr(m.node("Einsum", {"a", "b"}, {"bmm"}), "equation", std::string("bij, bjk -> bik"));
  attr(m.node("Einsum", {"c"}, {"diag"}), "equation", std::string("...ii->...i"));
  attr(m.node("Einsum", {"a"}, {"t"}), "equation", std::string("bij"));  // implicit: bij (sorted, seen once)
  m.output("bmm", {2, 3, 3});
  m.output("diag", {2, 3});
  m.output("t", {2, 3, 5});
  const auto a = graph::test::random_floats(30, 1), b = graph::test::random_floats(30, 2), c = iota(18);
  auto outs = test::run_model_outputs(m, {to_bytes(a), to_bytes(b), to_bytes(c)});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  std::vector<float> bmm;
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) {
        float acc = 0;
        for (int j = 0; j < 5; ++j) acc += a[n * 15 + i * 5 + j] * b[n * 15 + j * 3 + k];
        bmm.push_back(acc);
      }
  EXPECT_TRUE(graph::test::close(to_floats(outs->at(0)), bmm));
  EXPECT_EQ(to_floats(outs->at(1)), (std::vector<float>{0, 4, 8, 9, 13, 17}));
  EXPECT_EQ(to_floats(outs->at(2)), a);
}

TEST(OnnxDataOps, TopKSortsTiesByIndexAlongAnyAxis) {
  ModelBuilder m(13);
  m.input("x", {4, 3});
  m.int64s("k", {1}, {2});
  attr(m.node("TopK", {"x", "k"}, {"v", "i"}), "axis", int64_t{0});
  auto* small = m.node("TopK", {"x", "k"}, {"sv", "si"});
  attr(small, "largest", int64_t{0});
  m.output("v", {2, 3});
  m.output("i", {2, 3}, onnx::TensorProto::INT64);
  m.output("sv", {4, 2});
  m.output("si", {4, 2}, onnx::TensorProto::INT64);
  // Columns: {5, 1, 5, 0}, {2, 2, 9, 2}, {-1, 7, 3, 7}.
  auto outs = test::run_model_outputs(m, {to_bytes({5, 2, -1, 1, 2, 7, 5, 9, 3, 0, 2, 7})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(to_floats(outs->at(0)), (std::vector<float>{5, 9, 7, 5, 2, 7}));
  EXPECT_EQ(values_of<int64_t>(outs->at(1)), (std::vector<int64_t>{0, 2, 1, 2, 0, 3}));
  EXPECT_EQ(to_floats(outs->at(2)), (std::vector<float>{-1, 2, 1, 2, 3, 5, 0, 2}));
  EXPECT_EQ(values_of<int64_t>(outs->at(3)), (std::vector<int64_t>{2, 1, 0, 1, 2, 0, 0, 1}));
}

TEST(OnnxDataOps, ReverseSequenceReversesEachPrefix) {
  ModelBuilder m(13);
  m.input("x", {2, 4});
  m.input("lens", {2}, onnx::TensorProto::INT64);
  auto* n = m.node("ReverseSequence", {"x", "lens"}, {"y"});
  attr(n, "batch_axis", int64_t{0});
  attr(n, "time_axis", int64_t{1});
  m.output("y", {2, 4});
  auto y = run_model(m, {to_bytes(iota(8)), bytes_of<int64_t>({3, 1})});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(to_floats(*y), (std::vector<float>{2, 1, 0, 3, 4, 5, 6, 7}));
}

TEST(OnnxDataOps, CompressAndNonZeroOfConstants) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  auto* cond = m.model.mutable_graph()->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_dims(3);
  for (int v : {1, 0, 1}) cond->add_int32_data(v);
  attr(m.node("Compress", {"x", "cond"}, {"cols"}), "axis", int64_t{1});
  m.node("Compress", {"x", "cond"}, {"flat"});
  m.floats("c", {2, 2}, {0, 3, 4, 0});
  m.node("NonZero", {"c"}, {"nz"});
  m.output("cols", {2, 2});
  m.output("flat", {2});
  m.output("nz", {2, 2}, onnx::TensorProto::INT64);
  auto outs = test::run_model_outputs(m, {to_bytes(iota(6))});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ(to_floats(outs->at(0)), (std::vector<float>{0, 2, 3, 5}));
  EXPECT_EQ(to_floats(outs->at(1)), (std::vector<float>{0, 2}));
  EXPECT_EQ(values_of<int64_t>(outs->at(2)), (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(OnnxDataOps, GridSampleBilinearWithZerosAndBorderPadding) {
  ModelBuilder m(16);
  m.input("x", {1, 1, 2, 2});
  m.input("grid", {1, 1, 2, 2});
  m.node("GridSample", {"x", "grid"}, {"zeros"});
  attr(m.node("GridSample", {"x", "grid"}, {"border"}), "padding_mode", std::string("border"));
  m.output("zeros", {1, 1, 1, 2});
  m.output("border", {1, 1, 1, 2});
  auto outs = test::run_model_outputs(m, {to_bytes({1, 2, 3, 4}), to_bytes({0, 0, -1, -1})});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  // (0, 0) is the centre: the mean 2.5. (-1, -1) is the outer corner, pixel
  // (-0.5, -0.5): a quarter of pixel (0, 0) with zeros outside; pixel (0, 0)
  // itself when clamped to the border.
  EXPECT_TRUE(graph::test::close(to_floats(outs->at(0)), {2.5f, 0.25f}));
  EXPECT_TRUE(graph::test::close(to_floats(outs->at(1)), {2.5f, 1.0f}));
}

TEST(OnnxDataOps, ShapeInputsFedAtRunTimeAreClearErrors) {
  ModelBuilder m(17);
  m.input("x", {3, 1});
  m.input("shape", {2}, onnx::TensorProto::INT64);
  m.node("Expand", {"x", "shape"}, {"y"});
  m.output("y", {3, 4});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("shape (input 1) is not a constant"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace tessera::frontend
