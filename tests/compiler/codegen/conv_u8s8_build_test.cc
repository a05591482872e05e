// The integer convolution on the dot-product path (ops::conv2d_nhwc_u8s8)
// through the whole kernel path: under the NHWC conv template's fallback and
// under random schedules, interpreted and built by LLVM for this machine,
// equal to the definition bit for bit, padding reading the pad value; with
// VNNI turned off the same result; for Zen 4, vpdpbusd in the assembly; on
// AMX tiles (TDPBUSD) where the target has AMX-INT8. The same for the
// convolution in 2 x 2 tiles (ops::conv2d_nhwc_u8s8_pairs), one USMMLA a
// tile on AArch64 with +i8mm.
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "compiler/codegen/llvm_codegen.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/knob/template_util.h"
#include "compiler/space/knob/templates.h"
#include "tests/compiler/codegen/int8_test_util.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/schedule/random_steps.h"

namespace tessera {
namespace {

using test::as_storage;
using test::as_words;
using test::bytes_storage;

constexpr const char* kPairs = "conv2d_nhwc_u8s8_pairs";

struct Shape {
  int64_t c, h, w, k, r, s, stride, pad, pad_value;
  int64_t groups = 1;
  int64_t cg() const { return c / groups; }
};

// An NHWC uint8 input, HWIO int8 weights packed four input channels to a
// word, and their convolution in int32 (padding reads the pad value).
struct Problem {
  Shape shape;
  std::vector<uint8_t> x;
  std::vector<int32_t> words, out;
};

Problem random_problem(const Shape& sh, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  // The extremes appear often: 255 x -128 is the largest product.
  auto draw = [&](int lo, int hi) {
    const int r = byte(rng);
    return r < 40 ? lo : r < 80 ? hi : lo + byte(rng) % (hi - lo + 1);
  };
  Problem p{sh, std::vector<uint8_t>(static_cast<size_t>(sh.h * sh.w * sh.c)), {}, {}};
  // HWIO: R x S x C/groups x K.
  std::vector<int8_t> w(static_cast<size_t>(sh.r * sh.s * sh.cg() * sh.k));
  for (auto& v : p.x) v = static_cast<uint8_t>(draw(0, 255));
  for (auto& v : w) v = static_cast<int8_t>(draw(-128, 127));
  p.words.resize(w.size() / 4);
  for (int64_t rs = 0; rs < sh.r * sh.s; ++rs)
    for (int64_t q = 0; q < sh.cg() / 4; ++q)
      for (int64_t k = 0; k < sh.k; ++k) {
        uint8_t word[4];
        for (int64_t b = 0; b < 4; ++b)
          word[b] = static_cast<uint8_t>(w[static_cast<size_t>((rs * sh.cg() + 4 * q + b) * sh.k + k)]);
        std::memcpy(&p.words[static_cast<size_t>((rs * (sh.cg() / 4) + q) * sh.k + k)], word, 4);
      }
  const int64_t oh = (sh.h + 2 * sh.pad - sh.r) / sh.stride + 1, ow = (sh.w + 2 * sh.pad - sh.s) / sh.stride + 1;
  const int64_t kg = sh.k / sh.groups;
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x)
      for (int64_t k = 0; k < sh.k; ++k) {
        int64_t sum = 0;
        for (int64_t r = 0; r < sh.r; ++r)
          for (int64_t s = 0; s < sh.s; ++s)
            for (int64_t c = 0; c < sh.cg(); ++c) {
              const int64_t iy = y * sh.stride + r - sh.pad, ix = x * sh.stride + s - sh.pad;
              const bool inside = iy >= 0 && iy < sh.h && ix >= 0 && ix < sh.w;
              const int64_t channel = (k / kg) * sh.cg() + c;
              const int64_t v = inside ? p.x[static_cast<size_t>((iy * sh.w + ix) * sh.c + channel)] : sh.pad_value;
              sum += v * w[static_cast<size_t>(((r * sh.s + s) * sh.cg() + c) * sh.k + k)];
            }
        p.out.push_back(static_cast<int32_t>(sum));
      }
  return p;
}

std::string spec(const Shape& s, const std::string& op = "conv2d_nhwc_u8s8") {
  return op + ":N=1,C=" + std::to_string(s.c) + ",H=" + std::to_string(s.h) + ",W=" + std::to_string(s.w) +
         ",K=" + std::to_string(s.k) + ",R=" + std::to_string(s.r) + ",S=" + std::to_string(s.s) +
         ",stride=" + std::to_string(s.stride) + ",pad=" + std::to_string(s.pad) +
         ",pad_value=" + std::to_string(s.pad_value) + (op == kPairs ? "" : ",groups=" + std::to_string(s.groups));
}

std::shared_ptr<const ComputeDAG> dag_of(const Shape& s, const std::string& op = "conv2d_nhwc_u8s8") {
  auto inst = ops::parse_op_spec(spec(s, op));
  EXPECT_TRUE(inst.is_ok()) << inst.status().to_string();
  return inst->dag;
}

State template_fallback(const Shape& s, const Target& target, const std::string& op = "conv2d_nhwc_u8s8") {
  const KnobTemplate* t = find_template(op);
  EXPECT_NE(t, nullptr);
  auto state = apply_fallback(*t, dag_of(s, op), target);
  EXPECT_TRUE(state.is_ok()) << state.status().to_string();
  return std::move(state).value();
}

// Builds `state` for `target` and runs it on `p`'s operands.
Result<std::vector<int32_t>> run_built(const State& state, const Target& target, const Problem& p) {
  std::vector<uint8_t> x = p.x;
  std::vector<float> w = test::stored_input(state, state.dag().args()[1], as_storage(p.words));
  std::vector<int32_t> out(p.out.size(), -1);
  TESSERA_RETURN_IF_ERROR(test::run_built(state, target, {x.data(), w.data(), out.data()}));
  return out;
}

class ConvU8S8 : public ::testing::TestWithParam<Shape> {};

TEST_P(ConvU8S8, TheTemplatesConvolutionEqualsTheDefinitionInterpretedAndBuilt) {
  const Problem p = random_problem(GetParam(), 23);
  std::vector<Target> targets = {host_target()};
  if (targets[0].is_x86()) targets.push_back(test::host_without_vnni());
  for (const Target& target : targets) {
    const State state = template_fallback(p.shape, target);
    auto interpreted = test::run(state, {bytes_storage(p.x), as_storage(p.words)});
    ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
    EXPECT_EQ(as_words(*interpreted), p.out) << target.to_string();
    auto built = run_built(state, target, p);
    ASSERT_TRUE(built.is_ok()) << built.status().to_string();
    EXPECT_EQ(*built, p.out) << target.to_string();
  }
}

// A 3x3 window padded by a zero point mid-range, a strided 1x1 (a ResNet's
// downsample), a padded stride-2 window with the largest pad value, a wide
// padding and a tail of output channels; grouped: two groups of 8 channels
// (a ResNeXt's), four of 4. Then whole AMX tiles of channels (on tiles where
// the host has AMX-INT8): 14 output columns in a tile of 14 rows, a strided
// 1x1 into 16 columns, 48 channels (three column tiles) of 128 input
// channels into 8 columns, and a padded stride-2 3x3.
INSTANTIATE_TEST_SUITE_P(Shapes, ConvU8S8,
                         ::testing::Values(Shape{8, 7, 9, 40, 3, 3, 1, 1, 37}, Shape{16, 8, 8, 32, 1, 1, 2, 0, 0},
                                           Shape{4, 5, 5, 17, 3, 3, 2, 1, 255}, Shape{12, 6, 6, 64, 3, 3, 1, 2, 128},
                                           Shape{16, 6, 7, 32, 3, 3, 1, 1, 5, 2}, Shape{16, 5, 5, 8, 1, 1, 1, 0, 0, 4},
                                           Shape{64, 5, 14, 32, 3, 3, 1, 1, 37}, Shape{64, 4, 32, 32, 1, 1, 2, 0, 0},
                                           Shape{128, 3, 8, 48, 3, 3, 1, 1, 255}, Shape{64, 6, 16, 64, 3, 3, 2, 1, 3}));

// Built for Zen 4 whatever this machine is: the products are vpdpbusd on
// 512-bit registers.
TEST(ConvU8S8Assembly, AVnniTargetUsesVpdpbusd) {
  auto vnni = parse_target("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4");
  ASSERT_TRUE(vnni.is_ok());
  auto f = lower(template_fallback(Shape{64, 14, 14, 64, 3, 3, 1, 1, 3}, *vnni), "kernel");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto text = emit_assembly({*f}, *vnni);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_GT(test::count(*text, "vpdpbusd"), 0);
  EXPECT_NE(text->find("zmm"), std::string::npos);
}

constexpr const char* kSapphireRapids = "llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids";

// On an AMX target an ungrouped conv of whole tiles of channels runs on
// tiles: its nest (window, input channels, output columns and channels) is
// TDPBUSD products from zeroed tiles, no VNNI product left. Input channels
// that are not whole tiles of words, output channels that are not whole
// tiles, groups, fewer than 7 output columns a tile, or no AMX: not on tiles.
TEST(ConvU8S8Amx, WholeTilesOfChannelsRunOnTiles) {
  auto amx = parse_target(kSapphireRapids);
  ASSERT_TRUE(amx.is_ok());
  const KnobTemplate* t = find_template("conv2d_nhwc_u8s8");
  auto tiles = [&](const Shape& s, const Target& target) {
    return t->define(*dag_of(s), target).value().find("tensorize") != nullptr;
  };
  EXPECT_TRUE(tiles(Shape{64, 14, 14, 64, 3, 3, 1, 1, 3}, *amx));
  EXPECT_TRUE(tiles(Shape{128, 16, 16, 32, 1, 1, 2, 0, 0}, *amx));   // 8 columns
  EXPECT_FALSE(tiles(Shape{128, 14, 14, 32, 1, 1, 2, 0, 0}, *amx));  // 7 columns
  EXPECT_FALSE(tiles(Shape{32, 14, 14, 64, 3, 3, 1, 1, 3}, *amx));   // 8 words of input channels
  EXPECT_FALSE(tiles(Shape{64, 14, 14, 40, 3, 3, 1, 1, 3}, *amx));   // 40 output channels
  EXPECT_FALSE(tiles(Shape{128, 14, 14, 64, 3, 3, 1, 1, 3, 2}, *amx));
  auto no_amx = parse_target(std::string(kSapphireRapids) + " -mattr=-amx-int8");
  ASSERT_TRUE(no_amx.is_ok());
  EXPECT_FALSE(tiles(Shape{64, 14, 14, 64, 3, 3, 1, 1, 3}, *no_amx));

  // 28 columns: a micro-kernel of 2 x 2 tiles (two of 14 rows, two of 16 channels).
  auto f = lower(template_fallback(Shape{64, 14, 28, 64, 3, 3, 1, 1, 3}, *amx), "kernel");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto text = emit_assembly({*f}, *amx);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_GE(test::count(*text, "tdpbusd"), 4);
  EXPECT_EQ(test::count(*text, "tilezero"), 4);
  EXPECT_EQ(test::count(*text, "vpdpbusd"), 0);
}

// Built and run where this machine has AMX-INT8: the fallback with two
// output rows in its tile nest and random configurations of the template's
// AMX space (blocks, orders, input channels by blocks, one to four tiles of
// channels) equal the definition bit for bit.
TEST(ConvU8S8Amx, RandomTileConfigurationsEqualTheDefinitionBuilt) {
  if (!host_target().amx_int8) GTEST_SKIP() << "this machine has no AMX-INT8 (" << host_target().short_name() << ")";
  const KnobTemplate* t = find_template("conv2d_nhwc_u8s8");
  std::mt19937_64 rng(43);
  for (const Shape& shape : {Shape{128, 6, 14, 64, 3, 3, 1, 1, 9}, Shape{64, 8, 16, 32, 3, 3, 2, 1, 200}}) {
    const Problem p = random_problem(shape, 29);
    KnobSpace space = t->define(*dag_of(shape), host_target()).value();
    ASSERT_NE(space.find("tensorize"), nullptr) << spec(shape);
    // The fallback with two output rows in the micro-kernel (a second loop
    // of rows in the tile nest), then random configurations.
    const KnobConfig fallback = t->fallback(space, *dag_of(shape), host_target()).value();
    std::vector<std::pair<std::string, std::vector<int64_t>>> values;
    // Its tile_p is [P, 1, 1]: [P / 2, 1, 2] takes two rows a block (P is even here).
    for (const KnobValue& v : fallback.values())
      values.push_back({v.name, v.name == "tile_p" ? std::vector<int64_t>{v.value[0] / 2, 1, 2} : v.value});
    std::vector<KnobConfig> configs = {space.config_of(values).value()};
    for (int trial = 0; trial < 6; ++trial) configs.push_back(space.config(rng() % space.size()).value());
    for (const KnobConfig& config : configs) {
      auto state = apply_template(*t, dag_of(shape), config, host_target());
      ASSERT_TRUE(state.is_ok()) << state.status().to_string();
      auto got = run_built(*state, host_target(), p);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string() << " " << config.to_string();
      ASSERT_EQ(*got, p.out) << spec(shape) << " " << config.to_string();
    }
  }
}

// AArch64: USDOT with +i8mm; SDOT (of the bytes shifted by 128) with
// +dotprod alone; neither with plain NEON.
TEST(ConvU8S8Assembly, AnAarch64TargetUsesItsDotProductInstruction) {
  for (const auto& [features, want, absent] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"+neon,+i8mm", "usdot", "\tsdot"}, {"+neon,+dotprod", "\tsdot", "usdot"}, {"+neon", "", "sdot"}}) {
    auto arm = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=" + features);
    ASSERT_TRUE(arm.is_ok()) << arm.status().to_string();
    auto f = lower(template_fallback(Shape{16, 6, 6, 32, 3, 3, 1, 1, 3}, *arm), "kernel");
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    auto text = emit_assembly({*f}, *arm);
    ASSERT_TRUE(text.is_ok()) << text.status().to_string();
    if (!want.empty()) EXPECT_GT(test::count(*text, want), 0) << features;
    EXPECT_EQ(test::count(*text, absent), 0) << features;
  }
}

// Random valid schedules: native code equals the interpreter and the
// definition bit for bit.
TEST(ConvU8S8, RandomSchedulesBuildWhatTheInterpreterComputes) {
  const Problem p = random_problem(Shape{8, 4, 5, 9, 3, 3, 1, 1, 9}, 31);
  runtime::ThreadPool pool(2);
  for (int trial = 0; trial < 12; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(900 + trial * 7919));
    State state = gen.generate(dag_of(p.shape), 4 + trial % 10);
    const std::string steps = steps_to_json(state.steps());
    auto want = test::run(state, {bytes_storage(p.x), as_storage(p.words)});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\nsteps: " << steps;
    ASSERT_EQ(as_words(*want), p.out) << "trial " << trial << "\nsteps: " << steps;
    auto got = test::run_native(state, {bytes_storage(p.x), as_storage(p.words)}, pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\nsteps: " << steps;
    ASSERT_EQ(as_words(*got), p.out) << "trial " << trial << "\nsteps: " << steps;
  }
}

TEST(ConvU8S8, ShapesAndPadValuesItCannotTakeAreRefused) {
  EXPECT_FALSE(ops::parse_op_spec("conv2d_nhwc_u8s8:N=1,C=6,H=4,W=4,K=4,R=1,S=1").is_ok());
  EXPECT_FALSE(ops::parse_op_spec("conv2d_nhwc_u8s8:N=1,C=8,H=4,W=4,K=4,R=1,S=1,pad_value=256").is_ok());
  EXPECT_FALSE(
      ops::parse_op_spec("conv2d_nhwc_u8s8:N=1,C=8,H=4,W=4,K=4,R=1,S=1,groups=4").is_ok());  // 2 channels a group
  Tensor x = placeholder({1, 4, 4, 8}, DType::f32(), "X"), w = placeholder({1, 1, 2, 4}, DType::i32(), "W");
  auto wrong_type = ops::conv2d_nhwc_u8s8(x, w);
  ASSERT_FALSE(wrong_type.is_ok());
  EXPECT_NE(wrong_type.status().message().find("uint8"), std::string::npos) << wrong_type.status().to_string();
}

class ConvU8S8Pairs : public ::testing::TestWithParam<Shape> {};

TEST_P(ConvU8S8Pairs, TheTemplatesTilesEqualTheDefinitionInterpretedAndBuilt) {
  const Problem p = random_problem(GetParam(), 41);
  const State state = template_fallback(p.shape, host_target(), kPairs);
  auto interpreted = test::run(state, {bytes_storage(p.x), as_storage(p.words)});
  ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
  EXPECT_EQ(as_words(*interpreted), p.out);
  auto built = run_built(state, host_target(), p);
  ASSERT_TRUE(built.is_ok()) << built.status().to_string();
  EXPECT_EQ(*built, p.out);
}

// Even and odd output widths (7 and 5 columns: the last pair's second
// column is padding), a strided 1x1, the largest pad value, a wide padding,
// and channels that fill no micro-kernel.
INSTANTIATE_TEST_SUITE_P(Shapes, ConvU8S8Pairs,
                         ::testing::Values(Shape{8, 7, 9, 40, 3, 3, 1, 1, 37}, Shape{16, 8, 8, 32, 1, 1, 2, 0, 0},
                                           Shape{8, 5, 5, 18, 3, 3, 2, 1, 255}, Shape{24, 6, 6, 64, 3, 3, 1, 2, 128},
                                           Shape{64, 7, 7, 64, 3, 3, 1, 1, 3}, Shape{8, 3, 4, 2, 1, 1, 1, 0, 0}));

// Random valid schedules: native code equals the interpreter and the
// definition bit for bit.
TEST(ConvU8S8Pairs, RandomSchedulesBuildWhatTheInterpreterComputes) {
  const Problem p = random_problem(Shape{16, 4, 5, 6, 3, 3, 1, 1, 9}, 37);
  runtime::ThreadPool pool(2);
  for (int trial = 0; trial < 12; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(500 + trial * 7919));
    State state = gen.generate(dag_of(p.shape, kPairs), 4 + trial % 10);
    const std::string steps = steps_to_json(state.steps());
    auto want = test::run(state, {bytes_storage(p.x), as_storage(p.words)});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\nsteps: " << steps;
    ASSERT_EQ(as_words(*want), p.out) << "trial " << trial << "\nsteps: " << steps;
    auto got = test::run_native(state, {bytes_storage(p.x), as_storage(p.words)}, pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\nsteps: " << steps;
    ASSERT_EQ(as_words(*got), p.out) << "trial " << trial << "\nsteps: " << steps;
  }
}

// +i8mm: every tile's product is one USMMLA, no dot product left; +dotprod
// alone: SDOT; plain NEON: neither.
TEST(ConvU8S8PairsAssembly, AnI8mmTargetUsesUsmmlaATile) {
  const std::string text = spec(Shape{64, 14, 14, 64, 3, 3, 1, 1, 3}, kPairs);
  const std::string arm = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon";
  const std::string i8mm = test::fallback_assembly_of(text, arm + ",+i8mm");
  EXPECT_GE(test::count(i8mm, "usmmla"), 16);
  EXPECT_EQ(test::count(i8mm, "usdot"), 0);
  const std::string dotprod = test::fallback_assembly_of(text, arm + ",+dotprod");
  EXPECT_EQ(test::count(dotprod, "mmla"), 0);
  EXPECT_GT(test::count(dotprod, "\tsdot"), 0);
  const std::string neon = test::fallback_assembly_of(text, arm);
  EXPECT_EQ(test::count(neon, "mmla") + test::count(neon, "sdot"), 0);

  // The padding inlined (each row's word a select): still a USMMLA a tile.
  auto target = parse_target(arm + ",+i8mm");
  ASSERT_TRUE(target.is_ok());
  const Shape shape{64, 14, 14, 64, 3, 3, 1, 1, 3};
  const KnobTemplate* t = find_template(kPairs);
  KnobSpace space = t->define(*dag_of(shape, kPairs), *target).value();
  std::vector<std::pair<std::string, std::vector<int64_t>>> values;
  const KnobConfig fallback = t->fallback(space, *dag_of(shape, kPairs), *target).value();
  for (const KnobValue& v : fallback.values())
    values.push_back({v.name, v.name == "pad" ? std::vector<int64_t>{template_detail::kPadInline} : v.value});
  auto state = apply_template(*t, dag_of(shape, kPairs), space.config_of(values).value(), *target);
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  auto f = lower(*state, "kernel");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto inlined = emit_assembly({*f}, *target);
  ASSERT_TRUE(inlined.is_ok()) << inlined.status().to_string();
  EXPECT_GE(test::count(*inlined, "usmmla"), 16);
  EXPECT_EQ(test::count(*inlined, "usdot"), 0);
}

TEST(ConvU8S8Pairs, ShapesItCannotTakeAreRefused) {
  EXPECT_TRUE(ops::parse_op_spec("conv2d_nhwc_u8s8_pairs:N=1,C=8,H=4,W=4,K=4,R=1,S=1").is_ok());
  EXPECT_FALSE(ops::parse_op_spec("conv2d_nhwc_u8s8_pairs:N=1,C=4,H=4,W=4,K=4,R=1,S=1").is_ok());
  EXPECT_FALSE(ops::parse_op_spec("conv2d_nhwc_u8s8_pairs:N=1,C=8,H=4,W=4,K=5,R=1,S=1").is_ok());
  const Tensor x = placeholder({1, 4, 4, 8}, DType::u8(), "X");
  EXPECT_FALSE(ops::conv2d_nhwc_u8s8_pairs(x, placeholder({1, 1, 1, 4}, DType::i32(), "W")).is_ok());
  EXPECT_FALSE(ops::conv2d_nhwc_u8s8_pairs(x, placeholder({1, 1, 8, 4}, DType::i8(), "W")).is_ok());
}

}  // namespace
}  // namespace tessera
