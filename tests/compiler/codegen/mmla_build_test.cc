// The int8 product in 2 x 2 tiles (ops::matmul_u8s8_pairs) through the whole
// kernel path: under its gemm_pairs template and under random schedules,
// interpreted and built for this machine, equal to the definition bit for
// bit; for AArch64 with +i8mm one USMMLA a tile and no other product, with
// +dotprod alone the dot products it has.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/compiler/codegen/int8_test_util.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/schedule/random_steps.h"

namespace tessera {
namespace {

using test::as_storage;
using test::as_words;
using test::bytes_storage;
using test::count;

using test::Problem;
using test::random_problem;

// The product of A's bytes in 2 x 2 tiles (matmul_u8s8_pairs).
std::string pairs_spec(const Problem& p) {
  return "matmul_u8s8_pairs:M=" + std::to_string(p.m) + ",N=" + std::to_string(p.n) + ",K=" + std::to_string(p.k);
}

State template_fallback(const Problem& p, const Target& target) {
  return test::template_fallback_of(pairs_spec(p), target);
}

std::vector<std::vector<float>> inputs(const Problem& p) {
  return {bytes_storage(p.a_bytes), as_storage(p.b)};
}

class MatmulPairs : public ::testing::TestWithParam<std::array<int64_t, 3>> {};

// Blocks that divide the product and blocks that do not.
TEST_P(MatmulPairs, TheTemplatesProductEqualsTheDefinitionInterpretedAndBuilt) {
  const auto [m, n, k] = GetParam();
  const Problem p = random_problem(m, n, k, 11);
  runtime::ThreadPool pool(2);
  const State state = template_fallback(p, host_target());
  auto interpreted = test::run(state, inputs(p));
  ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
  EXPECT_EQ(as_words(*interpreted), p.product);
  auto built = test::run_native(state, inputs(p), pool);
  ASSERT_TRUE(built.is_ok()) << built.status().to_string();
  EXPECT_EQ(as_words(*built), p.product);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulPairs,
                         ::testing::Values(std::array<int64_t, 3>{64, 64, 256}, std::array<int64_t, 3>{6, 34, 24},
                                           std::array<int64_t, 3>{2, 2, 8}, std::array<int64_t, 3>{130, 50, 72}));

// Random valid schedules: native code equals the interpreter bit for bit.
TEST(MatmulPairs, RandomSchedulesBuildWhatTheInterpreterComputes) {
  const Problem p = random_problem(6, 10, 24, 17);
  runtime::ThreadPool pool(2);
  for (int trial = 0; trial < 20; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(700 + trial * 7919));
    State state = gen.generate(test::dag_of_spec(pairs_spec(p)), 4 + trial % 10);
    auto want = test::run(state, inputs(p));
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\nsteps: " << steps_to_json(state.steps());
    ASSERT_EQ(as_words(*want), p.product) << "trial " << trial << "\nsteps: " << steps_to_json(state.steps());
    auto got = test::run_native(state, inputs(p), pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\nsteps: " << steps_to_json(state.steps());
    ASSERT_EQ(as_words(*got), p.product) << "trial " << trial << "\nsteps: " << steps_to_json(state.steps());
  }
}

std::string fallback_assembly(const Problem& p, const std::string& target_text) {
  return test::fallback_assembly_of(pairs_spec(p), target_text);
}

// +i8mm: every tile's product is one USMMLA (no dot products left); with
// +dotprod alone, SDOT; plain NEON neither.
TEST(MatmulPairsAssembly, AnI8mmTargetUsesUsmmlaATile) {
  const Problem p = random_problem(64, 64, 256, 3);
  const std::string i8mm = fallback_assembly(p, "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon,+i8mm");
  EXPECT_GE(count(i8mm, "usmmla"), 16);
  if (getenv("DUMP_ASM")) std::fprintf(stderr, "%s\n", i8mm.c_str());
  EXPECT_EQ(count(i8mm, "usdot"), 0);
  const std::string dotprod =
      fallback_assembly(p, "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon,+dotprod");
  EXPECT_EQ(count(dotprod, "mmla"), 0);
  EXPECT_GT(count(dotprod, "\tsdot"), 0);
  const std::string neon = fallback_assembly(p, "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon");
  EXPECT_EQ(count(neon, "mmla") + count(neon, "sdot"), 0);
}

}  // namespace
}  // namespace tessera
