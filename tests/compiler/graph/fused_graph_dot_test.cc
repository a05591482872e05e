// The fused graph as Graphviz dot: what each box says, and (where Graphviz is
// installed) that dot renders it.
#include "compiler/graph/fused_graph_dot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

// x -> conv(w, b) -> relu -> add(x') -> y, named as an ONNX exporter names nodes.
Graph named_graph() {
  Graph g;
  ValueId x = g.add_input("x", {1, 4, 6, 6}, DType::f32());
  ValueId w = g.add_constant("conv1.weight", Constant::from_floats({4, 4, 1, 1}, test::random_floats(16, 1)));
  ValueId b = g.add_constant("conv1.bias", Constant::from_floats({4}, test::random_floats(4, 2)));
  ValueId c = g.add_op("/layer1/conv1/Conv", OpKind::kConv, ConvAttrs{}, {x, w, b}, {1, 4, 6, 6}, DType::f32());
  ValueId r = g.add_op("/layer1/relu/Relu", OpKind::kRelu, NoAttrs{}, {c}, {1, 4, 6, 6}, DType::f32());
  ValueId p = g.add_op("/pool/\"Max\"Pool", OpKind::kMaxPool, PoolAttrs{2, 2, 2, 2}, {r}, {1, 4, 3, 3}, DType::f32());
  g.set_outputs({p}, {"y"});
  return g;
}

TEST(FusedGraphDot, OneBoxPerGroupWithItsNodesWeightsAndShape) {
  const Graph g = named_graph();
  const std::vector<FusedGroup> groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 2u);
  const std::string dot = fused_graph_dot(g, groups);
  EXPECT_EQ(dot.rfind("digraph model {", 0), 0u) << dot;
  EXPECT_NE(dot.find("g0 [label=\"conv + relu\\n/layer1/conv1/Conv\\n/layer1/relu/Relu\\n"
                     "conv1.weight <4x4x1x1>\\nconv1.bias <4>\\n-> 1x4x6x6\"];"),
            std::string::npos)
      << dot;
  // A quote in a node name is escaped, so the file still parses.
  EXPECT_NE(dot.find("/pool/\\\"Max\\\"Pool"), std::string::npos) << dot;
  // Inputs and outputs are ellipses; edges carry the tensor's shape.
  EXPECT_NE(dot.find("in0 [shape=ellipse"), std::string::npos) << dot;
  EXPECT_NE(dot.find("in0 -> g0 [label=\"1x4x6x6\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("g0 -> g1 [label=\"1x4x6x6\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("g1 -> out0 [label=\"1x4x3x3\"];"), std::string::npos) << dot;
  // Weights are folded into their consumer's label, never boxes or edges of their own.
  EXPECT_EQ(dot.find("conv1.weight\\n"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("-> g0 [label=\"4x4x1x1\"]"), std::string::npos) << dot;
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_EQ(dot[dot.size() - 2], '}');
}

TEST(FusedGraphDot, GraphvizRendersIt) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "Graphviz (dot) is not installed: the content test above still runs";
  const Graph g = named_graph();
  const std::string path = ::testing::TempDir() + "tessera_fused_" + std::to_string(::getpid()) + ".dot";
  std::ofstream(path) << fused_graph_dot(g, fuse_ops(g));
  const int code = std::system(("dot -Tsvg " + path + " -o " + path + ".svg").c_str());
  EXPECT_EQ(code, 0);
  std::ifstream svg(path + ".svg");
  const std::string text((std::istreambuf_iterator<char>(svg)), {});
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("/layer1/conv1/Conv"), std::string::npos);
  std::remove(path.c_str());
  std::remove((path + ".svg").c_str());
}

}  // namespace
}  // namespace tessera::graph
