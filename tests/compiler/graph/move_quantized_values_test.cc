// move_quantized_values: the moves of a QDQ model (DequantizeLinear ->
// MaxPool / Concat / Reshape / nearest Resize -> QuantizeLinear of the same
// parameters) run on the integers, with exactly the result of the float
// round trip; a move whose QuantizeLinear has other parameters, whose float
// output has another reader, or a Resize that interpolates, stays.
#include <gtest/gtest.h>

#include "compiler/graph/passes.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

int count_kind(const Graph& g, OpKind kind) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.kind == kind;
  return n;
}

struct Params {
  ValueId scale, zero_point;
};

Params params(Graph& g, const std::string& name, float scale, int zero_point) {
  return {g.add_constant(name + ".scale", Constant::from_floats({}, {scale})),
          g.add_constant(name + ".zp", Constant::from_doubles(DType::u8(), {}, {double(zero_point)}))};
}

ValueId dequantize(Graph& g, const std::string& name, ValueId x, Params p) {
  return g.add_op(name, OpKind::kDequantize, NoAttrs{}, {x, p.scale, p.zero_point}, g.value(x).shape, DType::f32());
}

ValueId quantize(Graph& g, const std::string& name, ValueId x, Params p) {
  return g.add_op(name, OpKind::kQuantize, NoAttrs{}, {x, p.scale, p.zero_point}, g.value(x).shape, DType::u8());
}

std::vector<uint8_t> bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 97 + seed * 31 + 5) % 256);
  return v;
}

// Runs `g` before and after the pass on the same inputs: equal bytes.
void expect_same_outputs(const Graph& before, const Graph& after) {
  std::map<ValueId, test::Bytes> feed;
  uint32_t seed = 1;
  for (ValueId v : before.inputs()) feed[v] = bytes(static_cast<size_t>(shape_size(before.value(v).shape)), seed++);
  auto want = test::run_graph(before, feed);
  auto got = test::run_graph(after, feed);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(*got, *want);
}

TEST(MoveQuantizedValues, AMaxPoolBetweenTheSameParametersPoolsTheIntegers) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 2, 6, 6}, DType::u8());
  const Params p = params(g, "p", 0.05f, 17);
  PoolAttrs pool;
  pool.kernel_h = pool.kernel_w = 3;
  pool.stride_h = pool.stride_w = 2;
  pool.pad_top = pool.pad_left = pool.pad_bottom = pool.pad_right = 1;
  const ValueId m = g.add_op("pool", OpKind::kMaxPool, pool, {dequantize(g, "dq", x, p)}, {1, 2, 3, 3}, DType::f32());
  g.set_outputs({quantize(g, "q", m, p)});
  auto moved = move_quantized_values(g);
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  ASSERT_EQ(moved->nodes().size(), 1u);
  EXPECT_EQ(moved->nodes()[0].kind, OpKind::kMaxPool);
  EXPECT_EQ(moved->nodes()[0].inputs[0], x);
  expect_same_outputs(g, *moved);
}

TEST(MoveQuantizedValues, AConcatOfEquallyQuantizedValuesAndANearestResizeMoveTheIntegers) {
  Graph g;
  const ValueId a = g.add_input("a", {1, 2, 3, 3}, DType::u8()), b = g.add_input("b", {1, 3, 3, 3}, DType::u8());
  // Equal parameters held by different constants, as a quantizer writes them.
  const Params pa = params(g, "pa", 0.1f, 128), pb = params(g, "pb", 0.1f, 128), pq = params(g, "pq", 0.1f, 128);
  const ValueId c = g.add_op("concat", OpKind::kConcat, AxisAttrs{1},
                             {dequantize(g, "dqa", a, pa), dequantize(g, "dqb", b, pb)}, {1, 5, 3, 3}, DType::f32());
  const ValueId cq = quantize(g, "q", c, pq);
  ResizeAttrs up;
  up.mode = ResizeAttrs::Mode::kNearest;
  up.scales = {1, 1, 2, 2};
  const ValueId r = g.add_op("resize", OpKind::kResize, up, {dequantize(g, "dqc", cq, pq)}, {1, 5, 6, 6}, DType::f32());
  g.set_outputs({quantize(g, "rq", r, pq)});
  auto moved = move_quantized_values(g);
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  EXPECT_EQ(count_kind(*moved, OpKind::kQuantize) + count_kind(*moved, OpKind::kDequantize), 0);
  expect_same_outputs(g, *moved);
}

TEST(MoveQuantizedValues, MovesThatMustRoundOrWhoseFloatsAreReadStay) {
  Graph g;
  const ValueId x = g.add_input("x", {1, 2, 4, 4}, DType::u8());
  const Params p = params(g, "p", 0.05f, 17), other = params(g, "other", 0.04f, 17);
  const ValueId d = dequantize(g, "dq", x, p);
  // Another scale: the values must be requantized.
  const ValueId t = g.add_op("t", OpKind::kTranspose, PermAttrs{{0, 1, 3, 2}}, {d}, {1, 2, 4, 4}, DType::f32());
  const ValueId tq = quantize(g, "tq", t, other);
  // A linear Resize interpolates.
  ResizeAttrs up;
  up.mode = ResizeAttrs::Mode::kLinear;
  up.scales = {1, 1, 2, 2};
  const ValueId r = g.add_op("resize", OpKind::kResize, up, {d}, {1, 2, 8, 8}, DType::f32());
  const ValueId rq = quantize(g, "rq", r, p);
  // The reshape's float output is also a graph output.
  const ValueId s = g.add_op("flat", OpKind::kReshape, NoAttrs{}, {d}, {1, 32}, DType::f32());
  g.set_outputs({tq, rq, quantize(g, "sq", s, p), s});
  auto moved = move_quantized_values(g);
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  EXPECT_EQ(moved->nodes().size(), g.nodes().size());
  EXPECT_EQ(count_kind(*moved, OpKind::kQuantize), 3);
}

}  // namespace
}  // namespace tessera::graph
