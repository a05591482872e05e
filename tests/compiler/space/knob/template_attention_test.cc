// The attention template: a model's attention chain (scores, a scale and a
// mask, softmax, context) fused into one kernel by compiler/graph, built
// with its fallback and random configurations and run against the reference
// interpreter; the scores stay inside the kernel, a block's worth at a time.
#include <gtest/gtest.h>

#include <random>

#include "compiler/codegen/llvm_target.h"
#include "compiler/graph/extract_tasks.h"
#include "compiler/graph/fuse_ops.h"
#include "compiler/lower/infer_bounds.h"
#include "compiler/space/knob/templates.h"
#include "runtime/thread_pool.h"
#include "tests/compiler/space/knob/template_check.h"

namespace tessera {
namespace {

using graph::ValueId;

// softmax(q k^T / scale + mask) v for `heads` heads of `rows` queries and
// `keys` keys, each `width` wide (the values `value_width`), as one kernel.
// With `keys_in_place` the keys are read transposed from a projection
// [1, keys, heads x width], as an encoder's head split folds into the
// product (compiler/graph's fold_matmul_views).
ops::OpInstance attention(int64_t heads, int64_t rows, int64_t keys, int64_t width, int64_t value_width,
                          bool keys_in_place = false) {
  graph::Graph g;
  const DType f = DType::f32();
  ValueId q = g.add_input("q", {1, heads, rows, width}, f);
  graph::MatMulAttrs views;
  if (keys_in_place) {
    // kt[0, h, c, j] = k[0, j, h * width + c]
    views.b.shape = {1, heads, width, keys};
    views.b.map = {{1, 0, 0, 0}, {0, 0, 0, 1}, {0, width, 1, 0}};
  }
  ValueId kt =
      keys_in_place ? g.add_input("k", {1, keys, heads * width}, f) : g.add_input("kt", {1, heads, width, keys}, f);
  ValueId v = g.add_input("v", {1, heads, keys, value_width}, f);
  ValueId mask = g.add_input("mask", {1, 1, 1, keys}, f);
  ValueId scale = g.add_constant("scale", graph::Constant::from_floats({}, {2.5f}));
  const std::vector<int64_t> scores_shape = {1, heads, rows, keys};
  ValueId s = keys_in_place ? g.add_op("scores", graph::OpKind::kMatMul, views, {q, kt}, scores_shape, f)
                            : g.add_op("scores", graph::OpKind::kMatMul, graph::NoAttrs{}, {q, kt}, scores_shape, f);
  ValueId d = g.add_op("scaled", graph::OpKind::kDiv, graph::NoAttrs{}, {s, scale}, scores_shape, f);
  ValueId m = g.add_op("masked", graph::OpKind::kAdd, graph::NoAttrs{}, {d, mask}, scores_shape, f);
  ValueId p = g.add_op("probs", graph::OpKind::kSoftmax, graph::AxisAttrs{3}, {m}, scores_shape, f);
  ValueId c = g.add_op("context", graph::OpKind::kMatMul, graph::NoAttrs{}, {p, v}, {1, heads, rows, value_width}, f);
  g.set_outputs({c});
  const std::vector<graph::FusedGroup> groups = graph::fuse_ops(g, graph::FuseOptions{0});
  EXPECT_EQ(groups.size(), 1u) << graph::groups_to_string(g, groups);
  graph::TaskExtraction tasks = graph::extract_tasks(g, groups).value();
  return ops::OpInstance{"attention", "attention " + std::to_string(rows) + "x" + std::to_string(keys),
                         tasks.tasks[0].dag};
}

struct Shape {
  int64_t heads, rows, keys, width, value_width;
  bool keys_in_place = false;
};
// Rows with divisors and without (13: the blocks of 8 guarded), keys and
// widths that whole vectors do not divide, a row of keys shorter than two
// vectors (no partial results), keys read in place (copied at the block).
const Shape kShapes[] = {{2, 24, 40, 8, 24}, {1, 13, 20, 5, 64}, {3, 6, 7, 4, 3}, {2, 11, 37, 8, 8, true}};

TEST(AttentionTemplate, FallbackAndRandomConfigurationsMatchTheInterpreter) {
  const KnobTemplate* tmpl = find_template("attention");
  ASSERT_NE(tmpl, nullptr);
  runtime::ThreadPool pool(2);
  std::mt19937_64 rng(31);
  for (const Shape& sh : kShapes) {
    ops::OpInstance inst = attention(sh.heads, sh.rows, sh.keys, sh.width, sh.value_width, sh.keys_in_place);
    const runtime::NDArray want = reference(inst);
    KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
    std::vector<KnobConfig> configs = {tmpl->fallback(space, *inst.dag, host_target()).value()};
    for (int i = 0; i < 5; ++i) configs.push_back(space.config(rng() % space.size()).value());
    for (const KnobConfig& c : configs) {
      auto state = apply_template(*tmpl, inst.dag, c, host_target());
      ASSERT_TRUE(state.is_ok()) << inst.spec << " " << c.to_string() << ": " << state.status().to_string();
      expect_matches(inst, *state, want, &pool, inst.spec + " " + c.to_string());
    }
  }
}

// The scores, the exponentials and the probabilities are computed at the
// block, a block's rows of them at a time (12 of a head's 24 rows here).
TEST(AttentionTemplate, TheScoresNeverTakeAHeadsWorthOfMemory) {
  const KnobTemplate* tmpl = find_template("attention");
  ops::OpInstance inst = attention(2, 24, 40, 8, 24);
  KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
  KnobConfig c = tmpl->fallback(space, *inst.dag, host_target()).value();
  State bounded = infer_bounds(apply_template(*tmpl, inst.dag, c, host_target()).value()).value();
  int at_block = 0;
  for (const Stage& stage : bounded.stages()) {
    if (stage.is_placeholder() || stage.name().ends_with(".rf") || stage.iters.empty()) continue;
    if (stage.location != ComputeLocation::kAt) continue;
    int64_t elements = 1;
    for (const Iter& it : stage.iters)
      if (it.kind == IterKind::kSpatial) elements *= it.extent;
    // A block's rows of keys, the keys' loop padded to its vectors (40 to 64).
    EXPECT_LE(elements, c.get_int("rows") * 64) << stage.name();
    ++at_block;
  }
  EXPECT_GE(at_block, 5);  // scores, max, exp, sum, probabilities (and the context's accumulator)
}

// Keys read in place from their projection are copied once a block with
// the keys innermost, so the scores' vector loads are contiguous.
TEST(AttentionTemplate, KeysReadInPlaceAreCopiedKeysInnermost) {
  const KnobTemplate* tmpl = find_template("attention");
  ops::OpInstance inst = attention(2, 11, 37, 8, 8, true);
  KnobSpace space = tmpl->define(*inst.dag, host_target()).value();
  State state =
      apply_template(*tmpl, inst.dag, tmpl->fallback(space, *inst.dag, host_target()).value(), host_target()).value();
  int copies = 0;
  for (const Stage& stage : state.stages()) {
    if (!stage.name().ends_with(".k.local")) continue;  // the task's argument "arg1.k", copied
    EXPECT_EQ(stage.location, ComputeLocation::kAt);
    ++copies;
  }
  EXPECT_EQ(copies, 1);
}

TEST(AttentionTemplate, AMatmulAloneIsNotAttention) {
  ops::OpInstance mm = ops::parse_op_spec("batch_matmul:B=2,M=8,N=8,K=8").value();
  EXPECT_EQ(find_template("attention")->define(*mm.dag, host_target()).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
