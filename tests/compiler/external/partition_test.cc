// Partitioning for external backends: expected regions on hand-built graphs,
// and properties on random DAGs (no cycle, every node in one place, the
// outputs unchanged through the reference path).
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "compiler/external/cblas.h"
#include "compiler/graph/partition_graph.h"
#include "tests/compiler/external/external_test_util.h"

namespace tessera::graph {
namespace {

namespace gt = test;

const std::vector<int64_t> kSquare = {4, 4};

ValueId weight(Graph& g, const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
  return g.add_constant(name,
                        Constant::from_floats(shape, gt::random_floats(static_cast<size_t>(shape_size(shape)), seed)));
}

PartitionRules cblas_rules() {
  return external::make_cblas_backend()->partition_rules();
}

// x -> dense + bias + relu -> softmax -> dense + bias -> out: two regions
// around the softmax, each a composite.
TEST(PartitionGraph, UnsupportedNodeSplitsTheRegions) {
  Graph g;
  ValueId x = g.add_input("x", {2, 8}, DType::f32());
  ValueId w0 = weight(g, "w0", {8, 4}, 1), b0 = weight(g, "b0", {4}, 2);
  ValueId h = g.add_op("mm0", OpKind::kMatMul, NoAttrs{}, {x, w0}, {2, 4}, DType::f32());
  h = g.add_op("add0", OpKind::kAdd, NoAttrs{}, {h, b0}, {2, 4}, DType::f32());
  h = g.add_op("relu0", OpKind::kRelu, NoAttrs{}, {h}, {2, 4}, DType::f32());
  h = g.add_op("softmax", OpKind::kSoftmax, AxisAttrs{1}, {h}, {2, 4}, DType::f32());
  ValueId w1 = weight(g, "w1", {4, 3}, 3), b1 = weight(g, "b1", {3}, 4);
  GemmAttrs ga;
  ValueId y = g.add_op("gemm1", OpKind::kGemm, ga, {h, w1, b1}, {2, 3}, DType::f32());
  y = g.add_op("add1", OpKind::kAdd, NoAttrs{}, {y, b1}, {2, 3}, DType::f32());
  g.set_outputs({y});
  EXPECT_EQ(gt::regions_to_string(g, find_regions(g, cblas_rules())),
            "cblas_region0: mm0 add0 relu0 (in %0 %1 %2) -> %5\n"
            "cblas_region1: gemm1 add1 (in %6 %7 %8) -> %10\n");
}

// a = x @ w; c = softmax(a) @ a: joining a's and c's matmuls would make the
// path a -> softmax -> c leave the region and come back.
TEST(PartitionGraph, RegionsThatWouldMakeACycleStayApart) {
  Graph g;
  ValueId x = g.add_input("x", kSquare, DType::f32());
  ValueId w = weight(g, "w", kSquare, 1);
  ValueId a = g.add_op("mm_a", OpKind::kMatMul, NoAttrs{}, {x, w}, kSquare, DType::f32());
  ValueId s = g.add_op("softmax", OpKind::kSoftmax, AxisAttrs{1}, {a}, kSquare, DType::f32());
  ValueId c = g.add_op("mm_c", OpKind::kMatMul, NoAttrs{}, {s, a}, kSquare, DType::f32());
  g.set_outputs({c});
  const std::vector<Region> regions = find_regions(g, cblas_rules());
  EXPECT_EQ(gt::regions_to_string(g, regions),
            "cblas_region0: mm_a (in %0 %1) -> %2\n"
            "cblas_region1: mm_c (in %3 %2) -> %4\n");
  auto p = partition_graph(g, cblas_rules());
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_TRUE(p->validate().is_ok());
}

// Two matmuls joined by a data edge are one region with both outputs when
// the first is also read outside.
TEST(PartitionGraph, ConnectedMatmulsJoinAndExposeEscapingValues) {
  Graph g;
  ValueId x = g.add_input("x", kSquare, DType::f32());
  ValueId w = weight(g, "w", kSquare, 1);
  ValueId a = g.add_op("mm_a", OpKind::kMatMul, NoAttrs{}, {x, w}, kSquare, DType::f32());
  ValueId b = g.add_op("mm_b", OpKind::kMatMul, NoAttrs{}, {a, w}, kSquare, DType::f32());
  ValueId t = g.add_op("tanh_out", OpKind::kSoftmax, AxisAttrs{1}, {a}, kSquare, DType::f32());
  g.set_outputs({b, t});
  EXPECT_EQ(gt::regions_to_string(g, find_regions(g, cblas_rules())), "cblas_region0: mm_a mm_b (in %0 %1) -> %2 %3\n");
}

// An epilogue joins only when it is its value's one reader: the add here
// reads a value the softmax reads too, and alone it is not supported.
TEST(PartitionGraph, SharedValueEndsTheComposite) {
  Graph g;
  ValueId x = g.add_input("x", kSquare, DType::f32());
  ValueId w = weight(g, "w", kSquare, 1);
  ValueId a = g.add_op("mm", OpKind::kMatMul, NoAttrs{}, {x, w}, kSquare, DType::f32());
  ValueId s = g.add_op("softmax", OpKind::kSoftmax, AxisAttrs{1}, {a}, kSquare, DType::f32());
  ValueId y = g.add_op("add", OpKind::kAdd, NoAttrs{}, {a, s}, kSquare, DType::f32());
  g.set_outputs({y});
  EXPECT_EQ(gt::regions_to_string(g, find_regions(g, cblas_rules())), "cblas_region0: mm (in %0 %1) -> %2\n");
}

TEST(PartitionGraph, RegionsBelowTheMinimumStayHome) {
  Graph g;
  ValueId x = g.add_input("x", kSquare, DType::f32());
  ValueId w = weight(g, "w", kSquare, 1);
  ValueId a = g.add_op("mm", OpKind::kMatMul, NoAttrs{}, {x, w}, kSquare, DType::f32());
  ValueId s = g.add_op("softmax", OpKind::kSoftmax, AxisAttrs{1}, {a}, kSquare, DType::f32());
  ValueId b = g.add_op("mm2", OpKind::kMatMul, NoAttrs{}, {s, w}, kSquare, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, NoAttrs{}, {b}, kSquare, DType::f32());
  g.set_outputs({r});
  PartitionRules rules = cblas_rules();
  rules.min_nodes = 2;
  EXPECT_EQ(gt::regions_to_string(g, find_regions(g, rules)), "cblas_region0: mm2 relu (in %3 %1) -> %5\n");
}

TEST(PartitionGraph, UnsupportedDtypeIsNotTaken) {
  Graph g;
  ValueId x = g.add_input("x", kSquare, DType::f64());
  ValueId w = g.add_input("w", kSquare, DType::f64());
  ValueId a = g.add_op("mm", OpKind::kMatMul, NoAttrs{}, {x, w}, kSquare, DType::f64());
  g.set_outputs({a});
  EXPECT_EQ(gt::regions_to_string(g, find_regions(g, cblas_rules())), "");
}

// The rewrite: one external node per region, named after it, carrying the
// backend and the body; inlining it back restores the nodes.
TEST(PartitionGraph, RegionsBecomeExternalNodesAndInlineBack) {
  Graph g;
  ValueId x = g.add_input("x", {2, 8}, DType::f32());
  ValueId w = weight(g, "w", {8, 4}, 1), b = weight(g, "b", {4}, 2);
  ValueId h = g.add_op("mm", OpKind::kMatMul, NoAttrs{}, {x, w}, {2, 4}, DType::f32());
  h = g.add_op("add", OpKind::kAdd, NoAttrs{}, {h, b}, {2, 4}, DType::f32());
  ValueId y = g.add_op("softmax", OpKind::kSoftmax, AxisAttrs{1}, {h}, {2, 4}, DType::f32());
  g.set_outputs({y});
  auto p = partition_graph(g, cblas_rules());
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(graph_to_string(*p),
            "input %0:float32[2, 8] \"x\"\n"
            "const %1:float32[8, 4] \"w\"\n"
            "const %2:float32[4] \"b\"\n"
            "%4:float32[2, 4] = external \"cblas_region0\" (%0, %1, %2) {backend=cblas nodes=mm,add}\n"
            "%5:float32[2, 4] = softmax \"softmax\" (%4) {axis=1}\n"
            "output %5\n");
  const Graph& body = *std::get<ExternalAttrs>(p->nodes()[0].attrs).body;
  EXPECT_EQ(body.inputs().size(), 3u);
  EXPECT_TRUE(body.constants().empty());
  auto back = inline_external_nodes(*p, [](const Node&) { return true; });
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->nodes().size(), 3u);
  EXPECT_EQ(back->nodes()[0].name, "mm");
  EXPECT_EQ(back->nodes()[1].name, "add");
  EXPECT_EQ(back->nodes()[1].outputs[0], 4);  // the region's output keeps its id
  const auto x_data = gt::random_floats(16, 9);
  auto want = gt::run_graph(g, {{x, gt::to_bytes(x_data)}});
  auto got = gt::run_graph(*back, {{x, gt::to_bytes(x_data)}});
  ASSERT_TRUE(want.is_ok() && got.is_ok());
  EXPECT_EQ(*want, *got);
}

// A fused group never swallows an external node or joins one.
TEST(PartitionGraph, ExternalNodesAreGroupsOfTheirOwn) {
  Graph g;
  ValueId x = g.add_input("x", kSquare, DType::f32());
  ValueId w = weight(g, "w", kSquare, 1);
  ValueId a = g.add_op("mm", OpKind::kMatMul, NoAttrs{}, {x, w}, kSquare, DType::f32());
  ValueId s = g.add_op("softmax", OpKind::kSoftmax, AxisAttrs{1}, {a}, kSquare, DType::f32());
  ValueId y = g.add_op("add", OpKind::kAdd, NoAttrs{}, {a, s}, kSquare, DType::f32());
  ValueId r = g.add_op("sigmoid", OpKind::kSigmoid, NoAttrs{}, {a}, kSquare, DType::f32());
  g.set_outputs({y, r});
  auto p = partition_graph(g, cblas_rules());
  ASSERT_TRUE(p.is_ok());
  // The sigmoid would be the matmul's epilogue; after an external node it
  // is a kernel of its own.
  EXPECT_EQ(groups_to_string(*p, fuse_ops(*p)),
            "fused_external: cblas_region0 (in %0 %1) -> %2\n"
            "fused_softmax_add: softmax add (in %2) -> %4\n"
            "fused_sigmoid: sigmoid (in %2) -> %5\n");
}

// A random DAG over 4x4 float matrices: matmuls, elementwise and
// unsupported operators, reading random earlier values.
Graph random_dag(std::mt19937& rng, int num_nodes) {
  Graph g;
  std::vector<ValueId> values = {g.add_input("x", kSquare, DType::f32()), weight(g, "w", kSquare, rng() % 1000)};
  std::vector<int> reads(2, 0);
  auto pick = [&] {
    const size_t i = rng() % values.size();
    ++reads[i];
    return values[i];
  };
  for (int i = 0; i < num_nodes; ++i) {
    const std::string name = "n" + std::to_string(i);
    ValueId v = -1;
    switch (rng() % 6) {
      case 0:
      case 1: {
        ValueId a = pick(), b = pick();
        v = g.add_op(name, OpKind::kMatMul, NoAttrs{}, {a, b}, kSquare, DType::f32());
        break;
      }
      case 2: {
        ValueId a = pick(), b = pick();
        v = g.add_op(name, OpKind::kAdd, NoAttrs{}, {a, b}, kSquare, DType::f32());
        break;
      }
      case 3: v = g.add_op(name, OpKind::kRelu, NoAttrs{}, {pick()}, kSquare, DType::f32()); break;
      case 4: v = g.add_op(name, OpKind::kSoftmax, AxisAttrs{1}, {pick()}, kSquare, DType::f32()); break;
      default: v = g.add_op(name, OpKind::kTranspose, PermAttrs{{1, 0}}, {pick()}, kSquare, DType::f32()); break;
    }
    values.push_back(v);
    reads.push_back(0);
  }
  // Every value nobody reads is an output, and one random value more.
  std::vector<ValueId> outputs;
  for (size_t i = 2; i < values.size(); ++i)
    if (reads[i] == 0 || rng() % 8 == 0) outputs.push_back(values[i]);
  g.set_outputs(outputs);
  return g;
}

void expect_partition_properties(const Graph& g, const PartitionRules& rules, const std::string& what) {
  std::vector<Region> regions;
  auto p = partition_graph(g, rules, &regions);
  ASSERT_TRUE(p.is_ok()) << what << ": " << p.status().to_string();
  // validate() holds the nodes to a topological order: no cycle.
  ASSERT_TRUE(p->validate().is_ok()) << what;
  // Every node in exactly one place: outside, or in exactly one body.
  std::multiset<std::string> seen;
  for (const Node& n : p->nodes()) {
    if (n.kind != OpKind::kExternal) {
      seen.insert(n.name);
      continue;
    }
    const Graph& body = *std::get<ExternalAttrs>(n.attrs).body;
    EXPECT_TRUE(body.validate().is_ok()) << what << " " << n.name;
    for (const Node& inner : body.nodes()) seen.insert(inner.name);
  }
  std::multiset<std::string> want;
  for (const Node& n : g.nodes()) want.insert(n.name);
  EXPECT_EQ(seen, want) << what;
  for (const Region& r : regions) EXPECT_GE(static_cast<int>(r.nodes.size()), rules.min_nodes) << what;
  // The outputs, through the reference path.
  const std::map<ValueId, gt::Bytes> in = {{g.inputs()[0], gt::to_bytes(gt::random_floats(16, 3))}};
  auto want_out = gt::run_graph(g, in);
  auto got_out = gt::run_partitioned(*p, in);
  ASSERT_TRUE(want_out.is_ok()) << want_out.status().to_string();
  ASSERT_TRUE(got_out.is_ok()) << what << ": " << got_out.status().to_string();
  ASSERT_EQ(want_out->size(), got_out->size());
  for (size_t i = 0; i < want_out->size(); ++i)
    EXPECT_TRUE(gt::close(gt::to_floats((*got_out)[i]), gt::to_floats((*want_out)[i]), 1e-4, 1e-4))
        << what << " output " << i;
}

TEST(PartitionGraph, RandomDagsKeepTheirMeaningAndStayAcyclic) {
  std::mt19937 rng(20);
  for (int trial = 0; trial < 40; ++trial) {
    const Graph g = random_dag(rng, 4 + trial % 12);
    expect_partition_properties(g, cblas_rules(), "cblas, trial " + std::to_string(trial));
    // Any node supported by a coin flip: regions of every shape.
    std::set<std::string> chosen;
    for (const Node& n : g.nodes())
      if (rng() % 3 != 0) chosen.insert(n.name);
    PartitionRules coin;
    coin.backend = "coin";
    coin.supports = [chosen](const Graph&, const Node& n) { return chosen.count(n.name) > 0; };
    coin.min_nodes = 1 + trial % 3;
    expect_partition_properties(g, coin, "coin, trial " + std::to_string(trial));
  }
}

}  // namespace
}  // namespace tessera::graph
