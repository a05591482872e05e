// Empty tensors (a dimension of 0, legal in ONNX): models that make or read
// them import, compile to native code and run through the GraphExecutor;
// empty values are never computed, empty Concat inputs are dropped, and empty
// outputs come back with their shapes and 0 bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/llvm_target.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/model/compile_model.h"
#include "runtime/graph_executor.h"
#include "tests/compiler/frontend/onnx_test_util.h"

namespace tessera::frontend {
namespace {

using test::attr;
using test::ModelBuilder;

// An output as it came back: shape and float values.
struct Out {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Imports `m`, compiles it for the host, feeds float inputs by name, and runs it.
Result<std::vector<Out>> compile_and_run(const ModelBuilder& m, const std::map<std::string, std::vector<float>>& in) {
  TESSERA_ASSIGN_OR_RETURN(graph::Graph g, import_onnx_bytes(m.bytes()));
  TESSERA_ASSIGN_OR_RETURN(model::ModelPlan plan, model::plan_model(g));
  model::CompileOptions co;
  co.jobs = 1;
  TESSERA_ASSIGN_OR_RETURN(model::CompiledModel compiled, model::compile_model(plan, host_target(), co));
  TESSERA_ASSIGN_OR_RETURN(auto exec, runtime::GraphExecutor::load(compiled.package, runtime::ExecutorOptions{}));
  for (const runtime::TensorInfo& info : exec->input_info()) {
    TESSERA_ASSIGN_OR_RETURN(runtime::NDArray a, runtime::NDArray::create(info.shape, info.dtype));
    const std::vector<float>& v = in.at(info.name);
    if (static_cast<int64_t>(v.size() * sizeof(float)) != a.nbytes())
      return Status(ErrorCode::kInvalidArgument, "input " + info.name + " has the wrong size");
    if (!v.empty()) std::memcpy(a.raw_data(), v.data(), v.size() * sizeof(float));
    TESSERA_RETURN_IF_ERROR(exec->set_input(info.name, a));
  }
  TESSERA_RETURN_IF_ERROR(exec->run());
  std::vector<Out> outs;
  for (const std::string& name : exec->output_names()) {
    TESSERA_ASSIGN_OR_RETURN(runtime::NDArray y, exec->get_output(name));
    Out o{y.shape(), std::vector<float>(static_cast<size_t>(y.nbytes()) / sizeof(float))};
    if (!o.values.empty()) std::memcpy(o.values.data(), y.raw_data(), static_cast<size_t>(y.nbytes()));
    outs.push_back(std::move(o));
  }
  return outs;
}

TEST(OnnxEmpty, SliceThatComesOutEmptyIsReturnedWithItsShape) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.int64s("starts", {1}, {5});
  m.int64s("ends", {1}, {9});
  m.int64s("axes", {1}, {1});
  m.node("Slice", {"x", "starts", "ends", "axes"}, {"empty"});
  m.node("Relu", {"x"}, {"y"});
  m.output("empty", {2, 0});
  m.output("y", {2, 3});
  auto outs = compile_and_run(m, {{"x", {-1, 2, -3, 4, -5, 6}}});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  ASSERT_EQ(outs->size(), 2u);
  EXPECT_EQ((*outs)[0].shape, (std::vector<int64_t>{2, 0}));
  EXPECT_TRUE((*outs)[0].values.empty());
  EXPECT_EQ((*outs)[1].values, (std::vector<float>{0, 2, 0, 4, 0, 6}));
}

TEST(OnnxEmpty, ConcatDropsAnEmptyInputFedAtRunTime) {
  // e is an empty graph input (3 x 0): the Concat reads only x and z.
  ModelBuilder m(13);
  m.input("x", {3, 2});
  m.input("e", {3, 0});
  m.input("z", {3, 1});
  auto* c = m.node("Concat", {"x", "e", "z"}, {"y"});
  attr(c, "axis", int64_t{1});
  m.output("y", {3, 3});
  auto outs = compile_and_run(m, {{"x", {1, 2, 3, 4, 5, 6}}, {"e", {}}, {"z", {7, 8, 9}}});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ((*outs)[0].shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ((*outs)[0].values, (std::vector<float>{1, 2, 7, 3, 4, 8, 5, 6, 9}));
}

TEST(OnnxEmpty, SplitWithAZeroSizePartAndAReshapeToZeroElements) {
  ModelBuilder m(13);
  m.input("x", {5, 2});
  m.int64s("split", {3}, {2, 0, 3});
  m.node("Split", {"x", "split"}, {"a", "b", "c"});
  m.int64s("shape", {3}, {0, 4, 2});
  auto* r = m.node("Reshape", {"b", "shape"}, {"r"});
  attr(r, "allowzero", int64_t{1});
  m.node("Neg", {"c"}, {"n"});
  m.output("a", {2, 2});
  m.output("r", {0, 4, 2});
  m.output("n", {3, 2});
  auto outs = compile_and_run(m, {{"x", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  ASSERT_EQ(outs->size(), 3u);
  EXPECT_EQ((*outs)[0].values, (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ((*outs)[1].shape, (std::vector<int64_t>{0, 4, 2}));
  EXPECT_TRUE((*outs)[1].values.empty());
  EXPECT_EQ((*outs)[2].values, (std::vector<float>{-4, -5, -6, -7, -8, -9}));
}

TEST(OnnxEmpty, ElementwiseOfAnEmptyInputIsEmpty) {
  ModelBuilder m(13);
  m.input("x", {0, 3});
  m.input("b", {1, 3});
  m.node("Add", {"x", "b"}, {"s"});
  m.node("Sigmoid", {"s"}, {"y"});
  m.output("y", {0, 3});
  auto outs = compile_and_run(m, {{"x", {}}, {"b", {1, 2, 3}}});
  ASSERT_TRUE(outs.is_ok()) << outs.status().to_string();
  EXPECT_EQ((*outs)[0].shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE((*outs)[0].values.empty());
}

TEST(OnnxEmpty, MatMulOverAnEmptyInnerDimensionIsRefused) {
  // 2x0 . 0x3 is a 2x3 of zeros: an empty input making a non-empty output.
  ModelBuilder m(13);
  m.input("a", {2, 0});
  m.input("b", {0, 3});
  m.node("MatMul", {"a", "b"}, {"y"});
  m.output("y", {2, 3});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("input [2, 0] is empty but the output [2, 3] is not"), std::string::npos)
      << g.status().to_string();
}

}  // namespace
}  // namespace tessera::frontend
