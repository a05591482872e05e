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

// An M x K uint8 matrix (its bytes), a K x N int8 one packed four bytes of K
// to a word, and their product in int32.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  std::vector<uint8_t> a;
  std::vector<int32_t> b, product;
};

Problem random_problem(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  // The extremes appear often: 255 x -128 is the largest product.
  auto draw = [&](int lo, int hi) {
    const int r = byte(rng);
    return r < 40 ? lo : r < 80 ? hi : lo + byte(rng) % (hi - lo + 1);
  };
  Problem p{m,
            n,
            k,
            std::vector<uint8_t>(static_cast<size_t>(m * k)),
            std::vector<int32_t>(static_cast<size_t>(k / 4 * n)),
            std::vector<int32_t>(static_cast<size_t>(m * n))};
  std::vector<int8_t> b(static_cast<size_t>(k * n));
  for (auto& v : p.a) v = static_cast<uint8_t>(draw(0, 255));
  for (auto& v : b) v = static_cast<int8_t>(draw(-128, 127));
  for (int64_t q = 0; q < k / 4; ++q)
    for (int64_t j = 0; j < n; ++j) {
      uint8_t word[4];
      for (int r = 0; r < 4; ++r) word[r] = static_cast<uint8_t>(b[static_cast<size_t>((4 * q + r) * n + j)]);
      std::memcpy(&p.b[static_cast<size_t>(q * n + j)], word, 4);
    }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        s += int64_t{p.a[static_cast<size_t>(i * k + kk)]} * b[static_cast<size_t>(kk * n + j)];
      p.product[static_cast<size_t>(i * n + j)] = static_cast<int32_t>(s);
    }
  return p;
}

std::string spec_of(const Problem& p) {
  return "matmul_u8s8_pairs:M=" + std::to_string(p.m) + ",N=" + std::to_string(p.n) + ",K=" + std::to_string(p.k);
}

State template_fallback(const Problem& p, const Target& target) {
  return test::template_fallback_of(spec_of(p), target);
}

std::vector<std::vector<float>> inputs(const Problem& p) {
  return {bytes_storage(p.a), as_storage(p.b)};
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
    State state = gen.generate(test::dag_of_spec(spec_of(p)), 4 + trial % 10);
    auto want = test::run(state, inputs(p));
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\nsteps: " << steps_to_json(state.steps());
    ASSERT_EQ(as_words(*want), p.product) << "trial " << trial << "\nsteps: " << steps_to_json(state.steps());
    auto got = test::run_native(state, inputs(p), pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\nsteps: " << steps_to_json(state.steps());
    ASSERT_EQ(as_words(*got), p.product) << "trial " << trial << "\nsteps: " << steps_to_json(state.steps());
  }
}

std::string fallback_assembly(const Problem& p, const std::string& target_text) {
  return test::fallback_assembly_of(spec_of(p), target_text);
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
