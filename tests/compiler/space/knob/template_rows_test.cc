// The rows template (softmax, layer_norm as a model fuses them): random
// configurations built and run against the reference interpreter, and the
// fallback computes each row's statistics at the row (one row per block
// iteration, not the whole tensor).
#include <gtest/gtest.h>

#include <random>

#include "compiler/codegen/build.h"
#include "compiler/codegen/interpreter.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/graph/build_node.h"
#include "compiler/ir/printer.h"
#include "compiler/lower/infer_bounds.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/ops.h"
#include "compiler/space/knob/templates.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "tests/compiler/space/knob/template_check.h"

namespace tessera {
namespace {

const char* const kSpecs[] = {"softmax:M=12,N=40", "softmax:M=5,N=128", "layer_norm:M=6,N=37", "layer_norm:M=16,N=256"};

TEST(RowsTemplate, FallbackComputesEachStatisticPerRow) {
  const KnobTemplate* tmpl = find_template("rows");
  ASSERT_NE(tmpl, nullptr);
  for (const char* spec : kSpecs) {
    ops::OpInstance inst = ops::parse_op_spec(spec).value();
    KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
    KnobConfig c = tmpl->fallback(space, *inst.dag, host_target()).value();
    State state = apply_template(*tmpl, inst.dag, c, host_target()).value();
    State bounded = infer_bounds(state).value();
    const int64_t lanes = host_target().vector_lanes(DType::f32());
    for (const Stage& stage : bounded.stages()) {
      if (stage.location != ComputeLocation::kAt) continue;
      // A statistic's partial sums (".rf") are one vector of the row's; the
      // vector innermost.
      const bool partials = stage.name().ends_with(".rf");
      int64_t elements = 1;
      for (const Iter& it : stage.iters)
        if (it.kind == IterKind::kSpatial) elements *= it.extent;
      EXPECT_EQ(elements, partials ? lanes : 1) << spec << ": " << stage.name() << " covers more than its row\n"
                                                << to_string(lower(state).value());
      if (partials) EXPECT_EQ(stage.iters.back().annotation, IterAnnotation::kVectorize) << spec;
    }
  }
}

// A row of at least two vectors is summed (or maxed) in a vector of partial
// sums, not one element at a time: every statistic of the fallback has its
// ".rf" stage, rows that whole vectors do not divide (37, 40) included; the
// results are checked against the interpreter below.
TEST(RowsTemplate, LongRowsReduceInVectorsOfPartialSums) {
  const KnobTemplate* tmpl = find_template("rows");
  const int64_t lanes = host_target().vector_lanes(DType::f32());
  for (const char* spec : kSpecs) {
    ops::OpInstance inst = ops::parse_op_spec(spec).value();
    KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
    State state =
        apply_template(*tmpl, inst.dag, tmpl->fallback(space, *inst.dag, host_target()).value(), host_target()).value();
    const int64_t row = inst.dag->tensors().back()->shape.back();
    int statistics = 0, partials = 0;
    for (const Stage& stage : state.stages()) {
      if (stage.is_placeholder() || stage.reduce_axes.empty()) continue;
      (stage.name().ends_with(".rf") ? partials : statistics) += 1;
    }
    EXPECT_GT(statistics, 0) << spec;
    EXPECT_EQ(partials, row >= 2 * lanes ? statistics : 0) << spec;
  }
}

TEST(RowsTemplate, RandomConfigurationsMatchTheInterpreter) {
  const KnobTemplate* tmpl = find_template("rows");
  ASSERT_NE(tmpl, nullptr);
  runtime::ThreadPool pool(2);
  std::mt19937_64 rng(17);
  for (const char* spec : kSpecs) {
    ops::OpInstance inst = ops::parse_op_spec(spec).value();
    const runtime::NDArray want = reference(inst);
    KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
    std::vector<KnobConfig> configs = {tmpl->fallback(space, *inst.dag, host_target()).value()};
    for (int i = 0; i < 6; ++i) configs.push_back(space.config(rng() % space.size()).value());
    for (const KnobConfig& c : configs) {
      auto state = apply_template(*tmpl, inst.dag, c, host_target());
      ASSERT_TRUE(state.is_ok()) << spec << " " << c.to_string() << ": " << state.status().to_string();
      expect_matches(inst, *state, want, &pool, std::string(spec) + " " + c.to_string());
    }
  }
}

// A model's softmax as compiler/graph builds it (max, exp stored, sum,
// divide): the exp stage is computed once, at the row block beside its
// readers, not inlined twice and not stored whole.
TEST(RowsTemplate, GraphSoftmaxStoresItsExpOnceAndMatchesTheInterpreter) {
  graph::Graph g;
  graph::ValueId x = g.add_input("x", {2, 3, 37}, DType::f32());
  graph::ValueId y = g.add_op("sm", graph::OpKind::kSoftmax, graph::AxisAttrs{2}, {x}, {2, 3, 37}, DType::f32());
  g.set_outputs({y});
  Tensor in = placeholder({2, 3, 37}, DType::f32(), "X");
  Tensor out = graph::build_node(g, g.nodes()[0], {in}).value();
  ops::OpInstance inst{"rows", "graph softmax",
                       std::make_shared<const ComputeDAG>(ComputeDAG::make({in, out}).value())};
  const KnobTemplate* tmpl = find_template("rows");
  KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
  KnobConfig c = tmpl->fallback(space, *inst.dag, host_target()).value();
  State state = apply_template(*tmpl, inst.dag, c, host_target()).value();
  const int e = state.stage_index("sm.exp");
  ASSERT_GE(e, 0);
  EXPECT_EQ(state.stage(e).location, ComputeLocation::kAt);
  const runtime::NDArray want = reference(inst);
  runtime::ThreadPool pool(2);
  expect_matches(inst, state, want, &pool, "graph softmax " + c.to_string());
  std::mt19937_64 rng(5);
  for (int i = 0; i < 4; ++i) {
    KnobConfig random = space.config(rng() % space.size()).value();
    expect_matches(inst, apply_template(*tmpl, inst.dag, random, host_target()).value(), want, &pool,
                   "graph softmax " + random.to_string());
  }
}

// A layer norm followed by a scale and shift per row (GroupNorm as torch
// exports it: InstanceNormalization, then Mul and Add by [C, 1] weights).
// The layer norm's output is inlined into them, so its statistics go at the
// output's row block: the fallback applies, keeps them per row and matches
// the interpreter (it failed with "stage ... is inlined" and fell to the
// generic schedule's column-wise gathers).
TEST(RowsTemplate, LayerNormWithAScaleAndShiftPerRowKeepsTheTemplate) {
  Tensor x = placeholder({1, 6, 37}, DType::f32(), "X");
  Tensor gamma = placeholder({37}, DType::f32(), "gamma");
  Tensor beta = placeholder({37}, DType::f32(), "beta");
  Tensor scale = placeholder({6, 1}, DType::f32(), "scale");
  Tensor shift = placeholder({6, 1}, DType::f32(), "shift");
  Tensor normed = ops::layer_norm(x, gamma, beta, -1, 1e-5, "normed").value();
  Tensor scaled = ops::mul(normed, scale, "scaled").value();
  Tensor out = ops::add(scaled, shift, "shifted").value();
  ops::OpInstance inst{
      "rows", "layer norm, scale, shift",
      std::make_shared<const ComputeDAG>(ComputeDAG::make({x, gamma, beta, scale, shift, out}).value())};
  const KnobTemplate* tmpl = find_template("rows");
  KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
  KnobConfig c = tmpl->fallback(space, *inst.dag, host_target()).value();
  auto state = apply_template(*tmpl, inst.dag, c, host_target());
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  for (const char* stat : {"normed.sum", "normed.sqdev"})
    EXPECT_EQ(state->stage(state->stage_index(stat)).location, ComputeLocation::kAt) << stat;
  const runtime::NDArray want = reference(inst);
  runtime::ThreadPool pool(2);
  expect_matches(inst, *state, want, &pool, "layer norm, scale, shift " + c.to_string());
  std::mt19937_64 rng(9);
  for (int i = 0; i < 4; ++i) {
    KnobConfig random = space.config(rng() % space.size()).value();
    auto other = apply_template(*tmpl, inst.dag, random, host_target());
    ASSERT_TRUE(other.is_ok()) << random.to_string() << ": " << other.status().to_string();
    expect_matches(inst, *other, want, &pool, "layer norm, scale, shift " + random.to_string());
  }
}

TEST(RowsTemplate, AMatmulIsNotRows) {
  ops::OpInstance mm = ops::parse_op_spec("matmul:M=8,N=8,K=8").value();
  EXPECT_EQ(find_template("rows")->define(*mm.dag, host_target()).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
