// Control flow compiled and run on the device: an If on data runs the
// branch its condition names, a Loop whose trip count or condition comes
// from the data runs as many iterations as they say, bodies read outer
// values (two levels up too), and a loop too long to unroll keeps its scan
// output. Each model is imported from ONNX, compiled for this machine,
// written and read back as a package, and run by the graph executor.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/llvm_target.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/model/compile_model.h"
#include "runtime/graph_executor.h"
#include "tests/compiler/frontend/onnx_test_util.h"

namespace tessera::model {
namespace {

using frontend::test::attr;
using frontend::test::make_node;
using frontend::test::ModelBuilder;
using onnx::TensorProto;
using Bytes = std::string;

Bytes floats(const std::vector<float>& v) {
  return Bytes(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}
Bytes int64(int64_t v) {
  return Bytes(reinterpret_cast<const char*>(&v), 8);
}
Bytes boolean(bool v) {
  return Bytes(1, v ? '\1' : '\0');
}
std::vector<float> floats_of(const runtime::NDArray& a) {
  return std::vector<float>(a.data<float>(), a.data<float>() + a.numel());
}

onnx::GraphProto graph_of(const std::string& name, const std::vector<std::string>& inputs,
                          const std::vector<onnx::NodeProto>& nodes, const std::vector<std::string>& outputs) {
  onnx::GraphProto g;
  g.set_name(name);
  for (const auto& i : inputs) g.add_input()->set_name(i);
  for (const auto& n : nodes) *g.add_node() = n;
  for (const auto& o : outputs) g.add_output()->set_name(o);
  return g;
}

void set_graph(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

// A model compiled for this machine and loaded from its package bytes.
class Compiled {
 public:
  static Result<Compiled> of(const ModelBuilder& m, frontend::ImportOptions options = {}) {
    TESSERA_ASSIGN_OR_RETURN(graph::Graph g, frontend::import_onnx_bytes(m.bytes(), options));
    TESSERA_ASSIGN_OR_RETURN(ModelPlan plan, plan_model(g));
    TESSERA_ASSIGN_OR_RETURN(CompiledModel compiled, compile_model(plan, host_target(), {}));
    TESSERA_ASSIGN_OR_RETURN(std::string bytes, runtime::write_package_bytes(compiled.package));
    TESSERA_ASSIGN_OR_RETURN(runtime::PackageContents read, runtime::read_package_bytes(bytes));
    runtime::ExecutorOptions eo;
    eo.num_threads = 2;
    TESSERA_ASSIGN_OR_RETURN(auto exec, runtime::GraphExecutor::load(read, eo));
    return Compiled{std::move(read), std::move(exec)};
  }

  // Runs on `inputs` (raw bytes by name); every output as floats, by name.
  Result<std::map<std::string, std::vector<float>>> run(const std::map<std::string, Bytes>& inputs) {
    for (const runtime::TensorInfo& in : exec->input_info()) {
      TESSERA_ASSIGN_OR_RETURN(runtime::NDArray a, runtime::NDArray::create(in.shape, in.dtype));
      const Bytes& b = inputs.at(in.name);
      if (static_cast<int64_t>(b.size()) != a.nbytes())
        return Status(ErrorCode::kInvalidArgument, "size of " + in.name);
      std::memcpy(a.raw_data(), b.data(), b.size());
      TESSERA_RETURN_IF_ERROR(exec->set_input(in.name, a));
    }
    TESSERA_RETURN_IF_ERROR(exec->run());
    std::map<std::string, std::vector<float>> out;
    for (const std::string& name : exec->output_names()) {
      TESSERA_ASSIGN_OR_RETURN(runtime::NDArray y, exec->get_output(name));
      out[name] = y.dtype() == DType::f32() ? floats_of(y) : std::vector<float>{static_cast<float>(*y.data<int64_t>())};
    }
    return out;
  }

  size_t steps(runtime::CallKind kind) const {
    size_t n = 0;
    for (const auto& c : package.calls) n += c.kind == kind;
    return n;
  }

  runtime::PackageContents package;
  std::unique_ptr<runtime::GraphExecutor> exec;
};

// y = flag ? relu(x) + 1 : -x * 3, the constants of the main graph.
ModelBuilder gate() {
  ModelBuilder m(13);
  m.input("x", {4});
  m.input("flag", {}, TensorProto::BOOL);
  m.floats("one", {}, {1.0f});
  m.floats("three", {}, {3.0f});
  m.output("y", {4});
  set_graph(m.node("If", {"flag"}, {"y"}, "gate"), "then_branch",
            graph_of("relu_plus", {}, {make_node("Relu", {"x"}, "r"), make_node("Add", {"r", "one"}, "t")}, {"t"}));
  auto* node = m.model.mutable_graph()->mutable_node(0);
  set_graph(node, "else_branch",
            graph_of("neg_times", {}, {make_node("Neg", {"x"}, "n"), make_node("Mul", {"n", "three"}, "e")}, {"e"}));
  return m;
}

TEST(ControlFlow, AnIfOnDataRunsTheBranchItsConditionNames) {
  auto c = Compiled::of(gate());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->steps(runtime::CallKind::kJumpUnless), 1u);
  const std::vector<float> x = {-1.0f, 0.5f, 2.0f, -3.0f};
  for (bool flag : {true, false, true}) {
    auto out = c->run({{"x", floats(x)}, {"flag", boolean(flag)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<float> want;
    for (float v : x) want.push_back(flag ? std::max(v, 0.0f) + 1.0f : -v * 3.0f);
    EXPECT_EQ(out->at("y"), want) << flag;
  }
}

// for _ in range(steps): acc = acc * 2 + x, with x read from the main
// graph; the trip count an input, so the device runs the loop.
ModelBuilder doubling(bool nested_if) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.input("steps", {}, TensorProto::INT64);
  m.floats("two", {}, {2.0f});
  m.floats("zeros", {2}, {0.0f, 0.0f});
  m.int64s("two_i", {}, {2});
  m.int64s("zero_i", {}, {0});
  m.output("acc_out", {2});
  std::vector<onnx::NodeProto> nodes = {make_node("Mul", {"acc", "two"}, "doubled"),
                                        make_node("Identity", {"cond_in"}, "cond_out")};
  if (!nested_if) {
    nodes.push_back(make_node("Add", {"doubled", "x"}, "acc_next"));
  } else {
    // Even iterations add x, odd ones subtract it: an If on the iteration
    // inside the body, reading x two levels up.
    nodes.push_back(make_node("Mod", {"i", "two_i"}, "parity"));
    nodes.push_back(make_node("Equal", {"parity", "zero_i"}, "even"));
    onnx::NodeProto branch = make_node("If", {"even"}, "acc_next");
    set_graph(&branch, "then_branch", graph_of("add", {}, {make_node("Add", {"doubled", "x"}, "plus")}, {"plus"}));
    set_graph(&branch, "else_branch", graph_of("sub", {}, {make_node("Sub", {"doubled", "x"}, "minus")}, {"minus"}));
    nodes.push_back(branch);
  }
  set_graph(m.node("Loop", {"steps", "", "zeros"}, {"acc_out"}, "loop"), "body",
            graph_of("body", {"i", "cond_in", "acc"}, nodes, {"cond_out", "acc_next"}));
  return m;
}

TEST(ControlFlow, ALoopRunsAsManyIterationsAsItsTripCountInputSays) {
  for (bool nested_if : {false, true}) {
    auto c = Compiled::of(doubling(nested_if));
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    EXPECT_EQ(c->steps(runtime::CallKind::kJump), nested_if ? 2u : 1u);
    const std::vector<float> x = {1.0f, -0.5f};
    for (int64_t steps : {3, 0, 1, 6}) {
      auto out = c->run({{"x", floats(x)}, {"steps", int64(steps)}});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      std::vector<float> acc = {0.0f, 0.0f};
      for (int64_t i = 0; i < steps; ++i)
        for (size_t j = 0; j < 2; ++j) acc[j] = acc[j] * 2.0f + (nested_if && i % 2 ? -x[j] : x[j]);
      EXPECT_EQ(out->at("acc_out"), acc) << steps << (nested_if ? " nested" : "");
    }
  }
}

// while acc < limit: acc = acc * 2; n += 1, the condition an input and
// computed by the body, and no trip count.
ModelBuilder while_below() {
  ModelBuilder m(13);
  m.input("start", {1});
  m.input("limit", {1});
  m.floats("two", {}, {2.0f});
  m.int64s("zero", {}, {0});
  m.int64s("one", {}, {1});
  m.output("acc_out", {1});
  m.output("count", {}, TensorProto::INT64);
  m.node("Less", {"start", "limit"}, {"first"});
  set_graph(m.node("Loop", {"", "first", "start", "zero"}, {"acc_out", "count"}, "loop"), "body",
            graph_of("body", {"i", "cond_in", "acc", "n"},
                     {make_node("Mul", {"acc", "two"}, "acc_next"), make_node("Add", {"n", "one"}, "n_next"),
                      make_node("Less", {"acc_next", "limit"}, "cond_out")},
                     {"cond_out", "acc_next", "n_next"}));
  return m;
}

TEST(ControlFlow, AWhileLoopStopsWhenItsConditionTurnsFalse) {
  auto c = Compiled::of(while_below());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  for (auto [start, limit] : {std::pair{3.0f, 100.0f}, {200.0f, 100.0f}, {1.0f, 1024.0f}}) {
    auto out = c->run({{"start", floats({start})}, {"limit", floats({limit})}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    float acc = start;
    int n = 0;
    while (acc < limit) acc *= 2.0f, ++n;
    EXPECT_EQ(out->at("acc_out"), std::vector<float>{acc}) << start << " " << limit;
    EXPECT_EQ(out->at("count"), std::vector<float>{static_cast<float>(n)}) << start << " " << limit;
  }
}

// A loop of 5000 iterations (more than is unrolled) with a scan output:
// the device runs it and fills every slot.
TEST(ControlFlow, ALoopTooLongToUnrollKeepsItsScanOutput) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.int64s("steps", {}, {5000});
  m.floats("half", {}, {0.5f});
  m.floats("zeros", {2}, {0.0f, 0.0f});
  m.output("acc_out", {2});
  m.output("ys", {5000, 2});
  set_graph(m.node("Loop", {"steps", "", "zeros"}, {"acc_out", "ys"}, "loop"), "body",
            graph_of("body", {"i", "cond_in", "acc"},
                     {make_node("Mul", {"acc", "half"}, "halved"), make_node("Add", {"halved", "x"}, "acc_next"),
                      make_node("Identity", {"cond_in"}, "cond_out"), make_node("Identity", {"acc_next"}, "y")},
                     {"cond_out", "acc_next", "y"}));
  auto c = Compiled::of(m);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->steps(runtime::CallKind::kCopySlice), 1u);
  const std::vector<float> x = {1.0f, -4.0f};
  auto out = c->run({{"x", floats(x)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  std::vector<float> acc = {0.0f, 0.0f}, ys;
  for (int i = 0; i < 5000; ++i)
    for (size_t j = 0; j < 2; ++j) {
      acc[j] = acc[j] * 0.5f + x[j];
      ys.push_back(acc[j]);
    }
  EXPECT_EQ(out->at("acc_out"), acc);
  EXPECT_EQ(out->at("ys"), ys);
}

// The body reads row i of an outer input as torch writes x[i:i+1]:
// Slice(x, Unsqueeze(i), Unsqueeze(i + 1)), its start known only at run
// time, its length one row (test_loop11's body, its trip count an input).
TEST(ControlFlow, ALoopBodySlicesTheRowOfItsIteration) {
  ModelBuilder m(13);
  m.input("x", {5, 2});
  m.input("steps", {}, TensorProto::INT64);
  m.floats("zeros", {1, 2}, {0.0f, 0.0f});
  m.int64s("one", {}, {1});
  m.int64s("axis0", {1}, {0});
  m.output("acc_out", {1, 2});
  std::vector<onnx::NodeProto> nodes = {make_node("Add", {"i", "one"}, "end"),
                                        make_node("Unsqueeze", {"i", "axis0"}, "start1"),
                                        make_node("Unsqueeze", {"end", "axis0"}, "end1"),
                                        make_node("Slice", {"x", "start1", "end1"}, "row"),
                                        make_node("Add", {"acc", "row"}, "acc_next"),
                                        make_node("Identity", {"cond_in"}, "cond_out")};
  set_graph(m.node("Loop", {"steps", "", "zeros"}, {"acc_out"}, "loop"), "body",
            graph_of("body", {"i", "cond_in", "acc"}, nodes, {"cond_out", "acc_next"}));
  auto c = Compiled::of(m);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const std::vector<float> x = {1, 2, 10, 20, 100, 200, 1000, 2000, 5, 6};
  for (int64_t steps : {5, 2, 0}) {
    auto out = c->run({{"x", floats(x)}, {"steps", int64(steps)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<float> acc = {0, 0};
    for (int64_t i = 0; i < steps; ++i)
      for (size_t j = 0; j < 2; ++j) acc[j] += x[static_cast<size_t>(2 * i) + j];
    EXPECT_EQ(out->at("acc_out"), acc) << steps;
  }
}

TEST(ControlFlow, LoopsTheDeviceCannotRunAreRefusedSayingWhy) {
  // The condition stays true and there is no trip count.
  ModelBuilder forever(13);
  forever.input("x", {2});
  forever.input("go", {}, TensorProto::BOOL);
  forever.output("y", {2});
  set_graph(
      forever.node("Loop", {"", "go", "x"}, {"y"}, "loop"), "body",
      graph_of("body", {"i", "cond_in", "v"},
               {make_node("Identity", {"cond_in"}, "cond_out"), make_node("Neg", {"v"}, "w")}, {"cond_out", "w"}));
  auto f = frontend::import_onnx_bytes(forever.bytes());
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("would never stop"), std::string::npos) << f.status().message();
  // A carried value that changes shape between iterations.
  ModelBuilder growing(13);
  growing.input("x", {2});
  growing.input("steps", {}, TensorProto::INT64);
  growing.output("y", {2});
  set_graph(growing.node("Loop", {"steps", "", "x"}, {"y"}, "loop"), "body",
            graph_of("body", {"i", "cond_in", "v"},
                     {make_node("Identity", {"cond_in"}, "cond_out"), make_node("Concat", {"v", "v"}, "w")},
                     {"cond_out", "w"}));
  attr(growing.model.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_node(1), "axis",
       int64_t{0});
  auto g = frontend::import_onnx_bytes(growing.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("keeps its carried shapes"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace tessera::model
