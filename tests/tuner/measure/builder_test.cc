#include "tuner/measure/builder.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "runtime/module.h"

namespace tessera::tuner {
namespace {

std::shared_ptr<const ComputeDAG> matmul_dag(int64_t m, int64_t n, int64_t k) {
  Tensor a = placeholder({m, k}, DType::f32(), "A");
  Tensor b = placeholder({k, n}, DType::f32(), "B");
  IterVar r = reduce_axis(k, "k");
  Tensor c = compute(
      {m, n},
      [&](const Vars& i) {
        return sum(read(a, {i[0], r->var}) * read(b, {r->var, i[1]}), {r});
      },
      "C");
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
}

std::vector<Step> tiled_steps(const std::shared_ptr<const ComputeDAG>& dag, int64_t ti, int64_t tj) {
  State s(dag);
  EXPECT_TRUE(s.tile(2, {0, 1}, {{ti}, {tj}}).is_ok());
  EXPECT_TRUE(s.vectorize(2, 3).is_ok());
  EXPECT_TRUE(s.parallel(2, 0).is_ok());
  return s.steps();
}

TEST(BuilderPool, BuildsLoadableLibrariesInInputOrder) {
  auto dag = matmul_dag(64, 64, 32);
  BuilderPool pool(host_target(), {.n_parallel = 2});
  std::vector<BuildInput> inputs;
  for (int64_t t : {4, 8, 16, 32}) inputs.push_back({dag, Candidate(tiled_steps(dag, t, 16))});
  auto results = pool.build(inputs);
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    ASSERT_EQ(r.error, BuildError::kOk) << r.message;
    auto mod = runtime::Module::load_from_bytes(r.library, "/tmp");
    ASSERT_TRUE(mod.is_ok()) << mod.status().to_string();
    EXPECT_TRUE(mod->get_kernel(r.symbol).is_ok());
  }
}

TEST(BuilderPool, StepsThatDoNotReplayAreInvalidSchedules) {
  auto dag = matmul_dag(16, 16, 16);
  Step bad = SplitStep{.stage = 2, .iter = 7, .factors = {4}, .nparts = 0};  // no loop 7
  auto results = BuilderPool(host_target(), {.n_parallel = 1}).build({{dag, Candidate({bad})}});
  EXPECT_EQ(results[0].error, BuildError::kInvalidSchedule);
  EXPECT_NE(results[0].message.find("split"), std::string::npos) << results[0].message;
  EXPECT_TRUE(results[0].library.empty());
}

TEST(BuilderPool, LoweringFailuresAreClassified) {
  auto dag = matmul_dag(8, 128, 8);
  State s(dag);
  ASSERT_TRUE(s.cache_write(2).is_ok());
  ASSERT_TRUE(s.compute_at(2, 3, 0).is_ok());
  ASSERT_TRUE(s.vectorize(2, 1).is_ok());  // 128 lanes once bounds are known
  auto results = BuilderPool(host_target(), {.n_parallel = 1}).build({{dag, Candidate(s.steps())}});
  EXPECT_EQ(results[0].error, BuildError::kLoweringError) << results[0].message;
}

TEST(BuilderPool, OverlongBuildsAreTimeouts) {
  auto dag = matmul_dag(16, 16, 16);
  auto results = BuilderPool(host_target(), {.n_parallel = 1, .timeout_s = 0}).build({{dag, Candidate()}});
  EXPECT_EQ(results[0].error, BuildError::kTimeout);
  EXPECT_TRUE(results[0].library.empty());
}

TEST(BuilderPool, CrossBuildsForAarch64WithoutACrossCompiler) {
  auto dag = matmul_dag(16, 16, 16);
  auto target = Target::parse("llvm -mtriple=aarch64-linux-gnu -mattr=+neon");
  ASSERT_TRUE(target.is_ok());
  auto results = BuilderPool(*target, {.n_parallel = 1}).build({{dag, Candidate(tiled_steps(dag, 4, 4))}});
  ASSERT_EQ(results[0].error, BuildError::kOk) << results[0].message;
  EXPECT_EQ(results[0].library.substr(1, 3), "ELF");
  EXPECT_EQ(static_cast<unsigned char>(results[0].library[18]), 183);  // e_machine = EM_AARCH64
}

}  // namespace
}  // namespace tessera::tuner
