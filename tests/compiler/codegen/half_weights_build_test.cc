// Float32 products of float16 weights (--precision fp16: ops::matmul widens
// each weight as it reads it) through the whole kernel path: the gemm
// template's fallback and random schedules, interpreted and built by LLVM
// for this machine, against the product computed here in double; on x86 the
// weights widened by vcvtph2ps (F16C; AVX512-FP16's form where the target
// has it), without F16C by other means to the same result; on AArch64 by
// fcvtl.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/half.h"
#include "compiler/codegen/interpreter.h"
#include "tests/compiler/codegen/int8_test_util.h"
#include "tests/compiler/schedule/random_steps.h"

namespace tessera {
namespace {

using test::count;

// A: M x K float32, B: K x N float16, and their product in double.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  std::vector<float> a;
  std::vector<uint16_t> b;
  std::vector<double> product;
  std::string spec() const {
    return "matmul_f16w:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k);
  }
};

Problem random_problem(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  Problem p{m,
            n,
            k,
            std::vector<float>(static_cast<size_t>(m * k)),
            std::vector<uint16_t>(static_cast<size_t>(k * n)),
            std::vector<double>(static_cast<size_t>(m * n), 0.0)};
  for (auto& v : p.a) v = real(rng);
  for (auto& v : p.b) v = float_to_half(real(rng));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk)
        p.product[static_cast<size_t>(i * n + j)] += static_cast<double>(p.a[static_cast<size_t>(i * k + kk)]) *
                                                     half_to_float(p.b[static_cast<size_t>(kk * n + j)]);
  return p;
}

// `state` run on `p`'s operands: interpreted, or built for `target` and called.
Result<std::vector<float>> run(const State& state, const Problem& p, const Target* target) {
  std::vector<float> a = test::stored(state, 0, p.a);
  std::vector<uint16_t> b = test::stored(state, 1, p.b);
  std::vector<float> c(p.product.size(), std::nanf(""));
  if (!target) {
    TESSERA_ASSIGN_OR_RETURN(PrimFunc f, lower(state, "kernel"));
    TESSERA_RETURN_IF_ERROR(interpret(f, {a.data(), b.data(), c.data()}));
  } else {
    TESSERA_RETURN_IF_ERROR(test::run_built(state, *target, {a.data(), b.data(), c.data()}));
  }
  return c;
}

// Every element within K float32 roundings of the exact product (the
// weights are exact in float32), each at most 2^-24 of the sum of the
// magnitudes (4 a term: operands within 2).
void expect_product(const std::vector<float>& got, const Problem& p, const std::string& what) {
  ASSERT_EQ(got.size(), p.product.size());
  const double tolerance = static_cast<double>(p.k) * std::ldexp(1.0, -24) * 4.0 * static_cast<double>(p.k);
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - p.product[i]) <= tolerance) && bad++ < 3)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << p.product[i];
}

Target host_without_f16c() {
  Target t = host_target();
  for (const char* f : {"-f16c", "-avx512fp16"}) t.features.push_back(f);
  return t;
}

class HalfWeights : public ::testing::TestWithParam<std::array<int64_t, 3>> {};

// Odd sizes too: a tail of columns, a GEMV, a short reduction.
TEST_P(HalfWeights, TheTemplatesProductIsTheDefinitionInterpretedAndBuilt) {
  const auto [m, n, k] = GetParam();
  const Problem p = random_problem(m, n, k, 11);
  std::vector<Target> targets = {host_target()};
  if (targets[0].is_x86()) targets.push_back(host_without_f16c());
  for (const Target& target : targets) {
    const State state = test::template_fallback_of(p.spec(), target);
    auto interpreted = run(state, p, nullptr);
    ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
    expect_product(*interpreted, p, "interpreted for " + target.to_string());
    auto built = run(state, p, &target);
    ASSERT_TRUE(built.is_ok()) << built.status().to_string();
    expect_product(*built, p, "built for " + target.to_string());
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HalfWeights,
                         ::testing::Values(std::array<int64_t, 3>{5, 48, 64}, std::array<int64_t, 3>{64, 64, 256},
                                           std::array<int64_t, 3>{7, 33, 6}, std::array<int64_t, 3>{1, 1000, 96}));

// Random valid schedules: native code computes what the interpreter does.
TEST(HalfWeights, RandomSchedulesBuildWhatTheInterpreterComputes) {
  const Problem p = random_problem(7, 19, 36, 17);
  const Target host = host_target();
  for (int trial = 0; trial < 30; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(900 + trial * 7919));
    State state = gen.generate(test::dag_of_spec(p.spec()), 4 + trial % 10);
    const std::string steps = "trial " + std::to_string(trial) + "\nsteps: " + steps_to_json(state.steps());
    auto want = run(state, p, nullptr);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\n" << steps;
    expect_product(*want, p, "interpreted, " + steps);
    auto got = run(state, p, &host);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\n" << steps;
    expect_product(*got, p, "built, " + steps);
  }
}

// The weights widen in vector registers: vcvtph2ps with F16C (Zen 4, a
// 512-bit form), fcvtl on AArch64; none with F16C off.
TEST(HalfWeightsAssembly, TheWeightsWidenInVectorRegisters) {
  const std::string spec = "matmul_f16w:M=64,N=64,K=256";
  const std::string zen4 = test::fallback_assembly_of(spec, "llvm -mtriple=x86_64-linux-gnu -mcpu=znver4");
  EXPECT_GT(count(zen4, "vcvtph2ps"), 0);
  EXPECT_NE(zen4.find("zmm"), std::string::npos);
  const std::string plain =
      test::fallback_assembly_of(spec, "llvm -mtriple=x86_64-linux-gnu -mcpu=znver4 -mattr=-f16c,-avx512fp16");
  EXPECT_EQ(count(plain, "vcvtph2ps"), 0);
  const std::string arm = test::fallback_assembly_of(spec, "llvm -mtriple=aarch64-linux-gnu -mattr=+neon");
  EXPECT_GT(count(arm, "fcvtl"), 0);
}

}  // namespace
}  // namespace tessera
