// Every knob template over its whole space: random configurations apply,
// replay from their step list alone, and lower; spaces follow the target;
// configurations round-trip through their index and JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "compiler/codegen/llvm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/layout.h"
#include "compiler/space/knob/templates.h"

namespace tessera {
namespace {

// Small shapes with sizes that divide nothing (primes, odd windows, strides,
// padding), one or more per template.
const char* const kSpecs[] = {
    "matmul:M=37,N=45,K=29",
    "dense:M=9,N=35,K=20",
    "dense:M=13,N=40,K=27,bias=1,relu=1",
    "dense:M=1,N=200,K=19,bias=1",
    "batch_matmul:B=3,M=10,N=33,K=17",
    "conv2d:N=1,C=6,H=11,W=13,K=10,R=3,S=3,pad=1",
    "conv2d:N=2,C=4,H=9,W=10,K=6,R=3,S=2,stride=2",
    "conv2d:N=1,C=4,H=7,W=9,K=6,R=3,S=3,pad=1,groups=2",
    "conv2d_nhwc:N=1,C=5,H=10,W=9,K=20,R=3,S=3,pad=1",
    "conv2d_winograd_nhwc:N=1,C=5,H=10,W=12,K=20,pad=1",
    "conv2d_winograd_nhwc:N=2,C=3,H=7,W=9,K=7",
    "depthwise_conv2d:N=1,C=6,H=12,W=11,R=3,S=3,pad=1",
    "depthwise_conv2d:N=1,C=3,H=9,W=13,R=5,S=3,multiplier=2,stride=2,pad=2",
    "depthwise_conv2d_nhwc:N=1,C=19,H=9,W=13,R=3,S=3,stride=2,pad=1",
    "depthwise_conv2d_nhwc:N=1,C=3,H=9,W=13,R=5,S=3,multiplier=2,pad=2,bias=1",
    "max_pool2d:N=1,C=5,H=13,W=12,R=3,S=3,stride=2,pad=1",
    "avg_pool2d:N=2,C=3,H=10,W=11,R=3,S=3,pad=1",
    "global_avg_pool2d:N=2,C=7,H=5,W=6",
};

ops::OpInstance parse(const std::string& spec) {
  auto inst = ops::parse_op_spec(spec);
  EXPECT_TRUE(inst.is_ok()) << inst.status().to_string();
  return std::move(inst).value();
}

Target target(const std::string& text) {
  auto t = Target::parse(text);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return *t;
}

// Applies `n` random configurations (and the fallback) of `spec`'s template
// for `t`: each must apply, replay from steps() alone to the same loops, and
// lower.
void check_random_configs(const std::string& spec, const Target& t, int n, uint64_t seed) {
  ops::OpInstance inst = parse(spec);
  const KnobTemplate* tmpl = find_template(inst.op);
  ASSERT_NE(tmpl, nullptr) << spec;
  auto space = tmpl->define(*inst.dag, t);
  ASSERT_TRUE(space.is_ok()) << spec << ": " << space.status().to_string();
  ASSERT_GT(space->size(), 1u) << spec;
  std::mt19937_64 rng(seed);
  auto fallback = tmpl->fallback(*space, *inst.dag, t);
  ASSERT_TRUE(fallback.is_ok()) << spec << ": " << fallback.status().to_string();
  for (int i = 0; i <= n; ++i) {
    KnobConfig c = i == 0 ? *fallback : space->config(rng() % space->size()).value();
    auto state = apply_template(*tmpl, inst.dag, c, t);
    ASSERT_TRUE(state.is_ok()) << spec << " " << c.to_string() << ": " << state.status().to_string();
    auto replayed = replay(inst.dag, state->steps());
    ASSERT_TRUE(replayed.is_ok()) << spec << " " << c.to_string() << ": " << replayed.status().to_string();
    ASSERT_EQ(replayed->to_string(), state->to_string());
    auto func = lower(*replayed);
    ASSERT_TRUE(func.is_ok()) << spec << " " << c.to_string() << ": " << func.status().to_string() << "\n"
                              << steps_to_json(state->steps());
  }
}

TEST(KnobTemplates, ThousandRandomConfigsPerTemplateReplayAndLowerOnTheHost) {
  // 1,000 per template, shared among the template's specs.
  std::map<std::string, int> specs_of;
  for (const char* spec : kSpecs) ++specs_of[parse(spec).op];
  uint64_t seed = 1;
  for (const char* spec : kSpecs) {
    const int n = specs_of[parse(spec).op];
    check_random_configs(spec, host_target(), (1000 + n - 1) / n, seed++);
  }
}

TEST(KnobTemplates, RandomConfigsLowerForAvx2AndNeon) {
  const Target avx2 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -num-cores=4");
  const Target neon = target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon -num-cores=4");
  uint64_t seed = 100;
  for (const char* spec : kSpecs) {
    check_random_configs(spec, avx2, 100, seed++);
    check_random_configs(spec, neon, 100, seed++);
  }
}

TEST(KnobTemplates, SpacesFollowTheVectorWidth) {
  ops::OpInstance inst = parse("matmul:M=256,N=256,K=256");
  const KnobTemplate* tmpl = find_template("matmul");
  auto inner_columns = [&](const Target& t) {
    std::set<int64_t> nr;
    KnobSpace space = tmpl->define(*inst.dag, t).value();
    for (const auto& c : space.find("tile_n")->candidates) nr.insert(c.back());
    return nr;
  };
  EXPECT_EQ(inner_columns(target("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512")),
            (std::set<int64_t>{16, 32, 64}));
  EXPECT_EQ(inner_columns(target("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell")), (std::set<int64_t>{8, 16, 32}));
  EXPECT_EQ(inner_columns(target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon")), (std::set<int64_t>{4, 8, 16}));
}

TEST(KnobTemplates, FallbackFollowsTheTarget) {
  ops::OpInstance inst = parse("matmul:M=512,N=512,K=512");
  const KnobTemplate* tmpl = find_template("matmul");
  auto fallback = [&](const Target& t) { return tmpl->fallback(*tmpl->define(*inst.dag, t), *inst.dag, t).value(); };
  // The micro-kernel follows the registers: 8 rows x 2 vectors with 32, 4
  // rows with 16; blocks of 128 x 128 either way.
  KnobConfig avx512 = fallback(target("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512"));
  EXPECT_EQ(avx512.get("tile_m"), (std::vector<int64_t>{4, 16, 8}));
  EXPECT_EQ(avx512.get("tile_n"), (std::vector<int64_t>{4, 4, 32}));
  EXPECT_EQ(avx512.get("tile_k"), (std::vector<int64_t>{2, 256}));
  EXPECT_EQ(avx512.get_int("tail"), 0);
  KnobConfig avx2 = fallback(target("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell"));
  EXPECT_EQ(avx2.get("tile_m"), (std::vector<int64_t>{4, 32, 4}));
  EXPECT_EQ(avx2.get("tile_n"), (std::vector<int64_t>{4, 8, 16}));
}

// An NCHW window's row of columns that whole registers do not divide: 28
// (a stride-2 layer's) is one unmasked vector of 28 lanes, not 16 and a
// masked 12; 56 keeps vectors of 8 that divide it.
TEST(KnobTemplates, WindowFallbackVectorizesAShortOddRowAtOnce) {
  const Target avx512 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=2");
  auto inner_columns = [&](const char* op, const std::string& spec) {
    const KnobTemplate* tmpl = find_template(op);
    ops::OpInstance inst = parse(spec);
    return tmpl->fallback(*tmpl->define(*inst.dag, avx512), *inst.dag, avx512).value().get("tile_q").back();
  };
  const std::string dw = "depthwise_conv2d:N=1,C=144,H=56,W=56,R=3,S=3,pad=1,stride=";
  EXPECT_EQ(inner_columns("depthwise_conv2d", dw + "2"), 28);
  EXPECT_EQ(inner_columns("depthwise_conv2d", dw + "1"), 8);
  EXPECT_EQ(inner_columns("max_pool2d", "max_pool2d:N=1,C=64,H=56,W=56,R=3,S=3,stride=2,pad=1"), 28);
}

// Shapes that 8 x 32 tiles and 64 x 256 blocks do not divide: the rows take
// the tile height that divides them where one suits the registers (77 = 11 x
// 7), the blocks split the product evenly between the two cores (77 x 192
// each, where 64 x 256 blocks gave one core two thirds), and a tile that
// does not divide is padded, not guarded.
TEST(KnobTemplates, FallbackTilesAndBlocksFitTheShape) {
  const Target avx512 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=2");
  const KnobTemplate* tmpl = find_template("matmul");
  auto fallback = [&](const char* spec) {
    ops::OpInstance inst = parse(spec);
    return tmpl->fallback(*tmpl->define(*inst.dag, avx512), *inst.dag, avx512).value();
  };
  KnobConfig attention = fallback("matmul:M=77,N=384,K=384");
  EXPECT_EQ(attention.get("tile_m"), (std::vector<int64_t>{1, 11, 7}));
  EXPECT_EQ(attention.get("tile_n"), (std::vector<int64_t>{2, 6, 32}));
  EXPECT_EQ(attention.get_int("tail"), 0);
  KnobConfig three_rows = fallback("matmul:M=3,N=64,K=256");
  EXPECT_EQ(three_rows.get("tile_m").back(), 3);
  EXPECT_EQ(three_rows.get_int("tail"), 0);
  KnobConfig prime = fallback("matmul:M=197,N=768,K=768");
  EXPECT_EQ(prime.get("tile_m").back(), 8);
  EXPECT_EQ(prime.get_int("tail"), 1);
  // A short reduction writes rows of at least 128 columns, 64 rows a block.
  KnobConfig short_k = fallback("matmul:M=1802,N=865,K=5");
  EXPECT_GE(short_k.get("tile_n")[1] * short_k.get("tile_n")[2], 128);
  EXPECT_LE(short_k.get("tile_m")[1] * short_k.get("tile_m")[2], 64);
}

// A GEMV (one output row) has no rows to unroll: its micro-kernel takes one
// to four whole registers of columns whatever N (1000 = 62.5 x 16, the last
// block padded), and its blocks give every core a share of the weights.
TEST(KnobTemplates, GemvTakesWholeRegistersAndABlockPerCore) {
  ops::OpInstance inst = parse("dense:M=1,N=1000,K=2048");
  const KnobTemplate* tmpl = find_template("dense");
  const Target avx512 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=4");
  KnobSpace space = tmpl->define(*inst.dag, avx512).value();
  std::set<int64_t> nr;
  for (const auto& c : space.find("tile_n")->candidates) {
    EXPECT_GE(c[0], 4) << "a block per core: [" << c[0] << ", " << c[1] << ", " << c[2] << "]";
    nr.insert(c.back());
  }
  // Whole registers, and half a register where it divides N (1000 = 125 x 8:
  // no padded weights to stream).
  EXPECT_EQ(nr, (std::set<int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(space.find("tail")->candidates, (std::vector<std::vector<int64_t>>{{1}}));     // padded
  EXPECT_EQ(space.find("cache_b")->candidates, (std::vector<std::vector<int64_t>>{{0}}));  // no copy of B per call
  KnobConfig fallback = tmpl->fallback(space, *inst.dag, avx512).value();
  EXPECT_EQ(fallback.get("tile_n"), (std::vector<int64_t>{16, 1, 64}));
  EXPECT_EQ(fallback.get_int("tail"), 1);     // padded: 1000 is not a multiple of 64
  EXPECT_EQ(fallback.get_int("cache_b"), 0);  // the weights are packed once, not per call
  const Target avx2 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -num-cores=2");
  KnobSpace space2 = tmpl->define(*inst.dag, avx2).value();
  EXPECT_EQ(tmpl->fallback(space2, *inst.dag, avx2).value().get("tile_n"), (std::vector<int64_t>{32, 1, 32}));
  // With rows, or a batch that feeds every core, the spaces are as before.
  for (const char* spec : {"dense:M=8,N=1000,K=64", "batch_matmul:B=4,M=1,N=1000,K=64"}) {
    ops::OpInstance rows = parse(spec);
    const KnobTemplate* t = find_template(rows.op);
    KnobSpace s = t->define(*rows.dag, avx512).value();
    int64_t min_blocks = 1 << 20, max_nr = 0;
    for (const auto& c : s.find("tile_n")->candidates) {
      min_blocks = std::min(min_blocks, c[0]);
      max_nr = std::max(max_nr, c.back());
    }
    EXPECT_EQ(min_blocks, 1) << spec;
    EXPECT_EQ(max_nr, rows.op == "dense" ? 16 : 64) << spec;
  }
}

// A window product's B is the conv's constant taps (the graph makes window
// products of constant weights only): stored packed by the micro-kernel's
// columns, not copied by every block.
TEST(KnobTemplates, AWindowProductsTapsArePacked) {
  const Target avx512 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=2");
  const KnobTemplate* tmpl = find_template("conv1d");
  ops::OpInstance inst = parse("conv1d:W=16512,K=257,S=512,stride=160");
  KnobSpace space = tmpl->define(*inst.dag, avx512).value();
  EXPECT_EQ(space.find("cache_b")->candidates, (std::vector<std::vector<int64_t>>{{1}, {0}, {2}}));
  KnobConfig c = tmpl->fallback(space, *inst.dag, avx512).value();
  EXPECT_EQ(c.get_int("cache_b"), 2);
  State state = apply_template(*tmpl, inst.dag, c, avx512).value();
  const std::vector<std::pair<int, PackedLayout>> packed = packed_arguments(state);
  ASSERT_EQ(packed.size(), 1u);
  EXPECT_EQ(packed[0].first, 1);
  EXPECT_EQ(packed[0].second, (PackedLayout{1, c.get("tile_n").back()}));
}

// A padded block computes all its tiles: the mel front end's STFT product
// (101 windows x 257 bins) took blocks of 64 x 128, 128 x 384 computed for
// 101 x 257; its blocks now pad the columns by less than a tile (9 tiles of
// 32 in blocks that divide 9) and the rows by less than a block.
TEST(KnobTemplates, PaddedBlocksOfAnOddProductAreWholeTiles) {
  const Target avx512 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=2");
  const KnobTemplate* tmpl = find_template("matmul");
  ops::OpInstance inst = parse("matmul:M=101,N=257,K=512");
  KnobConfig c = tmpl->fallback(*tmpl->define(*inst.dag, avx512), *inst.dag, avx512).value();
  ASSERT_EQ(c.get_int("tail"), 1);
  const std::vector<int64_t>& m = c.get("tile_m");
  const std::vector<int64_t>& n = c.get("tile_n");
  EXPECT_LT(n[0] * n[1] * n[2] - 257, n[2]) << "columns padded by less than a tile: " << c.to_string();
  EXPECT_LT(m[0] * m[1] * m[2] - 101, m[1] * m[2]) << "rows padded by less than a block: " << c.to_string();
}

// The int8 product's B is constant weight words: its space also stores B
// packed by the micro-kernel's columns, and its fallback does (no panel
// copied at run time), with 4 rows x 4 vectors on AVX-512, 4 x 2 on AVX2,
// blocks of one column of tiles and at most 256 rows, and a k block whose
// panel of B fills half of L1. A float product keeps its panel copy.
TEST(KnobTemplates, Int8WeightWordsArePackedByTheMicroKernelsColumns) {
  const KnobTemplate* tmpl = find_template("matmul_u8s8");
  ops::OpInstance inst = parse("matmul_u8s8:M=1024,N=1024,K=1024");
  const Target avx512 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4 -num-cores=2");
  KnobSpace space = tmpl->define(*inst.dag, avx512).value();
  EXPECT_EQ(space.find("cache_b")->candidates, (std::vector<std::vector<int64_t>>{{1}, {0}, {2}}));
  KnobConfig fallback = tmpl->fallback(space, *inst.dag, avx512).value();
  EXPECT_EQ(fallback.get_int("cache_b"), 2);
  EXPECT_EQ(fallback.get("tile_m"), (std::vector<int64_t>{4, 64, 4}));
  EXPECT_EQ(fallback.get("tile_n"), (std::vector<int64_t>{16, 1, 64}));
  EXPECT_EQ(fallback.get("tile_k")[1] * 64 * 4, avx512.l1_bytes / 2);
  State state = apply_template(*tmpl, inst.dag, fallback, avx512).value();
  const std::vector<std::pair<int, PackedLayout>> packed = packed_arguments(state);
  ASSERT_EQ(packed.size(), 1u);
  EXPECT_EQ(packed[0].first, 1);
  EXPECT_EQ(packed[0].second, (PackedLayout{1, 64}));

  const Target avx2 = target("llvm -mtriple=x86_64-linux-gnu -mcpu=alderlake -num-cores=2");
  KnobSpace space2 = tmpl->define(*inst.dag, avx2).value();
  KnobConfig fallback2 = tmpl->fallback(space2, *inst.dag, avx2).value();
  EXPECT_EQ(fallback2.get("tile_m").back(), 4);
  EXPECT_EQ(fallback2.get("tile_n").back(), 16);

  ops::OpInstance floats = parse("matmul:M=1024,N=1024,K=1024");
  const KnobTemplate* gemm = find_template("matmul");
  KnobSpace float_space = gemm->define(*floats.dag, avx512).value();
  EXPECT_EQ(float_space.find("cache_b")->candidates, (std::vector<std::vector<int64_t>>{{1}, {0}}));
  EXPECT_EQ(gemm->fallback(float_space, *floats.dag, avx512).value().get_int("cache_b"), 1);
}

TEST(KnobTemplates, FallbackCompilesForAarch64) {
  const Target neon = target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon");
  for (const char* spec : {"matmul:M=64,N=64,K=64", "conv2d:N=1,C=8,H=14,W=14,K=16,R=3,S=3,pad=1"}) {
    ops::OpInstance inst = parse(spec);
    auto state = apply_fallback(*find_template(inst.op), inst.dag, neon);
    ASSERT_TRUE(state.is_ok()) << state.status().to_string();
    auto func = lower(*state, "k");
    ASSERT_TRUE(func.is_ok()) << func.status().to_string();
    auto obj = emit_object({*func}, neon);
    ASSERT_TRUE(obj.is_ok()) << obj.status().to_string();
  }
}

TEST(KnobTemplates, IndexAndJsonRoundTripForEveryTemplate) {
  std::mt19937_64 rng(5);
  for (const char* spec : kSpecs) {
    ops::OpInstance inst = parse(spec);
    KnobSpace space = find_template(inst.op)->define(*inst.dag, host_target()).value();
    for (int i = 0; i < 200; ++i) {
      const uint64_t index = rng() % space.size();
      KnobConfig c = space.config(index).value();
      std::vector<std::pair<std::string, std::vector<int64_t>>> values;
      for (const KnobValue& v : c.values()) values.emplace_back(v.name, v.value);
      EXPECT_EQ(space.config_of(values)->index(), index) << spec;
      auto back = KnobConfig::from_json(c.to_json(), space);
      ASSERT_TRUE(back.is_ok()) << spec << ": " << back.status().to_string();
      EXPECT_EQ(*back, c) << spec;
    }
  }
}

TEST(KnobTemplates, SameDagAndTargetGiveTheSameSpaceAndSteps) {
  ops::OpInstance a = parse("conv2d:N=1,C=6,H=11,W=13,K=10,R=3,S=3,pad=1");
  ops::OpInstance b = parse("conv2d:N=1,C=6,H=11,W=13,K=10,R=3,S=3,pad=1");
  const KnobTemplate* t = find_template("conv2d");
  KnobSpace sa = t->define(*a.dag, host_target()).value(), sb = t->define(*b.dag, host_target()).value();
  ASSERT_EQ(sa.to_string(), sb.to_string());
  KnobConfig c = sa.config(sa.size() / 3).value();
  EXPECT_EQ(steps_to_json(apply_template(*t, a.dag, c, host_target())->steps()),
            steps_to_json(apply_template(*t, b.dag, c, host_target())->steps()));
}

TEST(KnobTemplates, EveryOperatorSpecNameHasItsTemplate) {
  for (const char* op : {"matmul",
                         "matmul_u8s8",
                         "matmul_u8s8_pairs",
                         "matmul_bf16",
                         "matmul_f16w",
                         "dense",
                         "batch_matmul",
                         "conv1d",
                         "conv2d",
                         "conv2d_nhwc",
                         "conv2d_nhwc_u8s8",
                         "conv2d_nhwc_u8s8_pairs",
                         "conv2d_nhwc_bf16",
                         "conv2d_winograd_nhwc",
                         "depthwise_conv2d",
                         "depthwise_conv2d_nhwc",
                         "depthwise_conv2d_nhwc_u8s8",
                         "max_pool2d",
                         "avg_pool2d",
                         "global_avg_pool2d"})
    EXPECT_NE(find_template(op), nullptr) << op;
  EXPECT_EQ(find_template("softmax"), nullptr);
  // And two without an op spec: "rows" (a model's softmax, layer_norm) and
  // "attention" (a model's fused attention chain).
  EXPECT_EQ(knob_templates().size(), 22u);
}

TEST(KnobTemplates, AConfigOfAnotherSpaceIsRefused) {
  ops::OpInstance small = parse("matmul:M=8,N=8,K=8"), large = parse("matmul:M=64,N=64,K=64");
  const KnobTemplate* t = find_template("matmul");
  KnobSpace space = t->define(*large.dag, host_target()).value();
  KnobConfig c = space.config(space.size() - 1).value();
  auto state = apply_template(*t, small.dag, c, host_target());
  EXPECT_EQ(state.status().code(), ErrorCode::kInvalidArgument);
}

TEST(KnobTemplates, TheWrongOperatorIsAClearError) {
  ops::OpInstance conv = parse("conv2d:N=1,C=4,H=8,W=8,K=4,R=3,S=3");
  auto space = find_template("matmul")->define(*conv.dag, host_target());
  EXPECT_EQ(space.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(space.status().message().find("template gemm"), std::string::npos) << space.status().to_string();
  ops::OpInstance softmax = parse("softmax:M=4,N=8");
  EXPECT_EQ(find_template("max_pool2d")->define(*softmax.dag, host_target()).status().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
