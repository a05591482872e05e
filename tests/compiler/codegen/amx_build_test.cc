// int8 products on x86's matrix unit: the gemm template tensorizes its
// micro-kernel where the target has AMX-INT8 and the product is whole tiles,
// the code generator runs the nest as TDPBUSD tile products, and what it
// builds equals the definition bit for bit (run where this machine has AMX;
// the assembly is checked on any machine). A tensorized loop the code
// generator cannot run is a clear error.
#include <gtest/gtest.h>

#include <random>

#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/schedule/layout.h"
#include "compiler/space/knob/templates.h"
#include "tests/compiler/codegen/int8_test_util.h"
#include "tests/compiler/codegen/run_native.h"

namespace tessera {
namespace {

using test::as_storage;
using test::as_words;
using test::count;
using test::Problem;
using test::random_problem;
using test::spec_of;

constexpr const char* kSapphireRapids = "llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids";

Target target_of(const std::string& text) {
  Result<Target> t = parse_target(text);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? *t : Target();
}

Result<std::vector<int32_t>> run_built(const State& state, const Problem& p) {
  std::vector<int32_t> a = p.a, b = test::stored(state, 1, p.b), c(p.product.size(), -1);
  TESSERA_RETURN_IF_ERROR(test::run_built(state, host_target(), {a.data(), b.data(), c.data()}));
  return c;
}

TEST(AmxSpace, WholeTilesOnAnAmxTargetTensorizeAndNothingElseDoes) {
  const KnobTemplate* tmpl = find_template("matmul_u8s8");
  ASSERT_NE(tmpl, nullptr);
  auto space_of = [&](const std::string& spec, const std::string& target) {
    return tmpl->define(*test::dag_of_spec(spec), target_of(target)).value();
  };
  EXPECT_NE(space_of("matmul_u8s8:M=64,N=48,K=256", kSapphireRapids).find("tensorize"), nullptr);
  // 100 rows: tiles of 10 rows; 49 rows would take tiles of 7, fewer than 8.
  EXPECT_NE(space_of("matmul_u8s8:M=100,N=48,K=256", kSapphireRapids).find("tensorize"), nullptr);
  EXPECT_EQ(space_of("matmul_u8s8:M=49,N=48,K=256", kSapphireRapids).find("tensorize"), nullptr);
  // A reduction of 36 bytes is not whole tiles of K; 19 columns are not whole tiles.
  EXPECT_EQ(space_of("matmul_u8s8:M=64,N=48,K=36", kSapphireRapids).find("tensorize"), nullptr);
  EXPECT_EQ(space_of("matmul_u8s8:M=64,N=19,K=256", kSapphireRapids).find("tensorize"), nullptr);
  EXPECT_EQ(
      space_of("matmul_u8s8:M=64,N=48,K=256", std::string(kSapphireRapids) + " -mattr=-amx-int8").find("tensorize"),
      nullptr);
  EXPECT_EQ(space_of("matmul_u8s8:M=64,N=48,K=256", "llvm -mtriple=x86_64-linux-gnu -mcpu=znver4").find("tensorize"),
            nullptr);
}

// The micro-kernel is tile loads, TDPBUSD and tile stores, the tiles
// configured once a call; no VNNI product is left. Without AMX-INT8 the same
// product is VNNI's.
TEST(AmxAssembly, AnAmxTargetRunsTheProductOnTiles) {
  const std::string spec = spec_of(random_problem(64, 64, 256, 3));
  const std::string amx = test::fallback_assembly_of(spec, kSapphireRapids);
  EXPECT_GE(count(amx, "tdpbusd"), 4);
  EXPECT_GE(count(amx, "tileloadd"), 4);
  EXPECT_GE(count(amx, "tilestored"), 4);
  EXPECT_EQ(count(amx, "ldtilecfg"), 1);  // once, where the task body starts
  // The accumulator's zeros and the whole of K in one nest: C's tiles start
  // at zero (no stores of zeros, no loads of C).
  EXPECT_EQ(count(amx, "tilezero"), 4);
  EXPECT_EQ(count(amx, "vpdpbusd"), 0);
  if (getenv("DUMP_ASM")) std::fprintf(stderr, "%s\n", amx.c_str());
  const std::string vnni = test::fallback_assembly_of(spec, std::string(kSapphireRapids) + " -mattr=-amx-tile");
  EXPECT_EQ(count(vnni, "tdpbusd"), 0);
  EXPECT_GT(count(vnni, "vpdpbusd"), 0);
}

// A bfloat16 product of bfloat16 operands: TDPBF16PS, no vdpbf16ps left.
TEST(AmxAssembly, AnAmxTargetRunsABfloat16ProductOnTiles) {
  const std::string spec = "matmul_bf16:M=64,N=64,K=256";
  const std::string amx = test::fallback_assembly_of(spec, kSapphireRapids);
  EXPECT_GE(count(amx, "tdpbf16ps"), 4);
  EXPECT_EQ(count(amx, "vdpbf16ps"), 0);
  const std::string avx = test::fallback_assembly_of(spec, std::string(kSapphireRapids) + " -mattr=-amx-bf16");
  EXPECT_EQ(count(avx, "tdpbf16ps"), 0);
  EXPECT_GT(count(avx, "vdpbf16ps"), 0);
}

// A schedule made for AMX, emitted for a CPU without it: refused, naming the
// loop and the target.
TEST(AmxAssembly, ATensorizedLoopOnATargetWithoutAmxIsAClearError) {
  const std::string spec = spec_of(random_problem(32, 32, 64, 5));
  auto f = lower(test::template_fallback_of(spec, target_of(kSapphireRapids)), "kernel");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto text = emit_assembly({*f}, target_of("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4"));
  ASSERT_FALSE(text.is_ok());
  EXPECT_NE(text.status().message().find("tensorized loop"), std::string::npos) << text.status().to_string();
  EXPECT_NE(text.status().message().find("no AMX int8 unit"), std::string::npos) << text.status().to_string();
}

// A tensorized loop that is not a tile product's nest (here the micro-kernel's
// column loop alone, one loop and not three) is refused with what is wrong.
TEST(AmxAssembly, ANestThatIsNotATileProductIsAClearError) {
  const Problem p = random_problem(32, 32, 64, 7);
  const Target amx = target_of(kSapphireRapids);
  State state = test::template_fallback_of(spec_of(p), amx);
  const int local = state.stage_index("matmul_u8s8.local");
  ASSERT_GE(local, 0);
  const std::vector<Iter>& iters = state.stage(local).iters;
  ASSERT_TRUE(state.annotate(local, static_cast<int>(iters.size()) - 3, IterAnnotation::kNone).is_ok());
  ASSERT_TRUE(state.annotate(local, static_cast<int>(iters.size()) - 1, IterAnnotation::kTensorize).is_ok());
  auto f = lower(state, "kernel");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto text = emit_assembly({*f}, amx);
  ASSERT_FALSE(text.is_ok());
  EXPECT_NE(text.status().message().find("needs rows, columns and a reduction"), std::string::npos)
      << text.status().to_string();
}

// 100 rows: tiles of 10 rows (tdpbusd as for 16), configured for the nest
// and the 16-row configuration restored after it.
TEST(AmxAssembly, RowsThatSixteenDoesNotDivideTakeSmallerTiles) {
  const std::string amx = test::fallback_assembly_of("matmul_u8s8:M=100,N=64,K=256", kSapphireRapids);
  EXPECT_GE(count(amx, "tdpbusd"), 4);
  EXPECT_EQ(count(amx, "ldtilecfg"), 3);  // the function's, the nest's, the function's again
}

// Two kernels on tiles, an object each, linked into one library (as a
// model's are): each says the module uses tiles, the link keeps one, and
// the library loads.
TEST(AmxAssembly, KernelsOnTilesLinkIntoOneLibrary) {
  const Target amx = target_of(kSapphireRapids);
  std::vector<PrimFunc> funcs;
  for (const char* name : {"first", "second"}) {
    auto f = lower(test::template_fallback_of(spec_of(random_problem(32, 32, 64, 9)), amx), name);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    funcs.push_back(*f);
  }
  auto lib = build(funcs, amx, BuildOptions{.jobs = 2});
  ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
  if (!host_target().amx_int8) return;
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  ASSERT_TRUE(mod.is_ok()) << mod.status().to_string();
  EXPECT_TRUE(mod->get_kernel("second").is_ok());
}

// Built and run on this machine where it has AMX-INT8: the fallback and
// random configurations of the template (orders, blocks, k blocks, B packed,
// read in place or copied by panels) equal the definition bit for bit, and
// the interpreter agrees.
TEST(Amx, TemplateConfigurationsEqualTheDefinitionBuilt) {
  if (!host_target().amx_int8) GTEST_SKIP() << "this machine has no AMX-INT8 (" << host_target().short_name() << ")";
  const KnobTemplate* tmpl = find_template("matmul_u8s8");
  ASSERT_NE(tmpl, nullptr);
  std::mt19937_64 rng(41);
  for (const auto& [m, n, k] : {std::array<int64_t, 3>{64, 64, 256}, std::array<int64_t, 3>{48, 96, 128},
                                std::array<int64_t, 3>{16, 16, 64}, std::array<int64_t, 3>{96, 32, 512},
                                std::array<int64_t, 3>{100, 48, 128}, std::array<int64_t, 3>{120, 16, 64}}) {
    const Problem p = random_problem(m, n, k, static_cast<uint32_t>(m + n));
    std::shared_ptr<const ComputeDAG> dag = test::dag_of_spec(spec_of(p));
    const State fallback = test::template_fallback_of(spec_of(p), host_target());
    auto interpreted = test::run(fallback, {as_storage(p.a), as_storage(p.b)});
    ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
    EXPECT_EQ(as_words(*interpreted), p.product) << spec_of(p);
    auto built = run_built(fallback, p);
    ASSERT_TRUE(built.is_ok()) << built.status().to_string();
    EXPECT_EQ(*built, p.product) << spec_of(p);
    KnobSpace space = tmpl->define(*dag, host_target()).value();
    ASSERT_NE(space.find("tensorize"), nullptr);
    for (int trial = 0; trial < 8; ++trial) {
      const KnobConfig config = space.config(rng() % space.size()).value();
      auto state = apply_template(*tmpl, dag, config, host_target());
      ASSERT_TRUE(state.is_ok()) << state.status().to_string();
      auto got = run_built(*state, p);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string() << " " << config.to_string();
      ASSERT_EQ(*got, p.product) << spec_of(p) << " " << config.to_string();
    }
  }
}

}  // namespace
}  // namespace tessera
