#include "compiler/ops/op_spec.h"

#include <gtest/gtest.h>

#include <set>

#include "compiler/ops/linalg.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

// The spec of `info` with every required parameter set to a small size.
std::string small_spec(const ops::OpInfo& info) {
  std::string spec = info.name + ":";
  bool first = true;
  for (const ops::OpParam& p : info.params) {
    if (p.default_value) continue;
    int64_t v = (p.name == "R" || p.name == "S") ? 3 : (p.name == "H" || p.name == "W") ? 7 : 5;
    v = (v + p.multiple_of - 1) / p.multiple_of * p.multiple_of;
    spec += (first ? "" : ",") + p.name + "=" + std::to_string(v);
    first = false;
  }
  return spec;
}

TEST(OpSpec, EveryListedOperatorParsesLowersAndRuns) {
  std::set<std::string> names;
  for (const ops::OpInfo& info : ops::list_ops()) {
    names.insert(info.name);
    auto inst = ops::parse_op_spec(small_spec(info));
    ASSERT_TRUE(inst.is_ok()) << small_spec(info) << ": " << inst.status().to_string();
    EXPECT_EQ(inst->op, info.name);
    // Positive inputs keep power's results real.
    auto out = test::run(State(inst->dag), test::random_inputs(*inst->dag, 7, 0.5f, 2.0f));
    ASSERT_TRUE(out.is_ok()) << inst->spec << ": " << out.status().to_string();
    // The output starts as NaN; an integer result's bits may read as one.
    if (inst->dag->args().back()->dtype.is_float())
      for (float v : *out) ASSERT_FALSE(std::isnan(v)) << inst->spec << " left an element unwritten";
  }
  for (const char* required :
       {"matmul", "dense", "batch_matmul", "conv2d", "conv2d_nhwc", "depthwise_conv2d", "max_pool2d", "avg_pool2d",
        "global_avg_pool2d", "softmax", "layer_norm", "reduce_sum", "reduce_mean", "reduce_max", "add", "relu", "gelu"})
    EXPECT_TRUE(names.count(required)) << required;
}

TEST(OpSpec, CanonicalSpecListsEveryParameterInOrder) {
  auto inst = ops::parse_op_spec(" conv2d: pad=1, N=1,C=64,H=56,W=56,K=64,R=3,S=3 ");
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  EXPECT_EQ(inst->spec, "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,dilation=1,groups=1");
  auto again = ops::parse_op_spec(inst->spec);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->spec, inst->spec);
  EXPECT_EQ(again->dag->workload_key(), inst->dag->workload_key());
}

TEST(OpSpec, FlopsCountMultiplyAddsTwice) {
  auto mm = ops::parse_op_spec("matmul:M=1024,N=1024,K=1024");
  ASSERT_TRUE(mm.is_ok());
  EXPECT_DOUBLE_EQ(mm->flops, 2.0 * 1024 * 1024 * 1024);
  auto conv = ops::parse_op_spec("conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1");
  ASSERT_TRUE(conv.is_ok());
  EXPECT_DOUBLE_EQ(conv->flops, 2.0 * 64 * 56 * 56 * 64 * 9);
  auto grouped = ops::parse_op_spec("conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,groups=4");
  ASSERT_TRUE(grouped.is_ok());
  EXPECT_DOUBLE_EQ(grouped->flops, conv->flops / 4);
}

TEST(OpSpec, DenseArgumentsAreInputsThenOutput) {
  auto inst = ops::parse_op_spec("dense:M=1,N=1000,K=2048,bias=1,relu=1");
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  std::vector<std::string> names;
  for (const Tensor& t : inst->dag->args()) names.push_back(t->name);
  EXPECT_EQ(names, (std::vector<std::string>{"X", "W", "bias", "dense"}));
}

void expect_invalid(const std::string& spec, const std::string& mention) {
  auto inst = ops::parse_op_spec(spec);
  ASSERT_FALSE(inst.is_ok()) << spec;
  EXPECT_EQ(inst.status().code(), ErrorCode::kInvalidArgument) << spec;
  EXPECT_NE(inst.status().message().find(mention), std::string::npos)
      << spec << " -> " << inst.status().message() << " (should mention '" << mention << "')";
}

TEST(OpSpec, UnknownOperatorListsTheAcceptedOnes) {
  expect_invalid("convolution:N=1", "accepted: matmul");
}
TEST(OpSpec, UnknownParameterShowsTheUsage) {
  expect_invalid("matmul:M=1,N=2,K=3,Q=4", "usage: matmul:M=..,N=..,K=..");
}
TEST(OpSpec, MissingParametersAreNamed) {
  expect_invalid("matmul:M=1", "missing N, K");
}
TEST(OpSpec, ZeroIsNotASize) {
  expect_invalid("matmul:M=0,N=2,K=3", "M must be a positive integer");
}
TEST(OpSpec, NegativeIsNotASize) {
  expect_invalid("softmax:M=-4,N=2", "positive");
}
TEST(OpSpec, ValuesMustBeIntegers) {
  expect_invalid("matmul:M=1.5,N=2,K=3", "must be an integer");
}
TEST(OpSpec, RepeatedParameterIsRejected) {
  expect_invalid("matmul:M=1,M=2,N=2,K=3", "given twice");
}
TEST(OpSpec, PackedBytesComeInWholeWords) {
  expect_invalid("matmul_u8s8:M=2,N=2,K=6", "K must be a multiple of 4, got 6");
}
TEST(OpSpec, AnInt8ProductCountsItsMultiplyAddsTwice) {
  auto mm = ops::parse_op_spec("matmul_u8s8:M=64,N=32,K=128");
  ASSERT_TRUE(mm.is_ok()) << mm.status().to_string();
  EXPECT_DOUBLE_EQ(mm->flops, 2.0 * 64 * 32 * 128);
}
TEST(OpSpec, FlagsAreZeroOrOne) {
  expect_invalid("dense:M=1,N=2,K=3,relu=2", "0 or 1");
}
TEST(OpSpec, MalformedItemIsRejected) {
  expect_invalid("matmul:M=1,N,K=3", "expected key=value");
}
TEST(OpSpec, OperatorErrorsCarryTheSpec) {
  expect_invalid("conv2d:N=1,C=6,H=8,W=8,K=6,R=3,S=3,groups=4", "groups=4");
}
TEST(OpSpec, PaddingMayBeZeroButNotNegative) {
  EXPECT_TRUE(ops::parse_op_spec("max_pool2d:N=1,C=1,H=4,W=4,R=2,S=2,pad=0").is_ok());
  expect_invalid("max_pool2d:N=1,C=1,H=4,W=4,R=2,S=2,pad=-1", "non-negative");
}

TEST(OpSpec, UsageShowsDefaults) {
  for (const ops::OpInfo& info : ops::list_ops()) {
    if (info.name != "dense") continue;
    EXPECT_EQ(info.usage(), "dense:M=..,N=..,K=..[,bias=0,relu=0]");
  }
}

TEST(WorkloadKey, SameDagBuiltTwiceWithDifferentNamesHasOneKey) {
  auto build = [](const char* a_name, const char* b_name, const char* c_name) {
    Tensor a = placeholder({8, 4}, DType::f32(), a_name), b = placeholder({4, 6}, DType::f32(), b_name);
    return ComputeDAG::make({a, b, *ops::matmul(a, b, c_name)}).value();
  };
  EXPECT_EQ(build("A", "B", "C").workload_key(), build("lhs", "rhs", "product").workload_key());
  auto parsed = ops::parse_op_spec("matmul:M=8,N=6,K=4");
  ASSERT_TRUE(parsed.is_ok());
  EXPECT_EQ(parsed->dag->workload_key(), build("x", "y", "z").workload_key());
}

TEST(WorkloadKey, DifferentShapesOrOperatorsHaveDifferentKeys) {
  std::set<std::string> keys;
  for (const char* spec :
       {"matmul:M=8,N=6,K=4", "matmul:M=8,N=6,K=5", "matmul:M=6,N=8,K=4", "dense:M=8,N=6,K=4",
        "dense:M=8,N=6,K=4,relu=1", "batch_matmul:B=1,M=8,N=6,K=4", "conv2d:N=1,C=4,H=8,W=8,K=4,R=3,S=3",
        "conv2d:N=1,C=4,H=8,W=8,K=4,R=3,S=3,pad=1", "conv2d:N=1,C=4,H=8,W=8,K=4,R=3,S=3,groups=2", "add:M=8,N=6",
        "sub:M=8,N=6", "add:M=8,N=6,broadcast=1"}) {
    auto inst = ops::parse_op_spec(spec);
    ASSERT_TRUE(inst.is_ok()) << spec;
    EXPECT_TRUE(keys.insert(inst->dag->workload_key()).second) << spec << " shares a key";
  }
}

}  // namespace
}  // namespace tessera
