#include "compiler/lower/lower.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/te/compute_dag.h"

namespace tessera {
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

TEST(Lower, DefaultMatmulIsThreeLoops) {
  State s(matmul_dag(4, 5, 6));
  auto f = lower(s, "mm");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  std::string text = to_string(*f);
  EXPECT_NE(text.find("for k in [0, 6)"), std::string::npos) << text;
}

TEST(Lower, TiledVectorizedMatmulWithCacheWrite) {
  auto dag = matmul_dag(64, 64, 64);
  State s(dag);
  int C = s.stage_index("C");
  ASSERT_TRUE(s.cache_write(C).is_ok());
  int CL = s.stage_index("C.local");
  C = s.stage_index("C");
  ASSERT_TRUE(s.tile(C, {0, 1}, {{8}, {16}}).is_ok()) << s.to_string();
  ASSERT_TRUE(s.compute_at(CL, C, 1).is_ok());
  ASSERT_TRUE(s.split(CL, 0, {8}).is_ok());
  ASSERT_TRUE(s.split(CL, 2, {16}).is_ok());
  // C.local: i.0 i.1 j.0 j.1 k -> i.0 j.0 k i.1 j.1
  ASSERT_TRUE(s.reorder(CL, {0, 2, 4, 1, 3}).is_ok());
  ASSERT_TRUE(s.vectorize(CL, 4).is_ok());
  ASSERT_TRUE(s.unroll(CL, 3).is_ok());
  ASSERT_TRUE(s.vectorize(C, 3).is_ok());
  ASSERT_TRUE(s.parallel(C, 0).is_ok());
  auto f = lower(s, "mm");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  std::string text = to_string(*f);
  EXPECT_NE(text.find("ramp("), std::string::npos) << text;
  std::cout << s.to_string() << text;
}

TEST(Lower, CheckLowersAgreesWithLower) {
  State fine(matmul_dag(16, 16, 8));
  EXPECT_TRUE(check_lowers(fine).is_ok());
  EXPECT_TRUE(lower(fine).is_ok());

  State bad(matmul_dag(64, 128, 8));
  int c = bad.stage_index("C");
  ASSERT_TRUE(bad.cache_write(c).is_ok());
  const int local = bad.stage_index("C.local");
  c = bad.stage_index("C");
  ASSERT_TRUE(bad.compute_at(local, c, 0).is_ok());  // region 1 x 128
  ASSERT_TRUE(bad.vectorize(local, 1).is_ok());      // 128 lanes: only lowering knows
  const Status checked = check_lowers(bad);
  const auto lowered = lower(bad);
  ASSERT_FALSE(checked.is_ok());
  ASSERT_FALSE(lowered.is_ok());
  EXPECT_EQ(checked.code(), lowered.status().code());
  EXPECT_EQ(checked.message(), lowered.status().message());
}

}  // namespace
}  // namespace tessera
