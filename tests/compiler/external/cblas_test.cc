// The cblas backend: its C source compiles, and a model compiled with
// --byoc cblas matches the all-Tessera compile and the reference, through a
// package file; what it cannot generate falls back with a warning.
#include "compiler/external/cblas.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/c_compiler.h"
#include "compiler/external/offload.h"
#include "compiler/model/compile_model.h"
#include "runtime/graph_executor.h"
#include "tests/compiler/external/external_test_util.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::external {
namespace {

using graph::Graph;
using graph::OpKind;
using graph::ValueId;
namespace gt = graph::test;

using gt::weight;

// Dense + bias + relu, a softmax (Tessera's), a Gemm with transposed weight,
// bias and sigmoid; a batched matmul folding its batch into rows, and one
// with both operands batched.
Graph mixed_model() {
  Graph g;
  ValueId x = g.add_input("x", {4, 16}, DType::f32());
  ValueId h =
      g.add_op("fc0", OpKind::kMatMul, graph::NoAttrs{}, {x, weight(g, "w0", {16, 32}, 1)}, {4, 32}, DType::f32());
  h = g.add_op("bias0", OpKind::kAdd, graph::NoAttrs{}, {h, weight(g, "b0", {32}, 2)}, {4, 32}, DType::f32());
  h = g.add_op("relu0", OpKind::kRelu, graph::NoAttrs{}, {h}, {4, 32}, DType::f32());
  h = g.add_op("softmax", OpKind::kSoftmax, graph::AxisAttrs{1}, {h}, {4, 32}, DType::f32());
  graph::GemmAttrs ga;
  ga.trans_b = true;
  ga.alpha = 0.5;
  ValueId y = g.add_op("fc1", OpKind::kGemm, ga, {h, weight(g, "w1", {8, 32}, 3), weight(g, "b1", {8}, 4)}, {4, 8},
                       DType::f32());
  y = g.add_op("sigmoid", OpKind::kSigmoid, graph::NoAttrs{}, {y}, {4, 8}, DType::f32());
  ValueId a = g.add_input("a", {2, 3, 8}, DType::f32());
  ValueId p =
      g.add_op("proj", OpKind::kMatMul, graph::NoAttrs{}, {a, weight(g, "wp", {8, 5}, 5)}, {2, 3, 5}, DType::f32());
  ValueId q = g.add_op("scores", OpKind::kMatMul, graph::NoAttrs{}, {p, weight(g, "wq", {2, 5, 4}, 6)}, {2, 3, 4},
                       DType::f32());
  q = g.add_op("clip", OpKind::kClip, graph::AffineAttrs{-0.5, 0.5}, {q}, {2, 3, 4}, DType::f32());
  g.set_outputs({y, q}, {"probs", "scores"});
  return g;
}

using gt::array_of;
using gt::Outputs;

// Compiles `g` (with `backend`, or none), writes the package to a file,
// loads it back into the graph executor and runs it.
Result<Outputs> compile_and_run(const Graph& g, const std::map<std::string, std::vector<float>>& inputs,
                                const Backend* backend, model::ModelPlan* plan_out = nullptr,
                                model::CompiledModel* compiled_out = nullptr) {
  model::PlanOptions po;
  po.byoc = backend;
  TESSERA_ASSIGN_OR_RETURN(model::ModelPlan plan, model::plan_model(g, po));
  TESSERA_ASSIGN_OR_RETURN(model::CompiledModel compiled, model::compile_model(plan, host_target(), {nullptr, 2}));
  const std::string path = ::testing::TempDir() + "/byoc_" + std::to_string(::getpid()) + ".tsr";
  TESSERA_RETURN_IF_ERROR(runtime::write_package(compiled.package, path));
  auto exec = runtime::GraphExecutor::load_file(path, {});
  std::remove(path.c_str());
  if (!exec.is_ok()) return exec.status();
  for (const runtime::TensorInfo& in : (*exec)->input_info())
    TESSERA_RETURN_IF_ERROR((*exec)->set_input(in.name, array_of(in.shape, inputs.at(in.name))));
  TESSERA_RETURN_IF_ERROR((*exec)->run());
  Outputs out;
  for (const std::string& name : (*exec)->output_names()) {
    TESSERA_ASSIGN_OR_RETURN(runtime::NDArray y, (*exec)->get_output(name));
    out[name].resize(static_cast<size_t>(y.numel()));
    std::memcpy(out[name].data(), y.raw_data(), out[name].size() * sizeof(float));
  }
  if (plan_out) *plan_out = std::move(plan);
  if (compiled_out) *compiled_out = std::move(compiled);
  return out;
}

TEST(CblasBackend, MixedModelMatchesTesseraAndTheReference) {
  const Graph g = mixed_model();
  const auto x = gt::random_floats(64, 11), a = gt::random_floats(48, 12);
  const std::unique_ptr<Backend> cblas = make_cblas_backend();
  model::ModelPlan plan;
  model::CompiledModel compiled;
  auto got = compile_and_run(g, {{"x", x}, {"a", a}}, cblas.get(), &plan, &compiled);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto tessera = compile_and_run(g, {{"x", x}, {"a", a}}, nullptr);
  ASSERT_TRUE(tessera.is_ok()) << tessera.status().to_string();
  auto want = gt::run_graph(g, {{0, gt::to_bytes(x)}, {g.inputs()[1], gt::to_bytes(a)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(gt::close(got->at("probs"), gt::to_floats((*want)[0])));
  EXPECT_TRUE(gt::close(got->at("scores"), gt::to_floats((*want)[1])));
  EXPECT_TRUE(gt::close(got->at("probs"), tessera->at("probs")));
  EXPECT_TRUE(gt::close(got->at("scores"), tessera->at("scores")));

  // Three regions (fc0 + bias + relu; fc1 + sigmoid; proj + scores + clip),
  // the softmax Tessera's; the package says what the device needs.
  EXPECT_TRUE(plan.warnings.empty());
  ASSERT_EQ(plan.externals.size(), 3u);
  EXPECT_EQ(plan.externals[0].num_nodes, 3);
  EXPECT_EQ(plan.externals[1].num_nodes, 2);
  EXPECT_EQ(plan.externals[2].num_nodes, 3);
  EXPECT_EQ(plan.tasks.size(), 1u);
  ASSERT_EQ(compiled.package.externals.size(), 1u);
  EXPECT_EQ(compiled.package.externals[0], (runtime::ExternalModule{"cblas", "c-source", "libopenblas.so.0"}));
  EXPECT_EQ(compiled.package.calls.size(), 4u);
  EXPECT_EQ(compiled.package.calls[0].symbol, "tsr_x0_cblas_region0");
  EXPECT_NE(model::format_compile_summary(compiled).find("external: cblas (3 operators)"), std::string::npos);
}

// Batch dimensions broadcast on both sides ([2, 1] against [1, 3]): the
// predicate takes the matmul, the code generator cannot; Tessera runs it.
TEST(CblasBackend, RegionItCannotGenerateFallsBackWithAWarning) {
  Graph g;
  ValueId a = g.add_input("a", {2, 1, 4, 8}, DType::f32());
  ValueId b = weight(g, "b", {1, 3, 8, 5}, 1);
  ValueId y = g.add_op("bmm", OpKind::kMatMul, graph::NoAttrs{}, {a, b}, {2, 3, 4, 5}, DType::f32());
  y = g.add_op("relu", OpKind::kRelu, graph::NoAttrs{}, {y}, {2, 3, 4, 5}, DType::f32());
  g.set_outputs({y}, {"y"});
  const auto x = gt::random_floats(64, 3);
  const std::unique_ptr<Backend> cblas = make_cblas_backend();
  model::ModelPlan plan;
  model::CompiledModel compiled;
  auto got = compile_and_run(g, {{"a", x}}, cblas.get(), &plan, &compiled);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("cblas_region0"), std::string::npos) << plan.warnings[0];
  EXPECT_NE(plan.warnings[0].find("batch dimensions"), std::string::npos) << plan.warnings[0];
  EXPECT_TRUE(plan.externals.empty());
  EXPECT_TRUE(compiled.package.externals.empty());
  auto want = gt::run_graph(g, {{a, gt::to_bytes(x)}});
  ASSERT_TRUE(want.is_ok());
  EXPECT_TRUE(gt::close(got->at("y"), gt::to_floats((*want)[0])));
}

// One region with two outputs: the first matmul's value is read outside
// (by the softmax) and by the second matmul inside; the call writes both.
TEST(CblasBackend, RegionWithTwoOutputsWritesBoth) {
  Graph g;
  ValueId x = g.add_input("x", {4, 6}, DType::f32());
  ValueId a =
      g.add_op("mm_a", OpKind::kMatMul, graph::NoAttrs{}, {x, weight(g, "wa", {6, 6}, 1)}, {4, 6}, DType::f32());
  ValueId b =
      g.add_op("mm_b", OpKind::kMatMul, graph::NoAttrs{}, {a, weight(g, "wb", {6, 3}, 2)}, {4, 3}, DType::f32());
  ValueId s = g.add_op("softmax", OpKind::kSoftmax, graph::AxisAttrs{1}, {a}, {4, 6}, DType::f32());
  g.set_outputs({b, s}, {"b", "s"});
  const auto data = gt::random_floats(24, 8);
  const std::unique_ptr<Backend> cblas = make_cblas_backend();
  model::ModelPlan plan;
  model::CompiledModel compiled;
  auto got = compile_and_run(g, {{"x", data}}, cblas.get(), &plan, &compiled);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(plan.externals.size(), 1u);
  EXPECT_EQ(plan.externals[0].num_nodes, 2);
  ASSERT_EQ(compiled.package.calls.size(), 2u);
  EXPECT_EQ(compiled.package.calls[0].args.size(), 5u);  // x, wa, wb, then a and b
  auto want = gt::run_graph(g, {{x, gt::to_bytes(data)}});
  ASSERT_TRUE(want.is_ok());
  EXPECT_TRUE(gt::close(got->at("b"), gt::to_floats((*want)[0])));
  EXPECT_TRUE(gt::close(got->at("s"), gt::to_floats((*want)[1])));
}

// A classifier's head: fold_matmul_views reads the flatten in place; the
// view moves no data, so cblas takes the matmul. A transposing view it does not.
TEST(CblasBackend, FlattenViewIsTakenATransposingOneIsNot) {
  Graph g;
  ValueId x = g.add_input("x", {2, 3, 1}, DType::f32());
  graph::MatMulAttrs flat;
  flat.a = {{2, 3}, {{1, 0}, {0, 1}, {0, 0}}};
  ValueId y = g.add_op("head", OpKind::kMatMul, flat, {x, weight(g, "w", {3, 4}, 1)}, {2, 4}, DType::f32());
  y = g.add_op("bias", OpKind::kAdd, graph::NoAttrs{}, {y, weight(g, "b", {4}, 2)}, {2, 4}, DType::f32());
  g.set_outputs({y}, {"y"});
  const auto data = gt::random_floats(6, 5);
  const std::unique_ptr<Backend> cblas = make_cblas_backend();
  model::ModelPlan plan;
  auto got = compile_and_run(g, {{"x", data}}, cblas.get(), &plan);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(plan.externals.size(), 1u);
  auto want = gt::run_graph(g, {{x, gt::to_bytes(data)}});
  ASSERT_TRUE(want.is_ok());
  EXPECT_TRUE(gt::close(got->at("y"), gt::to_floats((*want)[0])));

  Graph t;
  ValueId z = t.add_input("z", {3, 2}, DType::f32());
  graph::MatMulAttrs transposed;
  transposed.a = {{2, 3}, {{0, 1}, {1, 0}}};
  ValueId o = t.add_op("mm", OpKind::kMatMul, transposed, {z, weight(t, "w", {3, 4}, 1)}, {2, 4}, DType::f32());
  t.set_outputs({o});
  EXPECT_TRUE(graph::find_regions(t, cblas->partition_rules()).empty());
}

TEST(CblasBackend, GeneratedSourceCompilesToAnObject) {
  Graph g;
  ValueId x = g.add_input("x", {3, 4}, DType::f32());
  ValueId y = g.add_op("mm", OpKind::kMatMul, graph::NoAttrs{}, {x, weight(g, "w", {4, 2}, 1)}, {3, 2}, DType::f32());
  g.set_outputs({y});
  auto offloaded = offload_regions(g, *make_cblas_backend());
  ASSERT_TRUE(offloaded.is_ok()) << offloaded.status().to_string();
  ASSERT_EQ(offloaded->regions.size(), 1u);
  const ExternalCode& code = offloaded->regions[0].code;
  EXPECT_NE(code.source.find("int32_t tsr_x0_cblas_region0(void** args)"), std::string::npos) << code.source;
  EXPECT_NE(code.source.find("cblas_sgemm(101, 111, 111, 3, 2, 4"), std::string::npos) << code.source;
  auto object = compile_c_object(code.source, host_target());
  ASSERT_TRUE(object.is_ok()) << object.status().to_string();
  EXPECT_EQ(object->substr(0, 4),
            "\x7f"
            "ELF");
}

TEST(CCompiler, MissingCompilerIsNotFoundNamingIt) {
  auto object = compile_c_object("int f(void) { return 0; }\n", host_target(), "tessera-no-such-cc");
  EXPECT_EQ(object.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(object.status().message().find("tessera-no-such-cc"), std::string::npos) << object.status().message();
}

TEST(CCompiler, RejectedSourceIsACodegenErrorWithTheCompilersMessage) {
  auto object = compile_c_object("int f(void) { return undeclared_name; }\n", host_target());
  EXPECT_EQ(object.status().code(), ErrorCode::kCodegenError);
  EXPECT_NE(object.status().message().find("undeclared_name"), std::string::npos) << object.status().message();
}

TEST(Backends, UnknownNameListsTheKnownOnes) {
  auto b = make_backend("dnnl-someday");
  EXPECT_EQ(b.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("cblas"), std::string::npos);
  auto none = make_backend("none");
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none->get(), nullptr);
  auto cblas = make_backend("cblas");
  ASSERT_TRUE(cblas.is_ok());
  EXPECT_EQ((*cblas)->kind(), BackendKind::kCSource);
}

}  // namespace
}  // namespace tessera::external
