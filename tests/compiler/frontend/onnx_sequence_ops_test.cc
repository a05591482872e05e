// Sequences and optionals of a structure known at import
// (compiler/frontend/onnx_sequence_ops.cc): each operator against the
// values it must give (through the reference interpreter), sequences and
// optionals as a graph's inputs and outputs (their tensors, NAME[i]), a
// scripted list built in an unrolled Loop, and each refusal saying why.
#include <gtest/gtest.h>

#include "tests/compiler/frontend/onnx_run_util.h"

namespace tessera::frontend {
namespace {

using graph::test::to_bytes;
using graph::test::to_floats;
using onnx::TensorProto;
using test::attr;
using test::Bytes;
using test::graph_attr;
using test::make_node;
using test::ModelBuilder;
using test::run_model_outputs;
using test::values_of;

// A graph input or output of type sequence<tensor<float32>>.
void sequence_value(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  v->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      TensorProto::FLOAT);
}

// Imports with `options`, optimizes and runs on `inputs` (in graph order).
Result<std::vector<Bytes>> run_with(const ModelBuilder& m, const ImportOptions& options,
                                    const std::vector<Bytes>& inputs) {
  TESSERA_ASSIGN_OR_RETURN(graph::Graph g, import_onnx_bytes(m.bytes(), options));
  TESSERA_ASSIGN_OR_RETURN(graph::Graph opt, graph::optimize_graph(g));
  std::map<graph::ValueId, Bytes> feed;
  for (size_t i = 0; i < inputs.size(); ++i) feed[opt.inputs().at(i)] = inputs[i];
  return graph::test::run_graph(opt, feed);
}

std::string import_error(const ModelBuilder& m, const ImportOptions& options = {}) {
  auto g = import_onnx_bytes(m.bytes(), options);
  return g.is_ok() ? "imported" : g.status().message();
}

// The scripted list as torch writes it at opset 13 and later:
//   ys = []; for i in range(3): ys.append(x * i); y = torch.stack(ys)
// SequenceEmpty, a Loop that carries the sequence and appends with
// SequenceInsert, then ConcatFromSequence(axis 0, new_axis 1).
ModelBuilder scripted_list(int64_t trips) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.output("y", {trips, 2});
  m.int64s("trips", {}, {trips});
  m.raw<uint8_t>("true", {}, TensorProto::BOOL, {1});
  attr(m.node("SequenceEmpty", {}, {"empty"}), "dtype", int64_t{TensorProto::FLOAT});
  onnx::GraphProto body;
  body.set_name("body");
  auto* i = body.add_input();
  i->set_name("i");
  i->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::INT64);
  auto* c = body.add_input();
  c->set_name("cond");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::BOOL);
  sequence_value(body.add_input(), "ys_in");
  onnx::NodeProto cast = make_node("Cast", {"i"}, "fi");
  auto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(TensorProto::FLOAT);
  *body.add_node() = cast;
  *body.add_node() = make_node("Mul", {"x", "fi"}, "xi");
  *body.add_node() = make_node("SequenceInsert", {"ys_in", "xi"}, "ys_out");
  *body.add_node() = make_node("Identity", {"cond"}, "cond_out");
  body.add_output()->set_name("cond_out");
  sequence_value(body.add_output(), "ys_out");
  graph_attr(m.node("Loop", {"trips", "true", "empty"}, {"ys"}), "body", body);
  onnx::NodeProto* stack = m.node("ConcatFromSequence", {"ys"}, {"y"});
  attr(stack, "axis", int64_t{0});
  attr(stack, "new_axis", int64_t{1});
  return m;
}

TEST(OnnxSequence, AScriptedListAppendedInALoopAndStacked) {
  auto out = run_model_outputs(scripted_list(3), {to_bytes(std::vector<float>{1.5f, -2.0f})});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(to_floats(out->at(0)), (std::vector<float>{0.0f, 0.0f, 1.5f, -2.0f, 3.0f, -4.0f}));
}

// insert c at the front of [a, b], erase position 1 (a), then
// [c, b]: at(-1) = b, at(0) = c, length 2, concatenated [c, b].
TEST(OnnxSequence, ConstructInsertEraseAtLengthAndConcat) {
  ModelBuilder m(13);
  m.input("a", {2});
  m.input("b", {2});
  m.input("c", {2});
  m.int64s("front", {}, {0});
  m.int64s("one", {}, {1});
  m.int64s("last", {}, {-1});
  m.int64s("first", {}, {0});
  m.output("at_last", {2});
  m.output("at_first", {2});
  m.output("length", {}, TensorProto::INT64);
  m.output("joined", {4});
  m.node("SequenceConstruct", {"a", "b"}, {"ab"});
  m.node("SequenceInsert", {"ab", "c", "front"}, {"cab"});
  m.node("SequenceErase", {"cab", "one"}, {"cb"});
  m.node("SequenceAt", {"cb", "last"}, {"at_last"});
  m.node("SequenceAt", {"cb", "first"}, {"at_first"});
  m.node("SequenceLength", {"cb"}, {"length"});
  attr(m.node("ConcatFromSequence", {"cb"}, {"joined"}), "axis", int64_t{0});
  const std::vector<float> a = {1, 2}, b = {3, 4}, c = {5, 6};
  auto out = run_model_outputs(m, {to_bytes(a), to_bytes(b), to_bytes(c)});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(to_floats(out->at(0)), b);
  EXPECT_EQ(to_floats(out->at(1)), c);
  EXPECT_EQ(values_of<int64_t>(out->at(2)), std::vector<int64_t>{2});
  EXPECT_EQ(to_floats(out->at(3)), (std::vector<float>{5, 6, 3, 4}));
}

// SplitToSequence three ways, each stacked or joined back: no split (rows
// of one, keepdims 0 drops the axis), a scalar split (chunks of 2, the last
// of 1), a list of lengths.
TEST(OnnxSequence, SplitToSequenceByOnesByAChunkAndByLengths) {
  ModelBuilder m(13);
  m.input("x", {5, 2});
  m.int64s("two", {}, {2});
  m.int64s("lengths", {2}, {4, 1});
  m.output("rows", {2, 5});
  m.output("chunks", {5, 2});
  m.output("tail", {1, 2});
  onnx::NodeProto* ones = m.node("SplitToSequence", {"x"}, {"by_ones"});
  attr(ones, "keepdims", int64_t{0});
  onnx::NodeProto* rows = m.node("ConcatFromSequence", {"by_ones"}, {"rows"});
  attr(rows, "axis", int64_t{1});
  attr(rows, "new_axis", int64_t{1});
  m.node("SplitToSequence", {"x", "two"}, {"by_two"});
  attr(m.node("ConcatFromSequence", {"by_two"}, {"chunks"}), "axis", int64_t{0});
  m.node("SplitToSequence", {"x", "lengths"}, {"by_lengths"});
  m.int64s("second", {}, {1});
  m.node("SequenceAt", {"by_lengths", "second"}, {"tail"});
  std::vector<float> x(10);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  auto out = run_model_outputs(m, {to_bytes(x)});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(to_floats(out->at(0)), (std::vector<float>{0, 2, 4, 6, 8, 1, 3, 5, 7, 9}));  // transposed
  EXPECT_EQ(to_floats(out->at(1)), x);
  EXPECT_EQ(to_floats(out->at(2)), (std::vector<float>{8, 9}));
}

// A sequence input and output: the package takes and gives their tensors,
// x[0], x[1] and y[0], y[1], y[2]; the length comes from the shapes bound.
TEST(OnnxSequence, ASequenceInputAndOutputAreTheirTensors) {
  ModelBuilder m(13);
  sequence_value(m.model.mutable_graph()->add_input(), "x");
  m.input("extra", {3});
  sequence_value(m.model.mutable_graph()->add_output(), "y");
  m.node("SequenceInsert", {"x", "extra"}, {"y"});
  ImportOptions options;
  options.input_shapes = {{"x[0]", {2}}, {"x[1]", {1}}};
  auto g = import_onnx_bytes(m.bytes(), options);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_EQ(g->inputs().size(), 3u);
  EXPECT_EQ(g->value(g->inputs()[0]).name, "x[0]");
  EXPECT_EQ(g->value(g->inputs()[1]).name, "x[1]");
  EXPECT_EQ(g->value(g->inputs()[1]).shape, std::vector<int64_t>{1});
  ASSERT_EQ(g->outputs().size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(g->output_name(i), "y[" + std::to_string(i) + "]");
  EXPECT_EQ(g->outputs()[2], g->inputs()[2]);

  // An empty sequence: its length given, no tensors.
  options.input_shapes.clear();
  options.sequence_lengths["x"] = 0;
  auto e = import_onnx_bytes(m.bytes(), options);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(e->inputs().size(), 1u);
  EXPECT_EQ(e->outputs().size(), 1u);

  // Unbound, it is refused, saying how to bind it.
  const std::string msg = import_error(m);
  EXPECT_NE(msg.find("input 'x' is a sequence of float32: a package takes its elements as inputs x[0], x[1]"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("--input-shape 'x[0]:d0,d1,...'"), std::string::npos) << msg;
}

// Optional(x) holds a tensor, Optional(type) is empty; has-element says
// which, get-element gives the tensor and refuses the empty one.
TEST(OnnxOptional, PresentAndEmptyOptionals) {
  ModelBuilder m(15);
  m.input("x", {2});
  m.output("has", {}, TensorProto::BOOL);
  m.output("has_not", {}, TensorProto::BOOL);
  m.output("got", {2});
  m.node("Optional", {"x"}, {"opt"});
  onnx::NodeProto* empty = m.node("Optional", {}, {"none"});
  auto* type = empty->add_attribute();
  type->set_name("type");
  type->set_type(onnx::AttributeProto::TYPE_PROTO);
  type->mutable_tp()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  m.node("OptionalHasElement", {"opt"}, {"has"});
  m.node("OptionalHasElement", {"none"}, {"has_not"});
  m.node("OptionalGetElement", {"opt"}, {"got"});
  const std::vector<float> x = {7, -1};
  auto out = run_model_outputs(m, {to_bytes(x)});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(out->at(0)), std::vector<uint8_t>{1});
  EXPECT_EQ(values_of<uint8_t>(out->at(1)), std::vector<uint8_t>{0});
  EXPECT_EQ(to_floats(out->at(2)), x);

  m.output("bad", {2});
  m.node("OptionalGetElement", {"none"}, {"bad"}, "get_none");
  const std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'get_none' (OptionalGetElement): the optional 'none' is empty"), std::string::npos) << msg;
}

// An optional input given as absent is empty; present, it is its tensor.
TEST(OnnxOptional, AnOptionalInputPresentOrAbsent) {
  ModelBuilder m(15);
  auto* in = m.model.mutable_graph()->add_input();
  in->set_name("maybe");
  auto* t = in->mutable_type()->mutable_optional_type()->mutable_elem_type()->mutable_tensor_type();
  t->set_elem_type(TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_value(3);
  m.output("has", {}, TensorProto::BOOL);
  m.node("OptionalHasElement", {"maybe"}, {"has"});
  ImportOptions absent;
  absent.absent_inputs.insert("maybe");
  auto none = run_with(m, absent, {});
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_EQ(import_onnx_bytes(m.bytes(), absent)->inputs().size(), 0u);
  EXPECT_EQ(values_of<uint8_t>(none->at(0)), std::vector<uint8_t>{0});
  auto g = import_onnx_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_EQ(g->inputs().size(), 1u);  // present: the package takes its tensor
  EXPECT_EQ(g->value(g->inputs()[0]).name, "maybe");
  EXPECT_EQ(g->value(g->inputs()[0]).shape, std::vector<int64_t>{3});
  ImportOptions wrong;
  wrong.absent_inputs.insert("has");
  EXPECT_NE(import_error(m, wrong).find("'has' is given as absent, but it is not an optional input"),
            std::string::npos);
}

TEST(OnnxSequence, StructuresThatDependOnDataAreRefusedSayingWhy) {
  {  // a position computed at run time
    ModelBuilder m(13);
    m.input("a", {2});
    m.input("p", {}, TensorProto::INT64);
    m.output("y", {2});
    m.node("SequenceConstruct", {"a", "a"}, {"s"});
    m.node("SequenceAt", {"s", "p"}, {"y"}, "pick");
    const std::string msg = import_error(m);
    EXPECT_NE(msg.find("node 'pick' (SequenceAt): the position 'p' is known only at run time"), std::string::npos)
        << msg;
  }
  {  // a position outside the sequence
    ModelBuilder m(13);
    m.input("a", {2});
    m.int64s("two", {}, {2});
    m.output("y", {2});
    m.node("SequenceConstruct", {"a", "a"}, {"s"});
    m.node("SequenceAt", {"s", "two"}, {"y"}, "pick");
    const std::string msg = import_error(m);
    EXPECT_NE(msg.find("position 2 is outside [-2, 1] for a sequence of 2"), std::string::npos) << msg;
  }
  {  // an empty sequence concatenated; a tensor where a sequence is read; types mixed
    ModelBuilder m(13);
    m.input("a", {2});
    m.input("n", {2}, TensorProto::INT64);
    m.output("y", {2});
    m.output("z", {2});
    m.output("w", {2});
    attr(m.node("SequenceEmpty", {}, {"e"}), "dtype", int64_t{TensorProto::FLOAT});
    attr(m.node("ConcatFromSequence", {"e"}, {"y"}, "join"), "axis", int64_t{0});
    attr(m.node("ConcatFromSequence", {"a"}, {"z"}, "join_tensor"), "axis", int64_t{0});
    m.node("SequenceConstruct", {"a", "n"}, {"w"}, "mixed");
    const std::string msg = import_error(m);
    EXPECT_NE(msg.find("node 'join' (ConcatFromSequence): it concatenates an empty sequence"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("node 'join_tensor' (ConcatFromSequence): input 'a' is a tensor, not a sequence"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("node 'mixed' (SequenceConstruct): a int64 tensor cannot join a sequence of float32"),
              std::string::npos)
        << msg;
  }
  {  // a sequence where a tensor is read
    ModelBuilder m(13);
    m.input("a", {2});
    m.output("y", {2});
    m.node("SequenceConstruct", {"a"}, {"s"});
    m.node("Relu", {"s"}, {"y"}, "relu");
    const std::string msg = import_error(m);
    EXPECT_NE(msg.find("node 'relu' (Relu): input 's' is a sequence of 1 float32, where a tensor is expected"),
              std::string::npos)
        << msg;
  }
}

// An If on data whose branches give sequences: of one length, one output
// per tensor, named y[i]; of different lengths, refused.
TEST(OnnxSequence, AnIfOnDataGivesASequenceOfOneLengthOnly) {
  auto model = [](bool same) {
    ModelBuilder m(13);
    m.input("a", {2});
    m.input("flag", {}, TensorProto::BOOL);
    sequence_value(m.model.mutable_graph()->add_output(), "y");
    onnx::GraphProto then_g = test::branch("two", {make_node("SequenceConstruct", {"a", "a"}, "s2")}, "s2");
    onnx::GraphProto else_g =
        same ? test::branch("neg", {make_node("Neg", {"a"}, "na"), make_node("SequenceConstruct", {"na", "a"}, "sn")},
                            "sn")
             : test::branch("one", {make_node("SequenceConstruct", {"a"}, "s1")}, "s1");
    test::set_branches(m.node("If", {"flag"}, {"y"}, "gate"), then_g, else_g);
    return m;
  };
  auto g = import_onnx_bytes(model(true).bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->nodes()[0].kind, graph::OpKind::kIf);
  EXPECT_EQ(g->nodes()[0].outputs.size(), 2u);
  ASSERT_EQ(g->outputs().size(), 2u);
  EXPECT_EQ(g->output_name(0), "y[0]");
  EXPECT_EQ(g->output_name(1), "y[1]");
  const std::string msg = import_error(model(false));
  EXPECT_NE(msg.find("output 0 is a sequence of 2 float32 in then_branch but a sequence of 1 float32 in else_branch"),
            std::string::npos)
      << msg;
}

// A Loop the device runs (its trip count an input) cannot carry a sequence.
TEST(OnnxSequence, ALoopOnTheDeviceCarryingASequenceIsRefused) {
  ModelBuilder m = scripted_list(3);
  auto& graph = *m.model.mutable_graph();
  graph.mutable_initializer()->erase(graph.mutable_initializer()->begin());  // "trips"
  m.input("trips", {}, TensorProto::INT64);
  const std::string msg = import_error(m);
  EXPECT_NE(msg.find("it carries 'empty', a sequence of 0 float32, and its trip count or condition is known only at "
                     "run time"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace tessera::frontend
