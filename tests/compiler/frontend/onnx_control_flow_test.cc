// The importer's graph order and compile-time control flow: nodes in any
// order (sorted by what they read), a cycle named, an If whose condition is
// known at import replaced by its branch (nested ones too, reading outer
// values), an If on data as a node with its branches, and every
// unsupported operator inside subgraphs reported with its path.
#include <gtest/gtest.h>

#include <tuple>

#include "tests/compiler/frontend/onnx_run_util.h"

namespace tessera::frontend {
namespace {

using graph::test::to_bytes;
using graph::test::to_floats;
using onnx::TensorProto;
using test::attr;
using test::branch;
using test::make_node;
using test::ModelBuilder;
using test::run_model;
using test::set_branches;

// y = relu(x * 2) + 1, its nodes listed as `order` says.
ModelBuilder chain(const std::vector<int>& order) {
  ModelBuilder m(13);
  m.input("x", {4});
  m.floats("two", {}, {2.0f});
  m.floats("one", {}, {1.0f});
  m.output("y", {4});
  const std::vector<std::tuple<std::string, std::vector<std::string>, std::string>> nodes = {
      {"Mul", {"x", "two"}, "a"}, {"Relu", {"a"}, "b"}, {"Add", {"b", "one"}, "y"}};
  for (int i : order) m.node(std::get<0>(nodes[i]), std::get<1>(nodes[i]), {std::get<2>(nodes[i])});
  return m;
}

TEST(OnnxGraphOrder, NodesInAnyOrderImportAsTheSortedGraph) {
  const std::vector<float> x = {-1.0f, 0.5f, 2.0f, -3.0f}, want = {1.0f, 2.0f, 5.0f, 1.0f};
  for (const std::vector<int>& order : {std::vector<int>{0, 1, 2}, {2, 1, 0}, {1, 2, 0}}) {
    auto y = run_model(chain(order), {to_bytes(x)});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    EXPECT_EQ(to_floats(*y), want);
  }
  auto sorted = import_onnx_bytes(chain({0, 1, 2}).bytes());
  auto shuffled = import_onnx_bytes(chain({2, 0, 1}).bytes());
  ASSERT_TRUE(sorted.is_ok() && shuffled.is_ok());
  EXPECT_EQ(graph::graph_to_string(*sorted), graph::graph_to_string(*shuffled));
}

TEST(OnnxGraphOrder, ACycleIsRefusedNamingItsNodes) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.output("y", {2});
  m.node("Add", {"x", "c"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"}, "second");
  m.node("Neg", {"b"}, {"c"}, "third");
  m.node("Identity", {"a"}, {"y"}, "out");
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
  for (const char* name : {"'first' (Add)", "'second' (Relu)", "'third' (Neg)"})
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'out'"), std::string::npos) << msg;
}

// As torch.onnx.export writes `if x.dim() == 2:` on a static shape: Shape ->
// Size -> Equal -> Cast -> If, the branch taken known at import; inside it a
// second If on the row count. The outer values (x, the constants) are read
// from inside both levels.
ModelBuilder shape_checked(int64_t rows) {
  ModelBuilder m(13);
  m.input("x", {rows, 3});
  m.output("y", {rows, 3});
  m.int64s("two", {}, {2});
  m.int64s("four", {}, {4});
  m.floats("ten", {}, {10.0f});
  m.node("Shape", {"x"}, {"shape"});
  m.node("Size", {"shape"}, {"rank"});
  m.node("Equal", {"rank", "two"}, {"is_2d"});
  attr(m.node("Cast", {"is_2d"}, {"cond"}), "to", int64_t{TensorProto::BOOL});
  // Inner If, in the then branch: rows == 4 ? x + 10 : x * 10.
  onnx::NodeProto rows_of = make_node("Gather", {"shape", "zero"}, "rows");
  onnx::NodeProto zero;
  zero.set_op_type("Constant");
  zero.set_name("zero_node");
  zero.add_output("zero");
  auto* value = zero.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(TensorProto::INT64);
  value->mutable_t()->add_int64_data(0);
  onnx::NodeProto four_rows = make_node("Equal", {"rows", "four"}, "four_rows");
  onnx::NodeProto inner = make_node("If", {"four_rows"}, "inner_y");
  set_branches(&inner, branch("plus", {make_node("Add", {"x", "ten"}, "plus_y")}, "plus_y"),
               branch("times", {make_node("Mul", {"x", "ten"}, "times_y")}, "times_y"));
  // The then branch lists its nodes out of order too.
  onnx::GraphProto then_g = branch("two_d", {inner, four_rows, rows_of, zero}, "inner_y");
  onnx::GraphProto else_g = branch("other", {make_node("Neg", {"x"}, "neg_y")}, "neg_y");
  set_branches(m.node("If", {"cond"}, {"y"}, "rank_check"), then_g, else_g);
  return m;
}

TEST(OnnxIf, AConditionKnownAtImportBecomesItsBranchNestedOnesToo) {
  for (int64_t rows : {4, 2}) {
    ModelBuilder m = shape_checked(rows);
    auto g = import_onnx_bytes(m.bytes());
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    std::vector<float> x(static_cast<size_t>(rows * 3));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 3.0f;
    auto y = run_model(m, {to_bytes(x)});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    std::vector<float> want;
    for (float v : x) want.push_back(rows == 4 ? v + 10.0f : v * 10.0f);
    EXPECT_EQ(to_floats(*y), want) << rows << " rows";
    // What is left is the one operation of the branch taken.
    ASSERT_EQ(g->nodes().size(), 1u) << graph::graph_to_string(*g);
    EXPECT_EQ(g->nodes()[0].kind, rows == 4 ? graph::OpKind::kAdd : graph::OpKind::kMul);
  }
}

// An If on data: one kIf node whose branches are graphs of their own,
// reading the outer value as their input (control_flow_test.cc runs it);
// bound as a constant, the branch alone. Branches whose outputs disagree in
// shape are refused, saying which.
TEST(OnnxIf, AConditionOnDataBecomesAnIfNodeWithItsBranches) {
  ModelBuilder m(13);
  m.input("x", {3});
  m.input("flag", {}, TensorProto::BOOL);
  m.output("y", {3});
  set_branches(m.node("If", {"flag"}, {"y"}, "gate"), branch("a", {make_node("Relu", {"x"}, "ra")}, "ra"),
               branch("b", {make_node("Neg", {"x"}, "rb")}, "rb"));
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_EQ(g->nodes().size(), 1u);
  const graph::Node& gate = g->nodes()[0];
  EXPECT_EQ(gate.kind, graph::OpKind::kIf);
  EXPECT_EQ(gate.inputs, (std::vector<graph::ValueId>{g->inputs()[1], g->inputs()[0]}));
  const auto& bodies = std::get<graph::ControlAttrs>(gate.attrs).bodies;
  ASSERT_EQ(bodies.size(), 2u);
  for (size_t b = 0; b < 2; ++b) {
    EXPECT_EQ(bodies[b]->inputs().size(), 1u);
    ASSERT_EQ(bodies[b]->nodes().size(), 1u);
    EXPECT_EQ(bodies[b]->nodes()[0].kind, b == 0 ? graph::OpKind::kRelu : graph::OpKind::kUnary);
  }
  ImportOptions bound;
  bound.constant_inputs["flag"] = graph::Constant::from_doubles(DType::boolean(), {}, {0.0});
  auto h = import_onnx_bytes(m.bytes(), bound);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->nodes().size(), 1u);
  EXPECT_NE(h->nodes()[0].kind, graph::OpKind::kIf);

  ModelBuilder bad(13);
  bad.input("x", {4});
  bad.input("flag", {}, TensorProto::BOOL);
  bad.int64s("half", {1}, {2});
  bad.output("y", {4});
  set_branches(bad.node("If", {"flag"}, {"y"}, "gate"), branch("a", {make_node("Relu", {"x"}, "ra")}, "ra"),
               branch("b", {make_node("Slice", {"x", "half", "half"}, "rb")}, "rb"));
  auto e = import_onnx_bytes(bad.bytes());
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("needs both branches to agree"), std::string::npos) << e.status().message();
}

TEST(OnnxIf, EveryUnsupportedOperatorInsideSubgraphsIsListedWithItsPath) {
  ModelBuilder m(13);
  m.input("x", {1, 4, 8});
  m.input("flag", {}, TensorProto::BOOL);
  m.output("y", {1, 4, 8});
  onnx::NodeProto inner = make_node("If", {"flag"}, "inner_y");
  set_branches(&inner, branch("deep", {make_node("DFT", {"x"}, "dft_y")}, "gru_y"),
               branch("flat", {make_node("Relu", {"x"}, "relu_y")}, "relu_y"));
  set_branches(m.node("If", {"flag"}, {"y"}, "outer"),
               branch("then", {make_node("Bernoulli", {"x"}, "bernoulli_y")}, "lstm_y"),
               branch("else", {inner}, "inner_y"));
  m.node("RandomNormal", {}, {"z"}, "top_random");
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  const std::string& msg = g.status().message();
  EXPECT_NE(msg.find("3 problems"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'outer' (If) then_branch > node 'bernoulli_y_node' (Bernoulli): unsupported operator"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("node 'outer' (If) else_branch > node 'inner_y_node' (If) then_branch > node 'dft_y_node' "
                     "(DFT): unsupported operator"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("node 'top_random' (RandomNormal): unsupported operator"), std::string::npos) << msg;
}

// An If on a scalar input (a sample rate): bound with --input-value, the
// input is a constant and the If its branch; a value the input cannot hold,
// a non-scalar input or a name that is no input are refused, each saying why.
ModelBuilder sample_rate_model() {
  ModelBuilder m(13);
  m.input("x", {3});
  m.input("sr", {}, TensorProto::INT64);
  m.input("frame", {2}, TensorProto::INT64);
  m.output("y", {3});
  m.int64s("sixteen_k", {}, {16000});
  m.node("Equal", {"sr", "sixteen_k"}, {"is_16k"});
  set_branches(m.node("If", {"is_16k"}, {"y"}, "by_rate"), branch("wide", {make_node("Relu", {"x"}, "ra")}, "ra"),
               branch("narrow", {make_node("Neg", {"x"}, "rb")}, "rb"));
  return m;
}

TEST(OnnxIf, AScalarInputBoundToAValueChoosesTheBranch) {
  for (double rate : {16000.0, 8000.0}) {
    ImportOptions options;
    options.input_values["sr"] = rate;
    auto g = import_onnx_bytes(sample_rate_model().bytes(), options);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    ASSERT_EQ(g->nodes().size(), 1u) << graph::graph_to_string(*g);
    EXPECT_EQ(g->nodes()[0].kind, rate == 16000.0 ? graph::OpKind::kRelu : graph::OpKind::kUnary);  // Neg
    EXPECT_EQ(g->inputs().size(), 2u);  // x and frame: sr is a constant now
  }
  for (const auto& [name, value, why] :
       std::vector<std::tuple<std::string, double, std::string>>{{"sr", 16000.5, "is not an integer"},
                                                                 {"frame", 2.0, "is not a scalar"},
                                                                 {"rate", 1.0, "not a model input"}}) {
    ImportOptions options;
    options.input_values[name] = value;
    auto g = import_onnx_bytes(sample_rate_model().bytes(), options);
    ASSERT_FALSE(g.is_ok()) << name;
    EXPECT_NE(g.status().message().find(why), std::string::npos) << g.status().message();
  }
  auto specs = parse_input_values({"sr=16000", "gain=0.5"});
  ASSERT_TRUE(specs.is_ok());
  EXPECT_EQ(specs->at("sr"), 16000.0);
  EXPECT_EQ(specs->at("gain"), 0.5);
  for (const char* bad : {"sr", "=3", "sr=", "sr=fast", "sr=1e999"})
    EXPECT_FALSE(parse_input_values({bad}).is_ok()) << bad;
  EXPECT_FALSE(parse_input_values({"sr=1", "sr=2"}).is_ok());
}

// for i in range(steps): acc = acc * 2 + x; ys.append(acc + i), a Loop with
// its trip count an input bound by --input-value, unrolled; and one whose
// condition turns false after three iterations.
ModelBuilder doubling_loop(bool stop_early) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.input("steps", {}, TensorProto::INT64);
  m.output("acc_out", {2});
  m.output("ys", {stop_early ? 3 : 4, 2});
  m.floats("two", {}, {2.0f});
  m.int64s("three", {}, {3});
  m.floats("zero2", {2}, {0.0f, 0.0f});
  onnx::GraphProto body;
  body.set_name("body");
  for (const char* in : {"i", "cond_in", "acc"}) body.add_input()->set_name(in);
  *body.add_node() = make_node("Mul", {"acc", "two"}, "doubled");
  *body.add_node() = make_node("Add", {"doubled", "x"}, "acc_next");
  onnx::NodeProto to_float = make_node("Cast", {"i"}, "i_float");
  auto* to = to_float.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(TensorProto::FLOAT);
  *body.add_node() = to_float;
  *body.add_node() = make_node("Add", {"acc_next", "i_float"}, "y");
  *body.add_node() = make_node(
      stop_early ? "Less" : "Identity",
      stop_early ? std::vector<std::string>{"i_plus_1", "three"} : std::vector<std::string>{"cond_in"}, "cond_out");
  if (stop_early) {
    onnx::NodeProto one;
    one.set_op_type("Constant");
    one.set_name("one_node");
    one.add_output("one");
    auto* v = one.add_attribute();
    v->set_name("value");
    v->set_type(onnx::AttributeProto::TENSOR);
    v->mutable_t()->set_data_type(TensorProto::INT64);
    v->mutable_t()->add_int64_data(1);
    *body.add_node() = one;
    *body.add_node() = make_node("Add", {"i", "one"}, "i_plus_1");
  }
  for (const char* out : {"cond_out", "acc_next", "y"}) body.add_output()->set_name(out);
  onnx::NodeProto* loop = m.node("Loop", {"steps", "", "zero2"}, {"acc_out", "ys"}, "loop");
  auto* b = loop->add_attribute();
  b->set_name("body");
  b->set_type(onnx::AttributeProto::GRAPH);
  *b->mutable_g() = body;
  return m;
}

TEST(OnnxLoop, AKnownTripCountUnrollsAndAConditionTurningFalseStopsIt) {
  const std::vector<float> x = {1.0f, -0.5f};
  for (bool stop_early : {false, true}) {
    ImportOptions options;
    options.input_values["steps"] = 4;
    auto g = import_onnx_bytes(doubling_loop(stop_early).bytes(), options);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    auto opt = graph::optimize_graph(*g);
    ASSERT_TRUE(opt.is_ok());
    auto out = graph::test::run_graph(*opt, {{opt->inputs()[0], to_bytes(x)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<float> acc = {0.0f, 0.0f}, ys;
    const int iterations = stop_early ? 3 : 4;
    for (int i = 0; i < iterations; ++i)
      for (size_t j = 0; j < 2; ++j) {
        acc[j] = acc[j] * 2.0f + x[j];
        ys.push_back(acc[j] + static_cast<float>(i));
      }
    EXPECT_EQ(to_floats(out->at(0)), acc) << (stop_early ? "stopped early" : "four trips");
    EXPECT_EQ(to_floats(out->at(1)), ys);
  }
}

// A trip count known only at run time runs the loop on the device, but its
// scan output would have a length known only then: refused, saying what to
// bind. One too long to unroll runs on the device with its scan output.
TEST(OnnxLoop, ATripCountKnownOnlyAtRunTimeWithScanOutputsIsRefusedSayingWhatToBind) {
  auto g = import_onnx_bytes(doubling_loop(false).bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("known only at run time"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("--input-value"), std::string::npos) << g.status().message();
  ImportOptions long_loop;
  long_loop.input_values["steps"] = 5000;
  ModelBuilder m = doubling_loop(false);
  m.model.mutable_graph()
      ->mutable_output(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(5000);
  auto h = import_onnx_bytes(m.bytes(), long_loop);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  const graph::Node* loop = nullptr;
  for (const graph::Node& n : h->nodes())
    if (n.kind == graph::OpKind::kLoop) loop = &n;
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(std::get<graph::ControlAttrs>(loop->attrs).scan_slots, 5000);
  EXPECT_EQ(h->value(loop->outputs[1]).shape, (std::vector<int64_t>{5000, 2}));
}

// Scan of opset 8: a batch axis first, the sequence second, sequence_lens
// (empty here, or a constant as long as the sequences) as the first input;
// each batch element scanned on its own: a running sum, forward and reversed.
TEST(OnnxScan, OpsetEightScansEachBatchElementAlongItsSecondAxis) {
  for (int64_t direction : {0, 1}) {
    ModelBuilder m(8);
    m.input("init", {2, 2});
    m.input("x", {2, 3, 2});
    m.output("total", {2, 2});
    m.output("sums", {2, 3, 2});
    onnx::GraphProto body;
    body.set_name("scan_body");
    for (const char* in : {"sum_in", "next"}) body.add_input()->set_name(in);
    *body.add_node() = make_node("Add", {"sum_in", "next"}, "sum_out");
    *body.add_node() = make_node("Identity", {"sum_out"}, "scan_out");
    for (const char* out : {"sum_out", "scan_out"}) body.add_output()->set_name(out);
    onnx::NodeProto* scan = m.node("Scan", {"", "init", "x"}, {"total", "sums"}, "scan");
    attr(scan, "num_scan_inputs", int64_t{1});
    attr(scan, "directions", std::vector<int64_t>{direction});
    auto* b = scan->add_attribute();
    b->set_name("body");
    b->set_type(onnx::AttributeProto::GRAPH);
    *b->mutable_g() = body;
    const std::vector<float> init = {1, 2, 3, 4}, x = {1, 1, 2, 2, 3, 3, 10, 20, 30, 40, 50, 60};
    auto out = test::run_model_outputs(m, {to_bytes(init), to_bytes(x)});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<float> total, sums(12);
    for (int batch = 0; batch < 2; ++batch) {
      float acc[2] = {init[static_cast<size_t>(2 * batch)], init[static_cast<size_t>(2 * batch + 1)]};
      for (int t = 0; t < 3; ++t) {
        const int at = direction ? 2 - t : t;
        for (int j = 0; j < 2; ++j) {
          acc[j] += x[static_cast<size_t>(batch * 6 + at * 2 + j)];
          sums[static_cast<size_t>(batch * 6 + t * 2 + j)] = acc[j];
        }
      }
      total.insert(total.end(), acc, acc + 2);
    }
    EXPECT_EQ(to_floats(out->at(0)), total) << direction;
    EXPECT_EQ(to_floats(out->at(1)), sums) << direction;
  }
  // sequence_lens shorter than the sequences: refused, saying so.
  ModelBuilder m(8);
  m.input("init", {1, 2});
  m.input("x", {1, 3, 2});
  m.int64s("lens", {1}, {2});
  m.output("total", {1, 2});
  onnx::GraphProto body;
  for (const char* in : {"sum_in", "next"}) body.add_input()->set_name(in);
  *body.add_node() = make_node("Add", {"sum_in", "next"}, "sum_out");
  body.add_output()->set_name("sum_out");
  onnx::NodeProto* scan = m.node("Scan", {"lens", "init", "x"}, {"total"}, "scan");
  attr(scan, "num_scan_inputs", int64_t{1});
  auto* b = scan->add_attribute();
  b->set_name("body");
  b->set_type(onnx::AttributeProto::GRAPH);
  *b->mutable_g() = body;
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("sequences of several lengths are not supported"), std::string::npos)
      << g.status().message();
}

}  // namespace
}  // namespace tessera::frontend
