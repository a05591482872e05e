// print → parse gives the same IR: over the loop nests that lowering makes
// from random schedules of every operator, and over hand-built trees with the
// corner cases of the text (names, constants, scopes).
#include <gtest/gtest.h>

#include <random>

#include "compiler/ir/op.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "tests/compiler/schedule/random_steps.h"
#include "tests/costmodel/random_schedules.h"

namespace tessera {
namespace {

// The function prints, parses back equal, and prints the same again.
::testing::AssertionResult round_trips(const PrimFunc& f) {
  const std::string text = to_string(f);
  Result<PrimFunc> parsed = parse_func(text);
  if (!parsed.is_ok()) return ::testing::AssertionFailure() << parsed.status().to_string() << "\n" << text;
  if (!structural_equal(f, *parsed)) return ::testing::AssertionFailure() << "parsed back different:\n" << text;
  if (to_string(*parsed) != text)
    return ::testing::AssertionFailure() << "prints differently:\n" << text << "then\n" << to_string(*parsed);
  if (structural_hash(f.body) == structural_hash(parsed->body) || f.params.empty())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionSuccess();
}

// A statement with free variables and buffers round-trips through a context.
::testing::AssertionResult round_trips(const Stmt& s) {
  IRPrinter printer;
  const std::string text = printer.print(s);
  ParseContext ctx;
  ctx.add_free_names(printer);
  Result<Stmt> parsed = parse_stmt(text, ctx);
  if (!parsed.is_ok()) return ::testing::AssertionFailure() << parsed.status().to_string() << "\n" << text;
  if (!structural_equal(s, *parsed)) return ::testing::AssertionFailure() << "parsed back different:\n" << text;
  if (structural_hash(s) != structural_hash(*parsed))
    return ::testing::AssertionFailure() << "equal but hashed differently:\n" << text;
  if (to_string(*parsed) != text)
    return ::testing::AssertionFailure() << "prints differently:\n" << text << "then\n" << to_string(*parsed);
  return ::testing::AssertionSuccess();
}

const char* const kSpecs[] = {
    "matmul:M=7,N=13,K=9",
    "dense:M=3,N=11,K=7,bias=1,relu=1",
    "batch_matmul:B=2,M=5,N=7,K=3",
    "conv2d:N=1,C=3,H=7,W=7,K=4,R=3,S=3,stride=2,pad=1",
    "conv2d_nhwc:N=1,C=3,H=6,W=5,K=5,R=3,S=3,pad=1",
    "depthwise_conv2d:N=1,C=3,H=7,W=7,R=3,S=3,multiplier=2,stride=2,pad=1",
    "max_pool2d:N=1,C=2,H=7,W=7,R=3,S=3,stride=2,pad=1",
    "avg_pool2d:N=1,C=2,H=7,W=6,R=3,S=2,stride=2,pad=1",
    "softmax:M=3,N=13",
    "layer_norm:M=3,N=13",
    "reduce_max:M=5,N=11",
    "add:M=5,N=7,broadcast=1",
    "div:M=5,N=7",
    "power:M=5,N=7",
    "sigmoid:M=5,N=7",
    "gelu:M=5,N=7",
    "clip:M=5,N=7",
};

class RoundTripLowered : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTripLowered, RandomSchedulesPrintAndParseBackEqual) {
  auto inst = ops::parse_op_spec(GetParam());
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  int lowered = 0;
  for (int trial = 0; trial < 40; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(1000 + trial));
    State state = gen.generate(inst->dag, 3 + trial % 12);
    Result<PrimFunc> f = lower(state, "kernel");
    if (!f.is_ok()) continue;
    ++lowered;
    ASSERT_TRUE(round_trips(*f)) << GetParam() << " trial " << trial << "\nsteps: " << steps_to_json(state.steps());
  }
  EXPECT_GT(lowered, 20) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Ops, RoundTripLowered, ::testing::ValuesIn(kSpecs), [](const auto& info) {
  std::string name = std::to_string(info.index) + "_" + info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

TEST(RoundTrip, TiledMatmulAndConvOfTheCostModelGenerator) {
  std::mt19937_64 rng(42);
  int lowered = 0;
  for (auto dag : {costmodel::testing::matmul_dag(64, 48, 32), costmodel::testing::conv_dag(8, 10, 16)}) {
    for (int trial = 0; trial < 15; ++trial) {
      Result<State> s = costmodel::testing::random_schedule(dag, rng);
      if (!s.is_ok()) continue;
      Result<PrimFunc> f = lower(*s, "kernel");
      if (!f.is_ok()) continue;
      ++lowered;
      ASSERT_TRUE(round_trips(*f)) << steps_to_json(s->steps());
      ASSERT_TRUE(round_trips(f->body));
    }
  }
  EXPECT_GT(lowered, 10);
}

}  // namespace
}  // namespace tessera
