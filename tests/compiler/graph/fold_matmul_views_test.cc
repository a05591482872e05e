// fold_matmul_views: attention's head split and K^T are read in place by the
// MatMul (checked against loops); views with other readers, and reshapes
// that merge axes, stay.
#include <gtest/gtest.h>

#include "compiler/graph/passes.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

constexpr int64_t kSeq = 5, kHeads = 2, kHead = 3, kWidth = kHeads * kHead;

struct Attention {
  Graph g;
  ValueId q = -1, k = -1, kt = -1, scores = -1;
};

// scores[h, i, j] = sum_d q[i, h*3 + d] * k[j, h*3 + d], with q and k of
// shape [1, seq, width] split into heads by Reshape and Transpose, K^T by
// one Transpose (0, 2, 3, 1) as torch.onnx writes it.
Attention attention_scores() {
  Attention a;
  Graph& g = a.g;
  const DType f = DType::f32();
  a.q = g.add_input("q", {1, kSeq, kWidth}, f);
  a.k = g.add_input("k", {1, kSeq, kWidth}, f);
  ValueId qh = g.add_op("q.heads", OpKind::kReshape, NoAttrs{}, {a.q}, {1, kSeq, kHeads, kHead}, f);
  ValueId kh = g.add_op("k.heads", OpKind::kReshape, NoAttrs{}, {a.k}, {1, kSeq, kHeads, kHead}, f);
  ValueId qt = g.add_op("q.t", OpKind::kTranspose, PermAttrs{{0, 2, 1, 3}}, {qh}, {1, kHeads, kSeq, kHead}, f);
  a.kt = g.add_op("k.t", OpKind::kTranspose, PermAttrs{{0, 2, 3, 1}}, {kh}, {1, kHeads, kHead, kSeq}, f);
  a.scores = g.add_op("scores", OpKind::kMatMul, NoAttrs{}, {qt, a.kt}, {1, kHeads, kSeq, kSeq}, f);
  return a;
}

std::vector<float> naive_scores(const std::vector<float>& q, const std::vector<float>& k) {
  std::vector<float> s(kHeads * kSeq * kSeq, 0.0f);
  for (int64_t h = 0; h < kHeads; ++h)
    for (int64_t i = 0; i < kSeq; ++i)
      for (int64_t j = 0; j < kSeq; ++j)
        for (int64_t d = 0; d < kHead; ++d)
          s[(h * kSeq + i) * kSeq + j] += q[i * kWidth + h * kHead + d] * k[j * kWidth + h * kHead + d];
  return s;
}

TEST(FoldMatMulViews, HeadSplitAndKTransposeAreReadInPlace) {
  Attention a = attention_scores();
  a.g.set_outputs({a.scores});
  auto got = fold_matmul_views(a.g);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->nodes().size(), 1u) << graph_to_string(*got);
  const Node& mm = got->nodes()[0];
  EXPECT_EQ(mm.inputs, (std::vector<ValueId>{a.q, a.k}));
  ASSERT_TRUE(std::holds_alternative<MatMulAttrs>(mm.attrs));
  // K^T [1, h, d, j] reads k[0, j, h*3 + d] (an axis of extent 1: index 0).
  const MatMulAttrs::View& b = std::get<MatMulAttrs>(mm.attrs).b;
  EXPECT_EQ(b.shape, (std::vector<int64_t>{1, kHeads, kHead, kSeq}));
  EXPECT_EQ(b.map, (std::vector<std::vector<int64_t>>{{0, 0, 0, 0}, {0, 0, 0, 1}, {0, kHead, 1, 0}}));
  EXPECT_NE(graph_to_string(*got).find("b=view[1,2,3,5] from (0,0,0,0;0,0,0,1;0,3,1,0)"), std::string::npos)
      << graph_to_string(*got);
  const auto qd = test::random_floats(kSeq * kWidth, 31), kd = test::random_floats(kSeq * kWidth, 32);
  auto out = test::run_graph(*got, {{a.q, test::to_bytes(qd)}, {a.k, test::to_bytes(kd)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_TRUE(test::close(test::to_floats((*out)[0]), naive_scores(qd, kd)));
}

TEST(FoldMatMulViews, AViewWithAnotherReaderStays) {
  Attention a = attention_scores();
  a.g.set_outputs({a.scores, a.kt});  // K^T is also an output
  auto got = fold_matmul_views(a.g);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // Q's chain folds; K's transpose and reshape stay, read as they are.
  ASSERT_EQ(got->nodes().size(), 3u) << graph_to_string(*got);
  const Node& mm = got->nodes().back();
  EXPECT_EQ(mm.inputs, (std::vector<ValueId>{a.q, a.kt}));
  EXPECT_TRUE(std::get<MatMulAttrs>(mm.attrs).b.map.empty());
}

TEST(FoldMatMulViews, AReshapeThatMergesAxesStays) {
  Graph g;
  const DType f = DType::f32();
  ValueId x = g.add_input("x", {1, kHeads, kSeq, kHead}, f);
  ValueId w = g.add_constant("w", Constant::from_floats({kWidth, 4}, test::random_floats(kWidth * 4, 33)));
  ValueId t = g.add_op("t", OpKind::kTranspose, PermAttrs{{0, 2, 1, 3}}, {x}, {1, kSeq, kHeads, kHead}, f);
  ValueId m = g.add_op("merge", OpKind::kReshape, NoAttrs{}, {t}, {1, kSeq, kWidth}, f);
  ValueId y = g.add_op("proj", OpKind::kMatMul, NoAttrs{}, {m, w}, {1, kSeq, 4}, f);
  g.set_outputs({y});
  auto got = fold_matmul_views(g);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->nodes().size(), 3u) << graph_to_string(*got);
  EXPECT_TRUE(std::holds_alternative<NoAttrs>(got->nodes().back().attrs));
}

// One row per step by a shared matrix (an LSTM's input projection, [T, 1, K]
// by [K, N]): one [T, K] product read in place, then a Reshape back; the
// same numbers. [T, 2, K] (two rows a step) stays batched.
TEST(FoldMatMulViews, OneRowPerBatchElementBecomesOneMatrixProduct) {
  for (const int64_t rows : {1, 2}) {
    Graph g;
    const DType f = DType::f32();
    ValueId x = g.add_input("x", {7, rows, 5}, f);
    ValueId w = g.add_constant("w", Constant::from_floats({5, 6}, test::random_floats(30, 34)));
    ValueId y = g.add_op("proj", OpKind::kMatMul, NoAttrs{}, {x, w}, {7, rows, 6}, f);
    g.set_outputs({y});
    auto got = fold_matmul_views(g);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    if (rows == 2) {
      EXPECT_EQ(got->nodes().size(), 1u) << graph_to_string(*got);
      continue;
    }
    ASSERT_EQ(got->nodes().size(), 2u) << graph_to_string(*got);
    const Node& mm = got->nodes()[0];
    EXPECT_EQ(mm.inputs[0], x);
    EXPECT_EQ(got->value(mm.outputs[0]).shape, (std::vector<int64_t>{7, 6}));
    EXPECT_EQ(std::get<MatMulAttrs>(mm.attrs).a.shape, (std::vector<int64_t>{7, 5}));
    EXPECT_EQ(got->nodes()[1].kind, OpKind::kReshape);
    EXPECT_EQ(got->nodes()[1].outputs[0], y);
    const auto xd = test::random_floats(35, 35);
    auto want = test::run_graph(g, {{x, test::to_bytes(xd)}});
    auto out = test::run_graph(*got, {{x, test::to_bytes(xd)}});
    ASSERT_TRUE(want.is_ok() && out.is_ok());
    EXPECT_TRUE(test::close(test::to_floats((*out)[0]), test::to_floats((*want)[0])));
  }
}

}  // namespace
}  // namespace tessera::graph
