#include "compiler/graph/graph.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tessera::graph {
namespace {

TEST(Graph, PrinterShowsInputsConstantsNodesAndOutputs) {
  Graph g;
  ValueId x = g.add_input("x", {1, 2}, DType::f32());
  ValueId c = g.add_constant("c", Constant::from_floats({2}, {1.0f, 2.0f}));
  ValueId y = g.add_op("add0", OpKind::kAdd, NoAttrs{}, {x, c}, {1, 2}, DType::f32());
  ValueId z = g.add_op("lrelu", OpKind::kLeakyRelu, ScalarAttrs{0.5}, {y}, {1, 2}, DType::f32());
  g.set_outputs({z});
  EXPECT_EQ(graph_to_string(g),
            "input %0:float32[1, 2] \"x\"\n"
            "const %1:float32[2] \"c\"\n"
            "%2:float32[1, 2] = add \"add0\" (%0, %1)\n"
            "%3:float32[1, 2] = leaky_relu \"lrelu\" (%2) {value=0.5}\n"
            "output %3\n");
  EXPECT_TRUE(g.validate().is_ok());
}

TEST(Graph, ValidateRejectsANodeReadingALaterValue) {
  Graph g;
  ValueId x = g.add_input("x", {4}, DType::f32());
  ValueId later = g.add_value("later", {4}, DType::f32());
  g.add_node(Node{"first", OpKind::kRelu, NoAttrs{}, {later}, {g.add_value("y", {4}, DType::f32())}});
  g.add_node(Node{"second", OpKind::kRelu, NoAttrs{}, {x}, {later}});
  Status st = g.validate();
  EXPECT_EQ(st.code(), ErrorCode::kInternal);
  EXPECT_NE(st.message().find("first"), std::string::npos);
}

TEST(Graph, NodePatternsDriveFusion) {
  Graph g;
  ValueId x = g.add_input("x", {1, 4}, DType::f32());
  ValueId b = g.add_constant("b", Constant::from_floats({4}, {0, 0, 0, 0}));
  ValueId y = g.add_op("add", OpKind::kAdd, NoAttrs{}, {x, b}, {1, 4}, DType::f32());
  ValueId z = g.add_op("add2", OpKind::kAdd, NoAttrs{}, {x, y}, {1, 4}, DType::f32());
  EXPECT_EQ(node_pattern(g, g.nodes()[0]), OpPattern::kBroadcast);
  EXPECT_EQ(node_pattern(g, g.nodes()[1]), OpPattern::kElementwise);
  (void)z;
}

// Each kind's facts are its row of TESSERA_GRAPH_OPS: a name of its own, the
// rule node_pattern follows, and whether constants fold through it.
TEST(OpTraits, EveryKindHasItsOwnRow) {
  std::set<std::string> names;
  for (int k = 0; k <= static_cast<int>(OpKind::kLoop); ++k) {
    const OpTraits& t = op_traits(static_cast<OpKind>(k));
    ASSERT_NE(t.name, nullptr);
    EXPECT_TRUE(names.insert(t.name).second) << t.name << " twice";
  }
  EXPECT_STREQ(op_kind_name(OpKind::kBatchNorm), "batch_norm");
  EXPECT_EQ(op_traits(OpKind::kConv).fusion, FusionRule::kComplex);
  EXPECT_FALSE(op_traits(OpKind::kConv).foldable);
  EXPECT_EQ(op_traits(OpKind::kAdd).fusion, FusionRule::kByShapes);
  EXPECT_TRUE(op_traits(OpKind::kAdd).foldable);
  EXPECT_EQ(op_traits(OpKind::kReshape).fusion, FusionRule::kInjective);
  EXPECT_EQ(op_traits(OpKind::kSoftmax).fusion, FusionRule::kReduction);
  EXPECT_EQ(op_traits(OpKind::kEinsum).fusion, FusionRule::kByLetters);
  EXPECT_EQ(op_traits(OpKind::kCast).fusion, FusionRule::kElementwise);
}

TEST(Constant, RoundTripsDoublesThroughEachType) {
  Constant i = Constant::from_doubles(DType::i64(), {3}, {-2, 0, 7});
  EXPECT_EQ(i.to_doubles(), (std::vector<double>{-2, 0, 7}));
  Constant f = Constant::from_floats({2}, {1.5f, -0.25f});
  EXPECT_EQ(f.at(1), -0.25);
  EXPECT_EQ(f.bytes.size(), 8u);
}

}  // namespace
}  // namespace tessera::graph
