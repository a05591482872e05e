#include "compiler/graph/graph.h"

#include <gtest/gtest.h>

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

TEST(Constant, RoundTripsDoublesThroughEachType) {
  Constant i = Constant::from_doubles(DType::i64(), {3}, {-2, 0, 7});
  EXPECT_EQ(i.to_doubles(), (std::vector<double>{-2, 0, 7}));
  Constant f = Constant::from_floats({2}, {1.5f, -0.25f});
  EXPECT_EQ(f.at(1), -0.25);
  EXPECT_EQ(f.bytes.size(), 8u);
}

}  // namespace
}  // namespace tessera::graph
