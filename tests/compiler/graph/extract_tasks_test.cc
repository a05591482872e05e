#include "compiler/graph/extract_tasks.h"

#include <gtest/gtest.h>

#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

// Two identical conv + relu blocks and one of another size, then a dense head.
Graph repeated_blocks() {
  Graph g;
  ValueId v = g.add_input("x", {1, 4, 6, 6}, DType::f32());
  ConvAttrs a;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  for (int i = 0; i < 2; ++i) {
    ValueId w =
        g.add_constant("w" + std::to_string(i), Constant::from_floats({4, 4, 3, 3}, test::random_floats(144, i)));
    ValueId y = g.add_op("conv" + std::to_string(i), OpKind::kConv, a, {v, w}, {1, 4, 6, 6}, DType::f32());
    v = g.add_op("relu" + std::to_string(i), OpKind::kRelu, NoAttrs{}, {y}, {1, 4, 6, 6}, DType::f32());
  }
  ValueId w = g.add_constant("w2", Constant::from_floats({8, 4, 1, 1}, test::random_floats(32, 9)));
  ValueId y = g.add_op("conv2", OpKind::kConv, ConvAttrs{}, {v, w}, {1, 8, 6, 6}, DType::f32());
  ValueId r = g.add_op("relu2", OpKind::kRelu, NoAttrs{}, {y}, {1, 8, 6, 6}, DType::f32());
  ValueId p = g.add_op("gap", OpKind::kGlobalAvgPool, NoAttrs{}, {r}, {1, 8, 1, 1}, DType::f32());
  ValueId f = g.add_op("flatten", OpKind::kReshape, NoAttrs{}, {p}, {1, 8}, DType::f32());
  ValueId fw = g.add_constant("fc.w", Constant::from_floats({3, 8}, test::random_floats(24, 10)));
  ValueId fb = g.add_constant("fc.b", Constant::from_floats({3}, {0.1f, 0.2f, 0.3f}));
  GemmAttrs ga;
  ga.trans_b = true;
  ValueId o = g.add_op("fc", OpKind::kGemm, ga, {f, fw, fb}, {1, 3}, DType::f32());
  g.set_outputs({o});
  return g;
}

TEST(ExtractTasks, IdenticalGroupsShareOneWeightedTask) {
  const Graph g = repeated_blocks();
  const auto groups = fuse_ops(g);
  auto tasks = extract_tasks(g, groups);
  ASSERT_TRUE(tasks.is_ok()) << tasks.status().to_string();
  ASSERT_EQ(tasks->tasks.size(), 5u) << groups_to_string(g, groups);
  EXPECT_EQ(tasks->tasks[0].name, "fused_conv_relu");
  EXPECT_EQ(tasks->tasks[0].weight, 2);
  EXPECT_EQ(tasks->tasks[1].weight, 1);
  EXPECT_EQ(tasks->task_of_group, (std::vector<int>{0, 0, 1, 2, 3, 4}));
  // 2 * N*K*P*Q*C*R*S multiply-adds plus the relu.
  EXPECT_GE(tasks->tasks[0].flops, 2.0 * 4 * 36 * 4 * 9);
  EXPECT_EQ(tasks->tasks[0].dag->workload_key().size(), 32u);
}

TEST(ExtractTasks, WholeModelRunsAgainstNaiveReference) {
  const Graph g = repeated_blocks();
  const auto x = test::random_floats(144, 20);
  auto got = test::run_graph(g, {{0, test::to_bytes(x)}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ConvAttrs a;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  auto relu = [](std::vector<float> v) {
    for (float& f : v) f = std::max(f, 0.0f);
    return v;
  };
  auto v = relu(test::naive_conv(x, {1, 4, 6, 6}, test::random_floats(144, 0), {4, 4, 3, 3}, {}, a));
  v = relu(test::naive_conv(v, {1, 4, 6, 6}, test::random_floats(144, 1), {4, 4, 3, 3}, {}, a));
  v = relu(test::naive_conv(v, {1, 4, 6, 6}, test::random_floats(32, 9), {8, 4, 1, 1}, {}, ConvAttrs{}));
  std::vector<float> pooled(8, 0.0f);
  for (int c = 0; c < 8; ++c) {
    for (int i = 0; i < 36; ++i) pooled[c] += v[c * 36 + i];
    pooled[c] /= 36.0f;
  }
  const auto fw = test::random_floats(24, 10);
  std::vector<float> want{0.1f, 0.2f, 0.3f};
  for (int o = 0; o < 3; ++o)
    for (int c = 0; c < 8; ++c) want[o] += pooled[c] * fw[o * 8 + c];
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), want, 1e-4, 1e-5));
}

}  // namespace
}  // namespace tessera::graph
