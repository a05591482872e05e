// The bfloat16 dot product (CallOp::kDotBf16 of words made by kPackBf16)
// through the whole kernel path: ops::matmul_bf16 under its gemm template
// and under random schedules, interpreted and built by LLVM for this
// machine, against the product computed here in double; on a target with
// AVX512-BF16 one vdpbf16ps a vector with its operands loaded as words, on
// the same CPU with the instruction turned off none, with the same result;
// on AArch64 with +bf16, BFDOT.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/half.h"
#include "compiler/codegen/interpreter.h"
#include "compiler/codegen/llvm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/layout.h"
#include "compiler/space/knob/templates.h"
#include "tests/compiler/codegen/int8_test_util.h"
#include "tests/compiler/schedule/random_steps.h"

namespace tessera {
namespace {

using test::count;

// A: M x K and B: K x N bfloat16 (B stored K/2 x N x 2, as matmul_bf16
// reads it), and their product in double.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  std::vector<uint16_t> a, b;
  std::vector<double> product;
};

Problem random_problem(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  Problem p{m,
            n,
            k,
            std::vector<uint16_t>(static_cast<size_t>(m * k)),
            std::vector<uint16_t>(static_cast<size_t>(k * n)),
            std::vector<double>(static_cast<size_t>(m * n), 0.0)};
  for (auto& v : p.a) v = float_to_bfloat16(real(rng));
  std::vector<uint16_t> b(static_cast<size_t>(k * n));
  for (auto& v : b) v = float_to_bfloat16(real(rng));
  for (int64_t q = 0; q < k / 2; ++q)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t r = 0; r < 2; ++r)
        p.b[static_cast<size_t>((q * n + j) * 2 + r)] = b[static_cast<size_t>((2 * q + r) * n + j)];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk)
        p.product[static_cast<size_t>(i * n + j)] +=
            static_cast<double>(bfloat16_to_float(p.a[static_cast<size_t>(i * k + kk)])) *
            bfloat16_to_float(b[static_cast<size_t>(kk * n + j)]);
  return p;
}

std::shared_ptr<const ComputeDAG> dag_of(const Problem& p) {
  auto inst = ops::parse_op_spec("matmul_bf16:M=" + std::to_string(p.m) + ",N=" + std::to_string(p.n) +
                                 ",K=" + std::to_string(p.k));
  EXPECT_TRUE(inst.is_ok()) << inst.status().to_string();
  return inst->dag;
}

State template_fallback(const Problem& p, const Target& target) {
  const KnobTemplate* t = find_template("matmul_bf16");
  EXPECT_NE(t, nullptr);
  auto state = apply_fallback(*t, dag_of(p), target);
  EXPECT_TRUE(state.is_ok()) << state.status().to_string();
  return std::move(state).value();
}

// Without AVX512-BF16 (nor AMX-BF16's tile products).
Target without_bf16(Target t) {
  t.features.push_back("-avx512bf16");
  t.features.push_back("-amx-bf16");
  t.amx_bf16 = false;
  return t;
}

// `state` run on `p`'s operands: interpreted, or built for `target` and called.
Result<std::vector<float>> run(const State& state, const Problem& p, const Target* target) {
  std::vector<uint16_t> a = test::stored(state, 0, p.a), b = test::stored(state, 1, p.b);
  std::vector<float> c(p.product.size(), std::nanf(""));
  if (!target) {
    TESSERA_ASSIGN_OR_RETURN(PrimFunc f, lower(state, "kernel"));
    TESSERA_RETURN_IF_ERROR(interpret(f, {a.data(), b.data(), c.data()}));
  } else {
    TESSERA_RETURN_IF_ERROR(test::run_built(state, *target, {a.data(), b.data(), c.data()}));
  }
  return c;
}

// Every element within K float32 roundings of the exact product, each at
// most 2^-24 of the sum of the magnitudes (4 a term: operands within 2).
void expect_product(const std::vector<float>& got, const Problem& p, const std::string& what) {
  ASSERT_EQ(got.size(), p.product.size());
  const double magnitudes = 4.0 * static_cast<double>(p.k);
  const double tolerance = static_cast<double>(p.k) * std::ldexp(1.0, -24) * magnitudes;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - p.product[i]) <= tolerance) && bad++ < 3)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << p.product[i];
  }
}

class DotBf16 : public ::testing::TestWithParam<std::array<int64_t, 3>> {};

// Odd sizes too: a tail of columns, a reduction of three pairs.
TEST_P(DotBf16, TheTemplatesProductIsTheDefinitionInterpretedAndBuilt) {
  const auto [m, n, k] = GetParam();
  const Problem p = random_problem(m, n, k, 11);
  std::vector<Target> targets = {host_target()};
  if (targets[0].is_x86()) targets.push_back(without_bf16(host_target()));
  for (const Target& target : targets) {
    const State state = template_fallback(p, target);
    auto interpreted = run(state, p, nullptr);
    ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
    expect_product(*interpreted, p, "interpreted for " + target.to_string());
    auto built = run(state, p, &target);
    ASSERT_TRUE(built.is_ok()) << built.status().to_string();
    expect_product(*built, p, "built for " + target.to_string());
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DotBf16,
                         ::testing::Values(std::array<int64_t, 3>{5, 48, 64}, std::array<int64_t, 3>{64, 64, 256},
                                           std::array<int64_t, 3>{7, 33, 6}, std::array<int64_t, 3>{1, 100, 40}));

// Built for Zen 4 (AVX512-BF16) whatever this machine is: the micro-kernel's
// products are vdpbf16ps on 512-bit registers, their operands loaded as
// words (no rounding or packing instructions in the kernel); without
// AVX512-BF16, none.
TEST(DotBf16Assembly, ABf16TargetUsesVdpbf16psOnWordsItLoads) {
  const Problem p = random_problem(64, 64, 256, 3);
  auto with_target = parse_target("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4");
  auto plain_target = parse_target("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4 -mattr=-avx512bf16");
  ASSERT_TRUE(with_target.is_ok() && plain_target.is_ok());
  auto with = lower(template_fallback(p, *with_target), "kernel");
  auto without = lower(template_fallback(p, *plain_target), "kernel");
  ASSERT_TRUE(with.is_ok() && without.is_ok());
  auto asm_with = emit_assembly({*with}, *with_target);
  auto asm_without = emit_assembly({*without}, *plain_target);
  ASSERT_TRUE(asm_with.is_ok()) << asm_with.status().to_string();
  ASSERT_TRUE(asm_without.is_ok()) << asm_without.status().to_string();
  EXPECT_GT(count(*asm_with, "vdpbf16ps"), 0);
  EXPECT_NE(asm_with->find("zmm"), std::string::npos);
  EXPECT_EQ(count(*asm_with, "vcvtneps2bf16"), 0) << "the operands are bfloat16 already";
  EXPECT_EQ(count(*asm_with, "vpsrld"), 0) << "no rounding by shifts";
  EXPECT_EQ(count(*asm_without, "vdpbf16ps"), 0);
}

// AArch64 with +bf16: BFDOT.
TEST(DotBf16Assembly, AnAarch64TargetWithBf16UsesBfdot) {
  const Problem p = random_problem(16, 32, 64, 5);
  auto target = parse_target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+bf16");
  ASSERT_TRUE(target.is_ok()) << target.status().to_string();
  auto f = lower(template_fallback(p, *target), "kernel");
  ASSERT_TRUE(f.is_ok());
  auto text = emit_assembly({*f}, *target);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_GT(count(*text, "bfdot"), 0);
}

// The NHWC convolution's template (conv2d_nhwc_bf16) on a Zen 4 target: its
// micro-kernel is vdpbf16ps too.
TEST(DotBf16Assembly, TheConvTemplateUsesVdpbf16ps) {
  const std::string text = test::fallback_assembly_of("conv2d_nhwc_bf16:N=1,C=64,H=14,W=14,K=64,R=3,S=3,pad=1",
                                                      "llvm -mtriple=x86_64-linux-gnu -mcpu=znver4");
  EXPECT_GT(count(text, "vdpbf16ps"), 0);
}

// On a target with AMX-BF16 the conv template runs whole tiles of channels
// on tiles: TDPBF16PS, no vdpbf16ps left; its blocks of 32 of the 64 output
// channels read the weights packed with each pair whole. Built where this
// machine has the unit, it computes what the interpreter does, within
// float32 roundings (the sums run in another order).
TEST(DotBf16Amx, TheConvTemplateRunsOnTiles) {
  const std::string spec = "conv2d_nhwc_bf16:N=1,C=64,H=6,W=14,K=64,R=3,S=3,pad=1";
  const std::string text = test::fallback_assembly_of(spec, "llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids");
  EXPECT_GT(count(text, "tdpbf16ps"), 0);
  EXPECT_EQ(count(text, "vdpbf16ps"), 0);
  if (!host_target().amx_bf16) return;
  auto inst = ops::parse_op_spec(spec);
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  const KnobTemplate* t = find_template("conv2d_nhwc_bf16");

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  std::vector<uint16_t> x(6 * 14 * 64), w(3 * 3 * 32 * 64 * 2);
  for (auto& v : x) v = float_to_bfloat16(real(rng));
  for (auto& v : w) v = float_to_bfloat16(real(rng));
  auto host = apply_fallback(*t, inst->dag, host_target());
  ASSERT_TRUE(host.is_ok()) << host.status().to_string();
  std::vector<uint16_t> xs = test::stored(*host, 0, x), ws = test::stored(*host, 1, w);
  std::vector<float> want(6 * 14 * 64, std::nanf("")), got(want.size(), std::nanf(""));
  auto lowered = lower(*host, "kernel");
  ASSERT_TRUE(lowered.is_ok()) << lowered.status().to_string();
  ASSERT_TRUE(interpret(*lowered, {xs.data(), ws.data(), want.data()}).is_ok());
  ASSERT_TRUE(test::run_built(*host, host_target(), {xs.data(), ws.data(), got.data()}).is_ok());
  const double terms = 3 * 3 * 64, tolerance = terms * std::ldexp(1.0, -24) * 4.0 * terms;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tolerance) << "element " << i;
}

// Random valid schedules: native code computes what the interpreter does.
TEST(DotBf16, RandomSchedulesBuildWhatTheInterpreterComputes) {
  const Problem p = random_problem(7, 19, 36, 17);
  const Target host = host_target();
  for (int trial = 0; trial < 30; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(500 + trial * 7919));
    State state = gen.generate(dag_of(p), 4 + trial % 10);
    const std::string steps = "trial " + std::to_string(trial) + "\nsteps: " + steps_to_json(state.steps());
    auto want = run(state, p, nullptr);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\n" << steps;
    expect_product(*want, p, "interpreted, " + steps);
    auto got = run(state, p, &host);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\n" << steps;
    expect_product(*got, p, "built, " + steps);
  }
}

}  // namespace
}  // namespace tessera
