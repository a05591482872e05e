// The pass runner behind lower(): one dump per pass in order, stopping after
// a named pass, a clear error for an unknown one, and the verifier naming the
// pass that broke the IR.
#include "compiler/lower/pass_runner.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/lower/lower.h"
#include "tests/compiler/lower/lower_test_util.h"

namespace tessera {
namespace {

// A tiled matmul with a non-dividing split, an attached cache stage, a
// vectorized and an unrolled loop: every pass has something to do.
State busy_matmul() {
  State s(test::matmul_dag(12, 16, 8));
  int C = s.stage_index("C");
  EXPECT_TRUE(s.cache_write(C).is_ok());
  const int CL = s.stage_index("C.local");
  C = s.stage_index("C");
  EXPECT_TRUE(s.tile(C, {0, 1}, {{5}, {8}}).is_ok());
  EXPECT_TRUE(s.compute_at(CL, C, 1).is_ok());
  EXPECT_TRUE(s.vectorize(C, 3).is_ok());
  EXPECT_TRUE(s.unroll(CL, 0).is_ok());
  return s;
}

TEST(PassRunner, TraceHasOneDumpPerPassInOrder) {
  const State s = busy_matmul();
  std::vector<PassDump> trace;
  auto f = lower(s, "mm", LowerOptions{.trace = &trace});
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const std::vector<std::string> names = lowering_pass_names();
  ASSERT_EQ(trace.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(trace[i].pass, names[i]);
  EXPECT_EQ(trace.back().text, to_string(*f));
  // Schedule-level passes dump the plan; the first IR pass dumps a kernel.
  EXPECT_NE(trace[0].text.find("stage C.local: at C."), std::string::npos) << trace[0].text;
  EXPECT_EQ(trace[4].pass, "build_loop_nests");
  EXPECT_EQ(trace[4].text.rfind("func mm(", 0), 0u) << trace[4].text;
}

TEST(PassRunner, StopAfterReturnsWhatThatPassProduced) {
  const State s = busy_matmul();
  std::vector<PassDump> trace;
  ASSERT_TRUE(lower(s, "mm", LowerOptions{.trace = &trace}).is_ok());
  for (size_t i = 0; i < trace.size(); ++i) {
    std::vector<PassDump> partial;
    auto f = lower(s, "mm", LowerOptions{.stop_after = trace[i].pass, .trace = &partial});
    ASSERT_TRUE(f.is_ok()) << trace[i].pass << ": " << f.status().to_string();
    ASSERT_EQ(partial.size(), i + 1) << trace[i].pass;
    EXPECT_EQ(partial.back().text, trace[i].text) << trace[i].pass;
    if (f->body.defined()) {
      EXPECT_EQ(to_string(*f), trace[i].text) << trace[i].pass;
    } else {
      EXPECT_LT(i, 4u) << trace[i].pass << " left no kernel";
    }
  }
}

TEST(PassRunner, UnknownStopAfterNamesThePasses) {
  auto f = lower(busy_matmul(), "mm", LowerOptions{.stop_after = "vectorise"});
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kInvalidArgument);
  for (const std::string& name : lowering_pass_names())
    EXPECT_NE(f.status().message().find(name), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find("'vectorise'"), std::string::npos) << f.status().message();
}

TEST(PassRunner, VerifierNamesThePassThatBrokeTheIr) {
  static const LoweringPass kBroken[] = {
      {"make_kernel", IrStage::kFlat,
       [](LoweringUnit& u) {
         Buffer out = make_buffer("Out", DType::f32(), {4});
         u.func.params = {out};
         u.func.body = make_store(out, 1.0f, Var("stray"));  // an index no loop binds
         return Status::ok();
       }},
  };
  const State s(test::chain_dag(4));
  EXPECT_TRUE(run_passes(kBroken, s, "k", LowerOptions{}).is_ok());  // only the verifier sees it
  auto f = run_passes(kBroken, s, "k", LowerOptions{.verify = true});
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kInternal);
  EXPECT_NE(f.status().message().find("after lowering pass make_kernel"), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find("variable stray is not bound"), std::string::npos) << f.status().message();
}

TEST(PassRunner, PassErrorsStopTheRun) {
  State s(test::matmul_dag(4, 128, 8));
  int C = s.stage_index("C");
  ASSERT_TRUE(s.cache_write(C).is_ok());
  const int CL = s.stage_index("C.local");
  C = s.stage_index("C");
  ASSERT_TRUE(s.compute_at(CL, C, 0).is_ok());  // region 1 x 128
  ASSERT_TRUE(s.vectorize(CL, 1).is_ok());      // 128 lanes
  std::vector<PassDump> trace;
  auto f = lower(s, "mm", LowerOptions{.verify = true, .trace = &trace});
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kLoweringError);
  ASSERT_EQ(trace.size(), 1u);  // inline_stages ran; infer_bounds failed
  EXPECT_EQ(trace[0].pass, "inline_stages");
}

}  // namespace
}  // namespace tessera
