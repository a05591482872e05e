// compile_model end to end: a graph becomes a package, the graph executor runs
// it natively, and the outputs match the reference interpreter's run of the
// same fused groups.
#include "compiler/model/compile_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "compiler/codegen/llvm_target.h"
#include "compiler/model/choose_winograd.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/step.h"
#include "compiler/space/knob/templates.h"
#include "runtime/graph_executor.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::model {
namespace {

using graph::ConvAttrs;
using graph::Graph;
using graph::OpKind;
using graph::ValueId;
namespace gt = graph::test;

// conv + bias + relu twice (one task, two calls), then pool, flatten, dense.
Graph small_cnn() {
  Graph g;
  ValueId v = g.add_input("image", {1, 8, 10, 10}, DType::f32());
  ConvAttrs a;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    ValueId w = g.add_constant("w" + s, graph::Constant::from_floats({8, 8, 3, 3}, gt::random_floats(576, i)));
    ValueId b = g.add_constant("b" + s, graph::Constant::from_floats({8}, gt::random_floats(8, 10 + i)));
    ValueId y = g.add_op("conv" + s, OpKind::kConv, a, {v, w, b}, {1, 8, 10, 10}, DType::f32());
    v = g.add_op("relu" + s, OpKind::kRelu, graph::NoAttrs{}, {y}, {1, 8, 10, 10}, DType::f32());
  }
  ValueId p = g.add_op("gap", OpKind::kGlobalAvgPool, graph::NoAttrs{}, {v}, {1, 8, 1, 1}, DType::f32());
  ValueId f = g.add_op("flatten", OpKind::kReshape, graph::NoAttrs{}, {p}, {1, 8}, DType::f32());
  ValueId fw = g.add_constant("fc.w", graph::Constant::from_floats({5, 8}, gt::random_floats(40, 20)));
  ValueId fb = g.add_constant("fc.b", graph::Constant::from_floats({5}, gt::random_floats(5, 21)));
  graph::GemmAttrs ga;
  ga.trans_b = true;
  ValueId o = g.add_op("fc", OpKind::kGemm, ga, {f, fw, fb}, {1, 5}, DType::f32());
  g.set_outputs({o}, {"logits"});
  return g;
}

runtime::NDArray array_of(const std::vector<int64_t>& shape, const std::vector<float>& data) {
  runtime::NDArray a = runtime::NDArray::create(shape, DType::f32()).value();
  std::memcpy(a.raw_data(), data.data(), data.size() * sizeof(float));
  return a;
}

std::vector<float> floats_of(const runtime::NDArray& a) {
  std::vector<float> v(static_cast<size_t>(a.numel()));
  std::memcpy(v.data(), a.raw_data(), v.size() * sizeof(float));
  return v;
}

// Compiles `g`, runs it with `inputs` (by name) and returns every output by name.
Result<std::map<std::string, std::vector<float>>> compile_and_run(
    const Graph& g, const std::map<std::string, std::vector<float>>& inputs, ScheduleSource* source = nullptr,
    CompiledModel* compiled_out = nullptr, PlanOptions plan_options = {}) {
  TESSERA_ASSIGN_OR_RETURN(ModelPlan plan, plan_model(g, plan_options));
  TESSERA_ASSIGN_OR_RETURN(CompiledModel compiled, compile_model(plan, host_target(), {source, 0}));
  // Through the file format, as a device gets it.
  TESSERA_ASSIGN_OR_RETURN(std::string bytes, runtime::write_package_bytes(compiled.package));
  TESSERA_ASSIGN_OR_RETURN(runtime::PackageContents read, runtime::read_package_bytes(bytes));
  runtime::ExecutorOptions eo;
  eo.num_threads = 2;
  TESSERA_ASSIGN_OR_RETURN(auto exec, runtime::GraphExecutor::load(read, eo));
  for (const runtime::TensorInfo& in : exec->input_info())
    TESSERA_RETURN_IF_ERROR(exec->set_input(in.name, array_of(in.shape, inputs.at(in.name))));
  TESSERA_RETURN_IF_ERROR(exec->run());
  std::map<std::string, std::vector<float>> out;
  for (const std::string& name : exec->output_names()) {
    TESSERA_ASSIGN_OR_RETURN(runtime::NDArray y, exec->get_output(name));
    out[name] = floats_of(y);
  }
  if (compiled_out) *compiled_out = std::move(compiled);
  return out;
}

TEST(CompileModel, SmallCnnMatchesTheInterpreter) {
  const Graph g = small_cnn();
  const auto x = gt::random_floats(800, 7);
  CompiledModel compiled;
  auto got = compile_and_run(g, {{"image", x}}, nullptr, &compiled, PlanOptions{.nhwc_layout = false});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = gt::run_graph(g, {{0, gt::to_bytes(x)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_EQ(got->count("logits"), 1u);
  EXPECT_TRUE(gt::close(got->at("logits"), gt::to_floats((*want)[0])));

  // Two conv groups share one kernel; the conv got its template's fallback.
  ASSERT_EQ(compiled.kernels.size(), 4u) << format_compile_summary(compiled);
  EXPECT_EQ(compiled.kernels[0].weight, 2);
  EXPECT_EQ(compiled.kernels[0].source, ScheduleChoice::Source::kTemplateFallback) << compiled.kernels[0].explanation;
  EXPECT_EQ(compiled.package.calls.size(), 5u);
  EXPECT_EQ(compiled.package.calls[0].symbol, compiled.package.calls[1].symbol);
  EXPECT_EQ(compiled.report.kernels, 4);
  EXPECT_EQ(compiled.report.from_records, 0);
}

TEST(CompileModel, TemplateOpsFollowTheAnchor) {
  const Graph g = small_cnn();
  auto plan = plan_model(g, {.nhwc_layout = false});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->task_ops.size(), 4u);
  EXPECT_EQ(plan->task_ops[0], "conv2d");
  EXPECT_EQ(plan->task_ops[1], "global_avg_pool2d");
  EXPECT_EQ(plan->task_ops[2], "");  // the flatten
  EXPECT_EQ(plan->task_ops[3], "dense");
  EXPECT_EQ(plan->task_labels[0], "fused_conv_relu [1, 8, 10, 10]");
}

// Int8 products in 2 x 2 tiles where the target has the matrix-multiply
// instruction: their tasks take the gemm_pairs template.
TEST(CompileModel, Int8ProductsPairUpForAMatrixMultiplyInstruction) {
  auto target = [](const std::string& text) { return parse_target(text).value(); };
  EXPECT_TRUE(int8_pairs_pay(target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon,+i8mm")));
  EXPECT_FALSE(int8_pairs_pay(target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon,+dotprod")));
  EXPECT_FALSE(int8_pairs_pay(target("llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids")));
  Graph g;
  const ValueId a = g.add_input("a", {8, 32}, DType::u8());
  const ValueId b =
      g.add_constant("b", graph::Constant::from_doubles(DType::i32(), {8, 16}, std::vector<double>(128, 7)));
  g.set_outputs({g.add_op("product", OpKind::kMatMulU8S8, graph::NoAttrs{}, {a, b}, {8, 16}, DType::i32())});
  for (const bool pairs : {false, true}) {
    auto plan = plan_model(g, {.int8_pairs = pairs});
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    ASSERT_EQ(plan->task_ops.size(), 1u);
    EXPECT_EQ(plan->task_ops[0], pairs ? "matmul_u8s8_pairs" : "matmul_u8s8");
  }
}

// A model's long one-channel 1-D conv (an STFT, as torch exports it: NCHW,
// H = 1) runs as the product of its windows, the same task as `tessera tune
// --op conv1d:...` tunes: one workload key.
TEST(CompileModel, ALongOneChannelConvIsTheConv1dOperatorsTask) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 1, 1, 400}, DType::f32());
  const ValueId w = g.add_constant("w", graph::Constant::from_floats({5, 1, 1, 96}, std::vector<float>(480, 0.5f)));
  graph::ConvAttrs attrs;
  attrs.stride_w = 7;
  g.set_outputs({g.add_op("stft", OpKind::kConv, attrs, {x, w}, {1, 5, 1, 44}, DType::f32())});
  auto plan = plan_model(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto op = ops::parse_op_spec("conv1d:W=400,K=5,S=96,stride=7");
  ASSERT_TRUE(op.is_ok()) << op.status().to_string();
  bool found = false;
  std::string tasks;
  for (const graph::GraphTask& task : plan->tasks) {
    found = found || task.dag->workload_key() == op->dag->workload_key();
    tasks += " " + task.name;
  }
  EXPECT_TRUE(found) << tasks;
}

TEST(CompileModel, ConstantArgumentsAreConstantInEveryCall) {
  // small_cnn: both convs read constant weights and biases, as does the dense.
  auto plan = plan_model(small_cnn(), {.nhwc_layout = false});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->task_constant_args.size(), 4u);
  EXPECT_EQ(plan->task_constant_args[0], (std::vector<int>{1, 2}));
  EXPECT_EQ(plan->task_constant_args[1], (std::vector<int>{}));
  EXPECT_EQ(plan->task_constant_args[3], (std::vector<int>{1, 2}));
  EXPECT_EQ(plan->constant_bytes, 4 * (2 * (576 + 8) + 40 + 5));  // every weight and bias once

  // One matmul kernel called twice: with a constant B, then with an input.
  Graph g;
  ValueId x = g.add_input("x", {4, 8}, DType::f32());
  ValueId y = g.add_input("y", {8, 8}, DType::f32());
  ValueId w = g.add_constant("w", graph::Constant::from_floats({8, 8}, gt::random_floats(64, 3)));
  ValueId a = g.add_op("a", OpKind::kMatMul, graph::NoAttrs{}, {x, w}, {4, 8}, DType::f32());
  ValueId b = g.add_op("b", OpKind::kMatMul, graph::NoAttrs{}, {a, y}, {4, 8}, DType::f32());
  g.set_outputs({b}, {"out"});
  auto shared = plan_model(g, {.nhwc_layout = false});
  ASSERT_TRUE(shared.is_ok()) << shared.status().to_string();
  ASSERT_EQ(shared->tasks.size(), 1u);
  EXPECT_EQ(shared->tasks[0].weight, 2);
  EXPECT_EQ(shared->task_constant_args[0], (std::vector<int>{}));
}

TEST(CompileModel, ARecordIsUsedAndABrokenOneIsSkipped) {
  const Graph g = small_cnn();
  auto plan = plan_model(g, {.nhwc_layout = false});
  ASSERT_TRUE(plan.is_ok());
  const auto& conv = plan->tasks[0];
  // A real schedule: the template's fallback, as a record would hold it.
  auto state = apply_fallback(*find_template("conv2d"), conv.dag, host_target());
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  FixedScheduleSource source;
  const std::string target = host_target().to_string();
  source.add(conv.dag->workload_key(), target, ScheduleCandidate{"[{\"kind\": \"nonsense\"}]", 1e-3});
  source.add(conv.dag->workload_key(), target, ScheduleCandidate{steps_to_json(state->steps()), 2e-3});
  const auto x = gt::random_floats(800, 8);
  CompiledModel compiled;
  auto got = compile_and_run(g, {{"image", x}}, &source, &compiled, PlanOptions{.nhwc_layout = false});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(compiled.kernels[0].source, ScheduleChoice::Source::kRecord);
  EXPECT_EQ(compiled.report.from_records, 1);
  EXPECT_FALSE(compiled.report.warnings.empty());
  auto want = gt::run_graph(g, {{0, gt::to_bytes(x)}});
  ASSERT_TRUE(want.is_ok());
  EXPECT_TRUE(gt::close(got->at("logits"), gt::to_floats((*want)[0])));
}

// The transposes plan_model leaves in `g` (NHWC conversion's cost: 2 for
// a net whose NCHW is read only at its input and output).
int planned_transposes(const Graph& g) {
  auto plan = plan_model(g);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan.is_ok()) return -1;
  int transposes = 0;
  for (const graph::Node& n : plan->graph.nodes()) transposes += n.kind == OpKind::kTranspose;
  return transposes;
}

// Compiles and runs `g` (one input, one output) natively on `in` and
// compares with the reference interpreter's run of the graph as imported.
void expect_compiled_matches_reference(const Graph& g, const std::string& input, const std::vector<float>& in) {
  auto got = compile_and_run(g, {{input, in}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = gt::run_graph(g, {{0, gt::to_bytes(in)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(gt::close(got->begin()->second, gt::to_floats((*want)[0])));
}

TEST(CompileModel, ConvNetsRunInNhwcWithTwoTransposes) {
  // The convs and their relus in NHWC; one transpose in, one back before the pool.
  const Graph g = small_cnn();
  auto plan = plan_model(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(planned_transposes(g), 2);
  EXPECT_NE(std::find(plan->task_ops.begin(), plan->task_ops.end(), "conv2d_nhwc"), plan->task_ops.end());
  const auto x = gt::random_floats(800, 9);
  CompiledModel compiled;
  auto got = compile_and_run(g, {{"image", x}}, nullptr, &compiled);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = gt::run_graph(g, {{0, gt::to_bytes(x)}});  // the graph as imported, in NCHW
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(gt::close(got->at("logits"), gt::to_floats((*want)[0])));
  for (const KernelInfo& k : compiled.kernels)
    if (k.label.rfind("fused_conv", 0) == 0) EXPECT_EQ(k.source, ScheduleChoice::Source::kTemplateFallback) << k.label;
}

TEST(CompileModel, MaxPoolBetweenConvsStaysInNhwc) {
  // conv -> relu -> max pool (padded, strided) -> conv: transposes only at the ends.
  Graph g;
  ValueId x = g.add_input("x", {1, 4, 9, 9}, DType::f32());
  ValueId w0 = g.add_constant("w0", graph::Constant::from_floats({8, 4, 3, 3}, gt::random_floats(288, 1)));
  ConvAttrs a;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  ValueId y = g.add_op("conv0", OpKind::kConv, a, {x, w0}, {1, 8, 9, 9}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, graph::NoAttrs{}, {y}, {1, 8, 9, 9}, DType::f32());
  graph::PoolAttrs pa;
  pa.kernel_h = pa.kernel_w = 3;
  pa.stride_h = pa.stride_w = 2;
  pa.pad_top = pa.pad_left = pa.pad_bottom = pa.pad_right = 1;
  ValueId p = g.add_op("pool", OpKind::kMaxPool, pa, {r}, {1, 8, 5, 5}, DType::f32());
  ValueId w1 = g.add_constant("w1", graph::Constant::from_floats({6, 8, 1, 1}, gt::random_floats(48, 2)));
  ValueId o = g.add_op("conv1", OpKind::kConv, ConvAttrs{}, {p, w1}, {1, 6, 5, 5}, DType::f32());
  g.set_outputs({o});
  EXPECT_EQ(planned_transposes(g), 2);
  expect_compiled_matches_reference(g, "x", gt::random_floats(324, 3));
}

// A feature pyramid's neck: a coarse map upsampled (linear, so the scales'
// order matters), added to a fine one, both joined along the channels (the
// fine one's NCHW twin is never needed), then a conv: transposes at the ends only.
TEST(CompileModel, FeaturePyramidResizeAndConcatStayInNhwc) {
  Graph g;
  ValueId x = g.add_input("x", {1, 4, 8, 6}, DType::f32());
  ConvAttrs down;
  down.stride_h = down.stride_w = 2;
  down.pad_top = down.pad_left = down.pad_bottom = down.pad_right = 1;
  ValueId w0 = g.add_constant("w0", graph::Constant::from_floats({6, 4, 3, 3}, gt::random_floats(216, 1)));
  ValueId coarse = g.add_op("conv0", OpKind::kConv, down, {x, w0}, {1, 6, 4, 3}, DType::f32());
  ValueId w1 = g.add_constant("w1", graph::Constant::from_floats({6, 4, 1, 1}, gt::random_floats(24, 2)));
  ValueId fine = g.add_op("conv1", OpKind::kConv, ConvAttrs{}, {x, w1}, {1, 6, 8, 6}, DType::f32());
  graph::ResizeAttrs ra;
  ra.mode = graph::ResizeAttrs::Mode::kLinear;
  ra.scales = {1, 1, 2, 2};
  ValueId up = g.add_op("up", OpKind::kResize, ra, {coarse}, {1, 6, 8, 6}, DType::f32());
  ValueId sum = g.add_op("add", OpKind::kAdd, graph::NoAttrs{}, {up, fine}, {1, 6, 8, 6}, DType::f32());
  ValueId joined = g.add_op("cat", OpKind::kConcat, graph::AxisAttrs{1}, {sum, fine}, {1, 12, 8, 6}, DType::f32());
  ValueId w2 = g.add_constant("w2", graph::Constant::from_floats({5, 12, 1, 1}, gt::random_floats(60, 3)));
  ValueId o = g.add_op("conv2", OpKind::kConv, ConvAttrs{}, {joined, w2}, {1, 5, 8, 6}, DType::f32());
  g.set_outputs({o});
  EXPECT_EQ(planned_transposes(g), 2);
  expect_compiled_matches_reference(g, "x", gt::random_floats(192, 4));
}

// A crop-and-resize between convs keeps NHWC too: its box (starts, then
// ends, per dimension) is permuted with the scales.
TEST(CompileModel, CropAndResizeBetweenConvsStaysInNhwc) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 7, 9}, DType::f32());
  ValueId w0 = g.add_constant("w0", graph::Constant::from_floats({4, 3, 1, 1}, gt::random_floats(12, 5)));
  ValueId y = g.add_op("conv0", OpKind::kConv, ConvAttrs{}, {x, w0}, {1, 4, 7, 9}, DType::f32());
  graph::ResizeAttrs ra;
  ra.mode = graph::ResizeAttrs::Mode::kLinear;
  ra.coord = graph::ResizeAttrs::Coord::kTfCropAndResize;
  ra.scales = {1, 1, 10.0 / 7, 5.0 / 9};
  ra.roi = {0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7};
  ra.extrapolation_value = 0.5;
  ValueId r = g.add_op("crop", OpKind::kResize, ra, {y}, {1, 4, 10, 5}, DType::f32());
  ValueId w1 = g.add_constant("w1", graph::Constant::from_floats({2, 4, 1, 1}, gt::random_floats(8, 6)));
  ValueId o = g.add_op("conv1", OpKind::kConv, ConvAttrs{}, {r, w1}, {1, 2, 10, 5}, DType::f32());
  g.set_outputs({o});
  EXPECT_EQ(planned_transposes(g), 2);
  expect_compiled_matches_reference(g, "x", gt::random_floats(189, 7));
}

TEST(CompileModel, EveryOutputGetsItsOwnBufferAndName) {
  // Outputs: the input itself, a constant, the relu twice under two names.
  Graph g;
  ValueId x = g.add_input("x", {2, 3}, DType::f32());
  ValueId c = g.add_constant("c", graph::Constant::from_floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  ValueId y = g.add_op("add", OpKind::kAdd, graph::NoAttrs{}, {x, c}, {2, 3}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, graph::NoAttrs{}, {y}, {2, 3}, DType::f32());
  g.set_outputs({x, c, r, r}, {"same_x", "the_c", "r1", "r2"});
  const std::vector<float> in = {-9, 1, -1, 2, -8, 0};
  auto got = compile_and_run(g, {{"x", in}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), 4u);
  EXPECT_EQ(got->at("same_x"), in);
  EXPECT_EQ(got->at("the_c"), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const std::vector<float> relu = {0, 3, 2, 6, 0, 6};
  EXPECT_EQ(got->at("r1"), relu);
  EXPECT_EQ(got->at("r2"), relu);
}

// small_cnn's two 3x3 convs (10x10 outputs) can run by Winograd; run that
// way, with their weights transformed at compile time, the model computes
// what the imported graph computes.
TEST(CompileModel, ConvsByWinogradMatchTheReference) {
  const Graph g = small_cnn();
  PlanOptions all;
  all.winograd = PlanOptions::Winograd::kAll;
  auto plan = plan_model(g, all);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_NE(std::find(plan->task_ops.begin(), plan->task_ops.end(), "conv2d_winograd_nhwc"), plan->task_ops.end());
  EXPECT_EQ(plan->task_labels[1], "fused_conv_relu [1, 10, 10, 8] winograd");
  const auto x = gt::random_floats(800, 11);
  auto got = compile_and_run(g, {{"image", x}}, nullptr, nullptr, all);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = gt::run_graph(g, {{0, gt::to_bytes(x)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(gt::close(got->at("logits"), gt::to_floats((*want)[0])));
}

// Tuning covers both kernels of each such conv; compile time runs the one
// whose best record is faster; without records, a rule on the channels.
TEST(ChooseWinograd, FollowsTheFasterRecord) {
  const PreparedModel g = prepare_model(small_cnn()).value();
  auto plans = tuning_plans(g);
  ASSERT_TRUE(plans.is_ok()) << plans.status().to_string();
  ASSERT_EQ(plans->size(), 2u);
  auto conv_key = [](const ModelPlan& p) {
    for (size_t t = 0; t < p.tasks.size(); ++t)
      if (p.task_ops[t].rfind("conv2d", 0) == 0) return p.tasks[t].dag->workload_key();
    return std::string();
  };
  const std::string direct = conv_key((*plans)[0]), winograd = conv_key((*plans)[1]);
  ASSERT_FALSE(direct.empty());
  ASSERT_FALSE(winograd.empty());
  ASSERT_NE(direct, winograd);

  auto chosen = [&](ScheduleSource* source) {
    auto c = choose_winograd(g, host_target(), source);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    EXPECT_EQ(c->size(), 2u);  // conv0 and conv1, one task
    return c.is_ok() && !c->empty() && c->front().winograd;
  };
  EXPECT_FALSE(chosen(nullptr));  // no records: by the rule, and 8 channels in and out are too few
  const std::string target = host_target().to_string();
  FixedScheduleSource faster;
  faster.add(direct, target, ScheduleCandidate{"[]", 2e-3});
  faster.add(winograd, target, ScheduleCandidate{"[]", 1e-3});
  EXPECT_TRUE(chosen(&faster));
  FixedScheduleSource slower;
  slower.add(direct, target, ScheduleCandidate{"[]", 1e-3});
  slower.add(winograd, target, ScheduleCandidate{"[]", 2e-3});
  EXPECT_FALSE(chosen(&slower));
  FixedScheduleSource only_winograd;
  only_winograd.add(winograd, target, ScheduleCandidate{"[]", 5e-3});
  EXPECT_TRUE(chosen(&only_winograd));

  // With 16 channels in and out, the rule picks Winograd.
  Graph wide;
  ValueId x = wide.add_input("x", {1, 16, 8, 8}, DType::f32());
  ValueId w = wide.add_constant("w", graph::Constant::from_floats({16, 16, 3, 3}, gt::random_floats(2304, 4)));
  ConvAttrs a;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  wide.set_outputs({wide.add_op("conv", OpKind::kConv, a, {x, w}, {1, 16, 8, 8}, DType::f32())});
  auto rule = choose_winograd(prepare_model(wide).value(), host_target(), nullptr);
  ASSERT_TRUE(rule.is_ok()) << rule.status().to_string();
  ASSERT_EQ(rule->size(), 1u);
  EXPECT_TRUE(rule->front().winograd);

  auto c = choose_winograd(g, host_target(), &faster).value();
  const PlanOptions options = with_winograd({}, c);
  EXPECT_EQ(options.winograd_convs, (std::set<std::string>{"conv0", "conv1"}));
  EXPECT_NE(format_winograd_choices(c).find("winograd 1.000 ms, direct 2.000 ms"), std::string::npos)
      << format_winograd_choices(c);
}

// A MobileNet-like block: depthwise 3x3 (+ bias, ReLU6), depthwise of
// multiplier 2 at stride 2 (+ bias, HardSwish), a grouped 1x1 conv with a
// residual add, and a squeeze-excite (pool, 1x1 conv, HardSigmoid, scale).
Graph depthwise_block() {
  Graph g;
  auto weights = [&](const std::string& name, std::vector<int64_t> shape, uint64_t seed) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return g.add_constant(name, graph::Constant::from_floats(shape, gt::random_floats(static_cast<size_t>(n), seed)));
  };
  const DType f = DType::f32();
  ValueId x = g.add_input("image", {1, 8, 12, 12}, f);
  ConvAttrs dw;
  dw.groups = 8;
  dw.pad_top = dw.pad_left = dw.pad_bottom = dw.pad_right = 1;
  ValueId y = g.add_op("dw", OpKind::kConv, dw, {x, weights("dw.w", {8, 1, 3, 3}, 1), weights("dw.b", {8}, 2)},
                       {1, 8, 12, 12}, f);
  y = g.add_op("relu6", OpKind::kClip, graph::AffineAttrs{0.0, 6.0}, {y}, {1, 8, 12, 12}, f);
  ConvAttrs dw2 = dw;
  dw2.stride_h = dw2.stride_w = 2;
  y = g.add_op("dw2", OpKind::kConv, dw2, {y, weights("dw2.w", {16, 1, 3, 3}, 3), weights("dw2.b", {16}, 4)},
               {1, 16, 6, 6}, f);
  y = g.add_op("hswish", OpKind::kHardSwish, graph::NoAttrs{}, {y}, {1, 16, 6, 6}, f);
  ConvAttrs grouped;
  grouped.groups = 4;
  ValueId z = g.add_op("pw", OpKind::kConv, grouped, {y, weights("pw.w", {16, 4, 1, 1}, 5), weights("pw.b", {16}, 6)},
                       {1, 16, 6, 6}, f);
  z = g.add_op("residual", OpKind::kAdd, graph::NoAttrs{}, {z, y}, {1, 16, 6, 6}, f);
  ValueId s = g.add_op("se.pool", OpKind::kGlobalAvgPool, graph::NoAttrs{}, {z}, {1, 16, 1, 1}, f);
  s = g.add_op("se.conv", OpKind::kConv, ConvAttrs{}, {s, weights("se.w", {16, 16, 1, 1}, 7), weights("se.b", {16}, 8)},
               {1, 16, 1, 1}, f);
  s = g.add_op("se.hsig", OpKind::kHardSigmoid, graph::AffineAttrs{0.2, 0.5}, {s}, {1, 16, 1, 1}, f);
  ValueId o = g.add_op("se.scale", OpKind::kMul, graph::NoAttrs{}, {z, s}, {1, 16, 6, 6}, f);
  g.set_outputs({o}, {"out"});
  return g;
}

TEST(CompileModel, DepthwiseAndGroupedConvsRunOnTheirTemplates) {
  const Graph g = depthwise_block();
  for (bool nhwc : {false, true}) {
    const auto x = gt::random_floats(8 * 12 * 12, 9);
    CompiledModel compiled;
    auto got = compile_and_run(g, {{"image", x}}, nullptr, &compiled, PlanOptions{.nhwc_layout = nhwc});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    auto want = gt::run_graph(g, {{0, gt::to_bytes(x)}});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    EXPECT_TRUE(gt::close(got->at("out"), gt::to_floats((*want)[0])));
    EXPECT_TRUE(compiled.report.warnings.empty()) << format_compile_summary(compiled);
    int convs = 0;
    for (const KernelInfo& k : compiled.kernels) {
      if (k.label.rfind("fused_conv", 0) != 0) continue;
      ++convs;
      EXPECT_EQ(k.source, ScheduleChoice::Source::kTemplateFallback) << k.label << ": " << k.explanation;
    }
    EXPECT_EQ(convs, 4) << format_compile_summary(compiled);
  }
}

TEST(CompileModel, DepthwiseOpsFollowTheLayoutAndGroups) {
  auto plan = plan_model(depthwise_block(), {.nhwc_layout = false});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  std::vector<std::string> conv_ops;
  for (size_t t = 0; t < plan->tasks.size(); ++t)
    if (plan->task_labels[t].rfind("fused_conv", 0) == 0) conv_ops.push_back(plan->task_ops[t]);
  EXPECT_EQ(conv_ops, (std::vector<std::string>{"depthwise_conv2d", "depthwise_conv2d", "conv2d", "conv2d"}));

  // In NHWC every conv converts (depthwise ones to their NHWC operator), and
  // the squeeze-excite pool reads the NHWC feature map: no transpose but the
  // input's and the output's.
  auto nhwc = plan_model(depthwise_block());
  ASSERT_TRUE(nhwc.is_ok()) << nhwc.status().to_string();
  conv_ops.clear();
  int transposes = 0;
  for (size_t t = 0; t < nhwc->tasks.size(); ++t) {
    if (nhwc->task_labels[t].rfind("fused_conv", 0) == 0) conv_ops.push_back(nhwc->task_ops[t]);
    transposes += nhwc->task_labels[t].find("transpose") != std::string::npos;
  }
  EXPECT_EQ(conv_ops,
            (std::vector<std::string>{"depthwise_conv2d_nhwc", "depthwise_conv2d_nhwc", "conv2d_nhwc", "conv2d_nhwc"}));
  EXPECT_EQ(transposes, 2) << ::testing::PrintToString(nhwc->task_labels);
}

// A model's depthwise conv and `--op depthwise_conv2d:...` of the same layer
// are one workload: one key, and a record stored for the operator schedules
// the model's kernel.
TEST(CompileModel, ADepthwiseConvHasTheKeyOfItsOperatorSpec) {
  Graph g;
  ValueId x = g.add_input("x", {1, 24, 14, 14}, DType::f32());
  ValueId w = g.add_constant("w", graph::Constant::from_floats({24, 1, 3, 3}, gt::random_floats(216, 11)));
  ConvAttrs a;
  a.groups = 24;
  a.stride_h = a.stride_w = 2;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  ValueId y = g.add_op("layer3.dw", OpKind::kConv, a, {x, w}, {1, 24, 7, 7}, DType::f32());
  g.set_outputs({y}, {"out"});
  auto plan = plan_model(g, {.nhwc_layout = false});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->tasks.size(), 1u);
  auto op = ops::parse_op_spec("depthwise_conv2d:N=1,C=24,H=14,W=14,R=3,S=3,stride=2,pad=1");
  ASSERT_TRUE(op.is_ok()) << op.status().to_string();
  EXPECT_EQ(plan->tasks[0].dag->workload_key(), op->dag->workload_key());
  EXPECT_NE(plan->tasks[0].dag->workload_key(),
            ops::parse_op_spec("depthwise_conv2d:N=1,C=24,H=14,W=14,R=3,S=3,stride=1,pad=1")->dag->workload_key());

  // The record, built on the operator's DAG, as `tessera tune --op` stores it.
  auto state = apply_fallback(*find_template("depthwise_conv2d"), op->dag, host_target());
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  FixedScheduleSource source;
  source.add(op->dag->workload_key(), host_target().to_string(),
             ScheduleCandidate{steps_to_json(state->steps()), 1e-3});
  const auto input = gt::random_floats(24 * 14 * 14, 12);
  CompiledModel compiled;
  auto got = compile_and_run(g, {{"x", input}}, &source, &compiled, PlanOptions{.nhwc_layout = false});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(compiled.kernels[0].source, ScheduleChoice::Source::kRecord) << compiled.kernels[0].explanation;
  EXPECT_EQ(compiled.report.from_records, 1);
  auto want = gt::run_graph(g, {{0, gt::to_bytes(input)}});
  ASSERT_TRUE(want.is_ok());
  EXPECT_TRUE(gt::close(got->at("out"), gt::to_floats((*want)[0])));
}

// With the bias and ReLU a model fuses into it (the PP-OCR classifier's
// depthwise kernels), the spec names them: bias=1, relu=1.
TEST(CompileModel, ADepthwiseConvWithBiasAndReluHasTheKeyOfItsOperatorSpec) {
  Graph g;
  ValueId x = g.add_input("x", {1, 8, 12, 96}, DType::f32());
  ValueId w = g.add_constant("w", graph::Constant::from_floats({8, 1, 3, 3}, gt::random_floats(72, 13)));
  ValueId b = g.add_constant("b", graph::Constant::from_floats({8}, gt::random_floats(8, 14)));
  ConvAttrs a;
  a.groups = 8;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  ValueId y = g.add_op("dw", OpKind::kConv, a, {x, w, b}, {1, 8, 12, 96}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, graph::NoAttrs{}, {y}, {1, 8, 12, 96}, DType::f32());
  g.set_outputs({r}, {"out"});
  auto plan = plan_model(g, {.nhwc_layout = false});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->tasks.size(), 1u);
  const std::string spec = "depthwise_conv2d:N=1,C=8,H=12,W=96,R=3,S=3,pad=1";
  EXPECT_EQ(plan->tasks[0].dag->workload_key(), ops::parse_op_spec(spec + ",bias=1,relu=1")->dag->workload_key());
  EXPECT_NE(plan->tasks[0].dag->workload_key(), ops::parse_op_spec(spec + ",bias=1")->dag->workload_key());
  EXPECT_NE(plan->tasks[0].dag->workload_key(), ops::parse_op_spec(spec)->dag->workload_key());
}

// PP-OCR's classifier halves only the rows: stride 2 x 1, named stride_w=1.
TEST(CompileModel, ADepthwiseConvOfRowStrideTwoHasTheKeyOfItsOperatorSpec) {
  Graph g;
  ValueId x = g.add_input("x", {1, 8, 24, 96}, DType::f32());
  ValueId w = g.add_constant("w", graph::Constant::from_floats({8, 1, 3, 3}, gt::random_floats(72, 15)));
  ConvAttrs a;
  a.groups = 8;
  a.stride_h = 2;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  ValueId y = g.add_op("dw", OpKind::kConv, a, {x, w}, {1, 8, 12, 96}, DType::f32());
  g.set_outputs({y}, {"out"});
  auto plan = plan_model(g, {.nhwc_layout = false});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const std::string spec = "depthwise_conv2d:N=1,C=8,H=24,W=96,R=3,S=3,pad=1,stride=2";
  EXPECT_EQ(plan->tasks[0].dag->workload_key(), ops::parse_op_spec(spec + ",stride_w=1")->dag->workload_key());
  EXPECT_NE(plan->tasks[0].dag->workload_key(), ops::parse_op_spec(spec)->dag->workload_key());
  EXPECT_EQ(ops::parse_op_spec(spec + ",stride_w=2")->dag->workload_key(),
            ops::parse_op_spec(spec)->dag->workload_key());
}

// In NHWC (the default layout) the same layers are `depthwise_conv2d_nhwc`
// workloads, with the epilogue named the same way, and a record stored for
// the operator schedules the model's kernel.
TEST(CompileModel, ANhwcDepthwiseConvHasTheKeyOfItsOperatorSpec) {
  Graph g;
  ValueId x = g.add_input("x", {1, 8, 24, 96}, DType::f32());
  ValueId w = g.add_constant("w", graph::Constant::from_floats({8, 1, 3, 3}, gt::random_floats(72, 15)));
  ValueId b = g.add_constant("b", graph::Constant::from_floats({8}, gt::random_floats(8, 14)));
  ConvAttrs a;
  a.groups = 8;
  a.stride_h = 2;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  ValueId y = g.add_op("dw", OpKind::kConv, a, {x, w, b}, {1, 8, 12, 96}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, graph::NoAttrs{}, {y}, {1, 8, 12, 96}, DType::f32());
  g.set_outputs({r}, {"out"});
  auto plan = plan_model(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const auto conv = std::find(plan->task_ops.begin(), plan->task_ops.end(), "depthwise_conv2d_nhwc");
  ASSERT_NE(conv, plan->task_ops.end()) << "no NHWC depthwise task";
  const size_t t = static_cast<size_t>(conv - plan->task_ops.begin());
  const std::string spec = "depthwise_conv2d_nhwc:N=1,C=8,H=24,W=96,R=3,S=3,pad=1,stride=2,stride_w=1";
  auto op = ops::parse_op_spec(spec + ",bias=1,relu=1");
  ASSERT_TRUE(op.is_ok()) << op.status().to_string();
  EXPECT_EQ(plan->tasks[t].dag->workload_key(), op->dag->workload_key());
  EXPECT_NE(plan->tasks[t].dag->workload_key(), ops::parse_op_spec(spec + ",bias=1")->dag->workload_key());

  auto state = apply_fallback(*find_template("depthwise_conv2d_nhwc"), op->dag, host_target());
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  FixedScheduleSource source;
  source.add(op->dag->workload_key(), host_target().to_string(),
             ScheduleCandidate{steps_to_json(state->steps()), 1e-3});
  const auto input = gt::random_floats(8 * 24 * 96, 16);
  CompiledModel compiled;
  auto got = compile_and_run(g, {{"x", input}}, &source, &compiled);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(compiled.kernels[t].source, ScheduleChoice::Source::kRecord) << compiled.kernels[t].explanation;
  auto want = gt::run_graph(g, {{0, gt::to_bytes(input)}});
  ASSERT_TRUE(want.is_ok());
  EXPECT_TRUE(gt::close(got->at("out"), gt::to_floats((*want)[0])));
}

TEST(CompileModel, CrossCompilesForAarch64) {
  auto plan = plan_model(small_cnn());
  ASSERT_TRUE(plan.is_ok());
  auto target = Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -num-cores=4");
  ASSERT_TRUE(target.is_ok()) << target.status().to_string();
  auto compiled = compile_model(*plan, *target);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  // An ELF shared object for AArch64 (e_machine 183).
  const std::string& lib = compiled->package.library;
  ASSERT_GT(lib.size(), 20u);
  EXPECT_EQ(lib.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(static_cast<uint8_t>(lib[18]), 183);
  EXPECT_EQ(compiled->package.target, target->to_string());
}

}  // namespace
}  // namespace tessera::model
