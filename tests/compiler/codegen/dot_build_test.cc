// The u8 x s8 dot product (CallOp::kDotU8S8) through the whole kernel path:
// ops::matmul_u8s8 under its gemm template and under random schedules,
// interpreted and built by LLVM for this machine, equal to the definition
// bit for bit; on a target with VNNI one vpdpbusd a vector, and on the same
// CPU with VNNI turned off (-avx512vnni,-avxvnni) none, with the same result.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "compiler/codegen/llvm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/layout.h"
#include "compiler/space/knob/templates.h"
#include "tests/compiler/codegen/int8_test_util.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/schedule/random_steps.h"

namespace tessera {
namespace {

using test::as_storage;
using test::as_words;
using test::count;
using test::host_without_vnni;

using test::Problem;
using test::random_problem;
using test::spec_of;

State template_fallback(const Problem& p, const Target& target) {
  return test::template_fallback_of(spec_of(p), target);
}

// Builds `state` for `target` and runs it on `p`'s operands.
Result<std::vector<int32_t>> run_built(const State& state, const Target& target, const Problem& p) {
  std::vector<int32_t> a = p.a, b = test::stored(state, 1, p.b), c(p.product.size(), -1);
  TESSERA_RETURN_IF_ERROR(test::run_built(state, target, {a.data(), b.data(), c.data()}));
  return c;
}

class DotU8S8 : public ::testing::TestWithParam<std::array<int64_t, 3>> {};

// Odd sizes too: a tail of columns, a reduction of three words.
TEST_P(DotU8S8, TheTemplatesProductEqualsTheDefinitionInterpretedAndBuilt) {
  const auto [m, n, k] = GetParam();
  const Problem p = random_problem(m, n, k, 11);
  std::vector<Target> targets = {host_target()};
  if (targets[0].is_x86()) targets.push_back(host_without_vnni());
  for (const Target& target : targets) {
    const State state = template_fallback(p, target);
    auto interpreted = test::run(state, {as_storage(p.a), as_storage(p.b)});
    ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
    EXPECT_EQ(as_words(*interpreted), p.product) << target.to_string();
    auto built = run_built(state, target, p);
    ASSERT_TRUE(built.is_ok()) << built.status().to_string();
    EXPECT_EQ(*built, p.product) << target.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DotU8S8,
                         ::testing::Values(std::array<int64_t, 3>{5, 48, 64}, std::array<int64_t, 3>{64, 64, 256},
                                           std::array<int64_t, 3>{7, 33, 12}, std::array<int64_t, 3>{1, 100, 40}));

// Built for Zen 4 (AVX512-VNNI) whatever this machine is: the micro-kernel's
// products are vpdpbusd on 512-bit registers; with VNNI turned off, none.
TEST(DotU8S8Assembly, AVnniTargetUsesVpdpbusdAndOthersDoNot) {
  const Problem p = random_problem(64, 64, 256, 3);
  auto vnni = parse_target("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4");
  auto plain = parse_target("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4 -mattr=-avx512vnni,-avxvnni");
  ASSERT_TRUE(vnni.is_ok() && plain.is_ok());
  auto with = lower(template_fallback(p, *vnni), "kernel");
  auto without = lower(template_fallback(p, *plain), "kernel");
  ASSERT_TRUE(with.is_ok() && without.is_ok());
  auto asm_with = emit_assembly({*with}, *vnni);
  auto asm_without = emit_assembly({*without}, *plain);
  ASSERT_TRUE(asm_with.is_ok()) << asm_with.status().to_string();
  ASSERT_TRUE(asm_without.is_ok()) << asm_without.status().to_string();
  EXPECT_GT(count(*asm_with, "vpdpbusd"), 0);
  EXPECT_NE(asm_with->find("zmm"), std::string::npos);
  EXPECT_EQ(count(*asm_without, "vpdpbusd"), 0);
}

std::string fallback_assembly(const Problem& p, const std::string& target_text) {
  return test::fallback_assembly_of(spec_of(p), target_text);
}

// A 256-bit target with AVX-VNNI (no AVX-512): the same instruction on ymm.
TEST(DotU8S8Assembly, AvxVnniTargetUsesItOn256BitRegisters) {
  const std::string text =
      fallback_assembly(random_problem(16, 32, 64, 5), "llvm -mtriple=x86_64-linux-gnu -mcpu=alderlake");
  EXPECT_GT(count(text, "vpdpbusd"), 0);
  EXPECT_EQ(text.find("zmm"), std::string::npos);
}

// 24 columns on Zen 4 (a MobileNet's 24-channel projection): vectors of 8
// lanes, each a 256-bit vpdpbusd (AVX512-VL), not the widened products of a
// CPU without the instruction (vpmaddwd).
TEST(DotU8S8Assembly, VectorsNarrowerThanTheWidestUseTheNarrowerInstruction) {
  const std::string text =
      fallback_assembly(random_problem(16, 24, 64, 7), "llvm -mtriple=x86_64-linux-gnu -mcpu=znver4");
  EXPECT_GT(count(text, "vpdpbusd"), 0);
  EXPECT_EQ(count(text, "vpmaddwd"), 0);
}

// Random configurations of the template (B packed by the micro-kernel's
// columns among them, padded where the columns do not divide N), built for
// this machine: equal to the definition bit for bit.
TEST(DotU8S8, RandomTemplateConfigurationsEqualTheDefinitionBuilt) {
  const KnobTemplate* tmpl = find_template("matmul_u8s8");
  ASSERT_NE(tmpl, nullptr);
  std::mt19937_64 rng(31);
  int packed = 0;
  for (const auto& [m, n, k] : {std::array<int64_t, 3>{13, 72, 96}, std::array<int64_t, 3>{32, 40, 40}}) {
    const Problem p = random_problem(m, n, k, static_cast<uint32_t>(m));
    std::shared_ptr<const ComputeDAG> dag = test::dag_of_spec(spec_of(p));
    KnobSpace space = tmpl->define(*dag, host_target()).value();
    for (int trial = 0; trial < 12; ++trial) {
      const KnobConfig config = space.config(rng() % space.size()).value();
      auto state = apply_template(*tmpl, dag, config, host_target());
      ASSERT_TRUE(state.is_ok()) << state.status().to_string();
      packed += packed_arguments(*state).empty() ? 0 : 1;
      auto built = run_built(*state, host_target(), p);
      ASSERT_TRUE(built.is_ok()) << built.status().to_string() << " " << config.to_string();
      ASSERT_EQ(*built, p.product) << spec_of(p) << " " << config.to_string();
    }
  }
  EXPECT_GT(packed, 0);
}

// Random valid schedules: native code equals the interpreter bit for bit.
TEST(DotU8S8, RandomSchedulesBuildWhatTheInterpreterComputes) {
  const Problem p = random_problem(7, 19, 36, 17);
  runtime::ThreadPool pool(2);
  for (int trial = 0; trial < 30; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(500 + trial * 7919));
    State state = gen.generate(test::dag_of_spec(spec_of(p)), 4 + trial % 10);
    auto want = test::run(state, {as_storage(p.a), as_storage(p.b)});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\nsteps: " << steps_to_json(state.steps());
    ASSERT_EQ(as_words(*want), p.product) << "trial " << trial << "\nsteps: " << steps_to_json(state.steps());
    auto got = test::run_native(state, {as_storage(p.a), as_storage(p.b)}, pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\nsteps: " << steps_to_json(state.steps());
    ASSERT_EQ(as_words(*got), p.product) << "trial " << trial << "\nsteps: " << steps_to_json(state.steps());
  }
}

}  // namespace
}  // namespace tessera
