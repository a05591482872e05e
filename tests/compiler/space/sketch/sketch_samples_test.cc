// The sketch space of every operator in compiler/ops and of fused subgraphs:
// 1,000 random programs each replay and lower; 50 of them, built for the
// host and run, match the reference interpreter on the default schedule; and
// mutations of random programs stay valid.
#include <gtest/gtest.h>

#include <map>

#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/ops.h"
#include "compiler/space/sketch/sketch_space.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

constexpr int kSamples = 1000;
constexpr int kBuilt = 50;
constexpr int kChains = 20, kChainLength = 5;  // 100 mutation attempts per DAG

// conv2d + bias + ReLU as one kernel.
std::shared_ptr<const ComputeDAG> conv_bias_relu_dag() {
  Tensor x = placeholder({1, 4, 7, 9}, DType::f32(), "X");
  Tensor w = placeholder({8, 4, 3, 3}, DType::f32(), "W");
  Tensor b = placeholder({8, 1, 1}, DType::f32(), "bias");
  Tensor conv = ops::conv2d_nchw(x, w, 1, 1).value();
  Tensor biased = ops::add(conv, b, "bias_add").value();
  Tensor out = ops::relu(biased).value();
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, w, b, out}).value());
}

// dense + bias + a GELU (erf form) tail, then a learned-slope swish gate
// (x * sigmoid(beta * x)), so the product reaches the output through two
// inlined paths.
std::shared_ptr<const ComputeDAG> dense_bias_gelu_dag() {
  Tensor x = placeholder({6, 28}, DType::f32(), "X");
  Tensor w = placeholder({40, 28}, DType::f32(), "W");
  Tensor b = placeholder({40}, DType::f32(), "bias");
  Tensor beta = placeholder({40}, DType::f32(), "beta");
  Tensor d = ops::dense(x, w, b).value();
  Tensor g = ops::gelu(d).value();
  Tensor gate = ops::sigmoid(ops::mul(d, beta, "scaled").value()).value();
  Tensor out = ops::mul(g, gate, "gated").value();
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, w, b, beta, out}).value());
}

// A squeeze-excite scale as a model fuses it: a 1 x 1 conv of the pooled
// channels, HardSigmoid, and the product with the feature map it scales
// (the conv's 1 x 1 result broadcast over 6 x 7).
std::shared_ptr<const ComputeDAG> squeeze_excite_dag() {
  Tensor pooled = placeholder({1, 4, 1, 1}, DType::f32(), "pooled");
  Tensor w = placeholder({8, 4, 1, 1}, DType::f32(), "W");
  Tensor b = placeholder({1, 8, 1, 1}, DType::f32(), "bias");
  Tensor map = placeholder({1, 8, 6, 7}, DType::f32(), "map");
  Tensor conv = ops::conv2d_nchw(pooled, w).value();
  Tensor scale = ops::clip(ops::add(conv, b, "bias_add").value(), 0.0, 1.0).value();
  Tensor out = ops::mul(map, scale, "scaled").value();
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({pooled, w, b, map, out}).value());
}

struct Case {
  std::string name;  // test name suffix
  std::string spec;  // an operator spec, or "" for a fused subgraph
  float lo = -1, hi = 1;
};

// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << " (" << (c.spec.empty() ? "subgraph" : c.spec) << ")";
}

std::vector<Case> cases() {
  std::vector<Case> c = {
      {"matmul", "matmul:M=30,N=70,K=18"},
      {"matmul_prime", "matmul:M=13,N=37,K=11"},
      {"batch_matmul", "batch_matmul:B=3,M=10,N=36,K=14"},
      {"dense", "dense:M=6,N=40,K=27,bias=1,relu=1"},
      {"dense_plain", "dense:M=5,N=48,K=20"},
      {"dense_gemv", "dense:M=1,N=40,K=160,bias=1,relu=1"},
      {"conv2d", "conv2d:N=1,C=4,H=7,W=9,K=8,R=3,S=3,pad=1"},
      {"conv2d_stride", "conv2d:N=2,C=3,H=9,W=9,K=8,R=3,S=3,stride=2,pad=1"},
      {"conv2d_nhwc", "conv2d_nhwc:N=1,C=4,H=7,W=7,K=16,R=3,S=3,pad=1"},
      {"depthwise", "depthwise_conv2d:N=1,C=4,H=9,W=9,R=3,S=3,pad=1"},
      {"depthwise_bias_relu", "depthwise_conv2d:N=1,C=6,H=9,W=10,R=3,S=3,stride=2,pad=1,bias=1,relu=1"},
      {"depthwise_nhwc_bias_relu", "depthwise_conv2d_nhwc:N=1,C=6,H=9,W=10,R=3,S=3,stride=2,pad=1,bias=1,relu=1"},
      {"depthwise_multiplier_grouped", "conv2d:N=1,C=4,H=9,W=9,K=8,R=3,S=3,pad=1,groups=4"},
      {"grouped_nhwc", "conv2d_nhwc:N=1,C=6,H=7,W=7,K=6,R=3,S=3,stride=2,pad=1,groups=3"},
      {"max_pool", "max_pool2d:N=1,C=6,H=11,W=11,R=3,S=3,stride=2,pad=1"},
      {"avg_pool", "avg_pool2d:N=1,C=6,H=10,W=10,R=3,S=3,pad=1"},
      {"global_avg_pool", "global_avg_pool2d:N=1,C=2,H=12,W=12"},
      {"softmax", "softmax:M=5,N=70"},
      {"layer_norm", "layer_norm:M=6,N=50"},
      {"softmax_one_row", "softmax:M=1,N=300"},  // rfactor on stages that may move
      {"layer_norm_two_rows", "layer_norm:M=2,N=256"},
      {"reduce_sum", "reduce_sum:M=3,N=300"},
      {"reduce_mean", "reduce_mean:M=20,N=33"},
      {"reduce_max", "reduce_max:M=2,N=130"},
      {"relu", "relu:M=7,N=45"},
      {"sigmoid", "sigmoid:M=7,N=45"},
      {"tanh", "tanh:M=7,N=45"},
      {"exp", "exp:M=7,N=45"},
      {"hardswish", "hardswish:M=7,N=45"},
      {"gelu", "gelu:M=7,N=45"},
      {"leaky_relu", "leaky_relu:M=7,N=45"},
      {"clip", "clip:M=7,N=45"},
      {"add", "add:M=7,N=45,broadcast=1"},
      {"sub", "sub:M=7,N=45"},
      {"mul", "mul:M=9,N=32,broadcast=1"},
      {"div", "div:M=7,N=45", 0.5f, 1.5f},
      {"maximum", "maximum:M=7,N=45"},
      {"minimum", "minimum:M=7,N=45,broadcast=1"},
      {"power", "power:M=7,N=45", 0.5f, 1.5f},
      {"conv_bias_relu", ""},
      {"dense_bias_gelu", ""},
      {"squeeze_excite", ""},
  };
  return c;
}

std::shared_ptr<const ComputeDAG> dag_of(const Case& c) {
  if (c.name == "conv_bias_relu") return conv_bias_relu_dag();
  if (c.name == "dense_bias_gelu") return dense_bias_gelu_dag();
  if (c.name == "squeeze_excite") return squeeze_excite_dag();
  return ops::parse_op_spec(c.spec).value().dag;
}

class SketchSamples : public ::testing::TestWithParam<Case> {};

TEST_P(SketchSamples, ThousandSamplesReplayAndLowerAndFiftyBuiltMatchTheReference) {
  const Case& c = GetParam();
  auto dag = dag_of(c);
  auto space = SketchSpace::make(dag, host_target());
  ASSERT_TRUE(space.is_ok()) << space.status().to_string();
  // As SketchSpace::sample draws, but without its retry, so that no
  // annotation failure hides.
  std::vector<SketchProgram> programs;
  SpaceRng rng(2024);
  for (int i = 0; i < kSamples; ++i) {
    const int sketch = static_cast<int>(rng.uniform(static_cast<int64_t>(space->sketches().size())));
    auto p = space->complete(sketch, SketchDecisions::unset(space->sketches()[sketch]), rng);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string() << "\n" << space->to_string();
    programs.push_back(std::move(p).value());
  }
  std::map<int, int> per_sketch;
  for (const SketchProgram& p : programs) {
    ++per_sketch[p.sketch];
    auto replayed = replay(dag, p.state.steps());
    ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string() << "\n" << steps_to_json(p.state.steps());
    auto lowered = lower(*replayed);
    ASSERT_TRUE(lowered.is_ok()) << lowered.status().to_string() << "\n" << steps_to_json(p.state.steps());
  }
  // Every sketch is reached.
  EXPECT_EQ(per_sketch.size(), space->sketches().size()) << space->to_string();

  const auto inputs = test::random_inputs(*dag, 11, c.lo, c.hi);
  auto want = test::run(State(dag), inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  runtime::ThreadPool pool(2);
  SpaceRng pick(7);
  for (int n = 0; n < kBuilt; ++n) {
    const SketchProgram& p = programs[pick.uniform(kSamples)];
    auto got = test::run_native(p.state, inputs, pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\n" << steps_to_json(p.state.steps());
    ASSERT_TRUE(test::all_close(*got, *want, 1e-4, 1e-4))
        << "sketch " << p.sketch << ": " << space->sketches()[p.sketch].description << "\n"
        << p.state.to_string() << steps_to_json(p.state.steps());
  }
}

// Mutations of random programs apply in >= 99% of attempts and never give
// an invalid program; some children, built and run, match the reference.
TEST_P(SketchSamples, MutationsApplyNinetyNinePercentAndStayValid) {
  const Case& c = GetParam();
  auto dag = dag_of(c);
  SketchSpace space = SketchSpace::make(dag, host_target()).value();
  const auto inputs = test::random_inputs(*dag, 5, c.lo, c.hi);
  auto want = test::run(State(dag), inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  runtime::ThreadPool pool(2);
  SpaceRng rng(123);
  int attempts = 0, applied = 0;
  std::string reasons;
  for (int chain = 0; chain < kChains; ++chain) {
    SketchProgram program = space.sample(rng).value();
    // A short evolution: each child is the next parent.
    for (int m = 0; m < kChainLength; ++m) {
      ++attempts;
      MutationResult r = space.mutate(program, rng);
      if (!r.applied()) {
        reasons += r.reason + "\n";
        continue;
      }
      ++applied;
      auto replayed = replay(dag, r.program->state.steps());
      ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string();
      ASSERT_TRUE(lower(*replayed).is_ok()) << steps_to_json(r.program->state.steps());
      program = std::move(*r.program);
    }
    if (chain % 7 != 0) continue;
    auto got = test::run_native(program.state, inputs, pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_TRUE(test::all_close(*got, *want, 1e-4, 1e-4)) << steps_to_json(program.state.steps());
  }
  EXPECT_GE(applied * 100, attempts * 99) << applied << " of " << attempts << " applied; not applicable:\n" << reasons;
  RecordProperty("mutations_applied", applied);
  RecordProperty("mutations_not_applicable", attempts - applied);
}

INSTANTIATE_TEST_SUITE_P(Ops, SketchSamples, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace tessera
