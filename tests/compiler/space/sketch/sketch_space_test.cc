// Sketch rules, random annotation and the SketchSpace API, one behaviour per
// test. (Every operator's samples and mutations: sketch_samples_test.cc.)
#include "compiler/space/sketch/sketch_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "compiler/codegen/llvm_target.h"
#include "compiler/lower/infer_bounds.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/ops.h"
#include "compiler/space/sketch/annotation.h"
#include "runtime/thread_pool.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

std::shared_ptr<const ComputeDAG> dag_of(const std::string& spec) {
  return ops::parse_op_spec(spec).value().dag;
}

SketchSpace space_of(const std::string& spec, const Target& target = host_target()) {
  return SketchSpace::make(dag_of(spec), target).value();
}

const StagePlan* plan_named(const SketchSpace& space, const Sketch& sk, const std::string& name,
                            SketchStageRef::Kind kind = SketchStageRef::Kind::kTensor) {
  for (const StagePlan& p : sk.plans)
    if (space.dag().tensors()[p.stage.tensor]->name == name && p.stage.kind == kind) return &p;
  return nullptr;
}

bool has_structure(const Sketch& sk, SketchStructureStep::Kind kind) {
  for (const auto& s : sk.structure)
    if (s.kind == kind) return true;
  return false;
}

TEST(SketchRules, MatmulHasCacheWriteFusionAndPlainTilingEachWithAndWithoutPacking) {
  SketchSpace space = space_of("matmul:M=64,N=64,K=64");
  ASSERT_EQ(space.sketches().size(), 4u) << space.to_string();
  const Sketch& fused = space.sketches()[0];
  EXPECT_TRUE(has_structure(fused, SketchStructureStep::Kind::kCacheWrite));
  const StagePlan* local = plan_named(space, fused, "matmul", SketchStageRef::Kind::kLocal);
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(local->rule, StageRule::kFusedProducer);
  EXPECT_EQ(fused.plans[local->partner].rule, StageRule::kFusedConsumer);
  // SSRSRS: four levels per spatial axis, two per reduce axis.
  ASSERT_EQ(local->tiles.size(), 3u);
  EXPECT_EQ(fused.tiles[local->tiles[0]].levels, 4);
  EXPECT_EQ(fused.tiles[local->tiles[2]].levels, 2);
  EXPECT_TRUE(fused.tiles[local->tiles[1]].vector_inner);
  EXPECT_TRUE(local->packed.empty());
  // The same with B (read along k, vectorized along j) packed per tile.
  const StagePlan* packed = plan_named(space, space.sketches()[1], "matmul", SketchStageRef::Kind::kLocal);
  ASSERT_EQ(packed->packed.size(), 1u);
  EXPECT_EQ(space.dag().tensors()[packed->packed[0]]->name, "B");
  const Sketch& plain = space.sketches()[2];
  EXPECT_FALSE(has_structure(plain, SketchStructureStep::Kind::kCacheWrite));
  EXPECT_EQ(plan_named(space, plain, "matmul")->rule, StageRule::kTiled);
  EXPECT_EQ(plan_named(space, space.sketches()[3], "matmul")->packed.size(), 1u);
}

TEST(SketchRules, OnlyInputsReadAlongTheVectorAxisAndAReductionArePacked) {
  // dense reads W[j, k]: its last index is the reduction, not the vector axis.
  EXPECT_EQ(space_of("dense:M=8,N=32,K=16").sketches().size(), 2u);
  // conv NHWC reads W[ry, rx, rc, k] with k the vector axis.
  EXPECT_EQ(space_of("conv2d_nhwc:N=1,C=8,H=8,W=8,K=16,R=3,S=3,pad=1").sketches().size(), 4u);
}

TEST(SketchRules, APackedPanelIsComputedAtTheVectorAxisTileLoop) {
  SketchSpace space = space_of("matmul:M=64,N=64,K=64");
  SpaceRng rng(4);
  auto program = space.complete(1, {}, rng);
  ASSERT_TRUE(program.is_ok()) << program.status().to_string();
  const State& s = program->state;
  const Stage& panel = s.stage(s.stage_index("B.local"));
  const Stage& local = s.stage(s.stage_index("matmul.local"));
  ASSERT_EQ(panel.location, ComputeLocation::kAt);
  EXPECT_EQ(s.stage(panel.attach_stage).name(), "matmul.local");
  // R0 then the vector axis' S2 loop (j.0) first: k.0 j.0 i.0 k.1 i.1 j.1.
  EXPECT_EQ(local.iter_index(panel.attach_var), 1) << s.to_string();
  EXPECT_EQ(panel.attach_var.name(), "j.0");
  EXPECT_TRUE(lower(s).is_ok());
}

TEST(SketchRules, DenseEpilogueTakesTheProductWithoutCacheWrite) {
  SketchSpace space = space_of("dense:M=8,N=32,K=16,bias=1,relu=1");
  const Sketch& sk = space.sketches()[0];
  EXPECT_FALSE(has_structure(sk, SketchStructureStep::Kind::kCacheWrite)) << sk.to_string(space.dag());
  const StagePlan* product = plan_named(space, sk, "dense.matmul");
  ASSERT_NE(product, nullptr);
  EXPECT_EQ(product->rule, StageRule::kFusedProducer);
  EXPECT_EQ(space.dag().tensors()[sk.plans[product->partner].stage.tensor]->name, "dense");
}

TEST(SketchRules, ConvBiasReluInlinesPadAndBiasAndFusesIntoRelu) {
  Tensor x = placeholder({1, 4, 8, 8}, DType::f32(), "X");
  Tensor w = placeholder({8, 4, 3, 3}, DType::f32(), "W");
  Tensor b = placeholder({8, 1, 1}, DType::f32(), "bias");
  Tensor out = ops::relu(ops::add(ops::conv2d_nchw(x, w, 1, 1).value(), b).value()).value();
  auto dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({x, w, b, out}).value());
  SketchSpace space = SketchSpace::make(dag, host_target()).value();
  const Sketch& sk = space.sketches()[0];
  int inlined = 0;
  for (const auto& s : sk.structure) inlined += s.kind == SketchStructureStep::Kind::kInline;
  EXPECT_EQ(inlined, 2) << sk.to_string(*dag);  // pad and add
  const StagePlan* conv = plan_named(space, sk, "conv2d");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->rule, StageRule::kFusedProducer);
  EXPECT_EQ(dag->tensors()[sk.plans[conv->partner].stage.tensor]->name, "relu");
}

TEST(SketchRules, ReductionsWithFewOutputsGetAnRfactorSketch) {
  SketchSpace space = space_of("reduce_sum:M=2,N=1000");
  ASSERT_EQ(space.sketches().size(), 2u);
  EXPECT_TRUE(has_structure(space.sketches()[0], SketchStructureStep::Kind::kRfactor));
  EXPECT_FALSE(has_structure(space.sketches()[1], SketchStructureStep::Kind::kRfactor));
  // Enough rows for the cores: no rfactor.
  EXPECT_EQ(space_of("reduce_sum:M=256,N=1000").sketches().size(), 1u);
}

TEST(SketchRules, MatrixVectorDenseAlsoGetsAnRfactorAlongTheReduction) {
  // W[j, k] is contiguous along k only: one more sketch, whose partial sums
  // may be computed at the final sum's loop.
  SketchSpace gemv = space_of("dense:M=1,N=1000,K=2048");
  ASSERT_EQ(gemv.sketches().size(), 3u);
  const Sketch& sk = gemv.sketches().back();
  EXPECT_TRUE(has_structure(sk, SketchStructureStep::Kind::kRfactor)) << sk.to_string(gemv.dag());
  ASSERT_EQ(sk.plans.size(), 2u);
  EXPECT_EQ(sk.plans[0].vector_axis, -1);  // the final sum over the partial sums
  EXPECT_TRUE(sk.plans[1].movable);        // the partial sums
  EXPECT_EQ(sk.plans[1].vector_axis, 0);
  // matmul's B[k, j] is contiguous along the vector axis; a short reduction is not worth it.
  for (const char* spec : {"matmul:M=1,N=1000,K=2048", "dense:M=1,N=1000,K=16"}) {
    const SketchSpace space = space_of(spec);  // alive while its sketches are read
    for (const Sketch& s : space.sketches())
      EXPECT_FALSE(has_structure(s, SketchStructureStep::Kind::kRfactor)) << spec;
  }
}

TEST(SketchRules, SoftmaxReductionsMayMoveAndTheOutputStaysAtTheRoot) {
  SketchSpace space = space_of("softmax:M=16,N=100");
  ASSERT_EQ(space.sketches().size(), 1u);
  const Sketch& sk = space.sketches()[0];
  EXPECT_TRUE(plan_named(space, sk, "softmax.max")->movable);
  EXPECT_TRUE(plan_named(space, sk, "softmax.expsum")->movable);
  EXPECT_FALSE(plan_named(space, sk, "softmax")->movable);
}

TEST(SketchRules, RepeatedStageNamesStillSchedule) {
  // Two stages named "t": plans address tensors by position, not by name.
  Tensor a = placeholder({16, 16}, DType::f32(), "A");
  Tensor b = placeholder({16, 16}, DType::f32(), "B");
  Tensor m1 = ops::matmul(a, b, "t").value();
  Tensor m2 = ops::matmul(m1, b, "t").value();
  auto dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, m2}).value());
  SketchSpace space = SketchSpace::make(dag, host_target()).value();
  EXPECT_EQ(space.sketches().size(), 16u);
  auto programs = space.sample(100, 1);
  ASSERT_TRUE(programs.is_ok()) << programs.status().to_string();
  for (const SketchProgram& p : *programs) ASSERT_TRUE(lower(p.state).is_ok()) << steps_to_json(p.state.steps());
}

TEST(SketchSpace, SameSeedGivesTheSameProgramsAndAnotherSeedOthers) {
  SketchSpace space = space_of("conv2d:N=1,C=8,H=14,W=14,K=16,R=3,S=3,pad=1");
  auto a = space.sample(50, 42).value(), b = space.sample(50, 42).value(), c = space.sample(50, 43).value();
  int same_as_c = 0;
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(a[i].state.steps(), b[i].state.steps());
    same_as_c += a[i].state.steps() == c[i].state.steps();
  }
  EXPECT_LT(same_as_c, 5);
}

TEST(SketchSpace, SetDecisionsReplayWithoutTheRng) {
  SketchSpace space = space_of("softmax:M=16,N=100");
  SpaceRng rng(1), other(999);
  SketchProgram p = space.sample(rng).value();
  auto again = space.complete(p.sketch, p.decisions, other);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->state.steps(), p.state.steps());
}

TEST(SketchSpace, ProgramsRoundTripThroughJson) {
  SketchSpace space = space_of("conv2d:N=1,C=8,H=14,W=14,K=16,R=3,S=3,pad=1");
  auto programs = space.sample(20, 11).value();
  SpaceRng unused(0);
  for (const SketchProgram& p : programs) {
    auto again = space.program_from_json(SketchSpace::program_to_json(p), unused);
    ASSERT_TRUE(again.is_ok()) << again.status().to_string();
    EXPECT_EQ(again->state.steps(), p.state.steps());
    // Restored programs mutate like sampled ones.
    EXPECT_TRUE(space.mutate(*again, unused).applied());
  }
}

// Primes have no target-sized divisors, so tiles hang over the edge and some
// programs pad them; decisions stored before padded tiles (no "pad") replay
// to the guarded program.
TEST(SketchSpace, PaddedTilesAreADecisionAndOldDecisionsReplayGuarded) {
  SketchSpace space = space_of("matmul:M=37,N=41,K=29");
  auto programs = space.sample(60, 5).value();
  auto pads = [](const State& s) {
    return std::count_if(s.steps().begin(), s.steps().end(),
                         [](const Step& st) { return st.kind() == StepKind::kPadTile; });
  };
  int padded = 0;
  SpaceRng unused(0);
  for (const SketchProgram& p : programs) {
    if (pads(p.state) == 0) continue;
    ++padded;
    nlohmann::json old = nlohmann::json::parse(p.decisions.to_json());
    old.erase("pad");
    auto decisions = SketchDecisions::from_json(old.dump());
    ASSERT_TRUE(decisions.is_ok()) << decisions.status().to_string();
    auto guarded = space.complete(p.sketch, *decisions, unused);
    ASSERT_TRUE(guarded.is_ok()) << guarded.status().to_string();
    EXPECT_EQ(pads(guarded->state), 0);
    EXPECT_EQ(guarded->state.steps().size() + pads(p.state), p.state.steps().size());
  }
  EXPECT_GT(padded, 0) << "no sampled program pads its tiles";
}

// A padded tile of a packed sketch pads its panel of B too: the copy and the
// micro-kernel's loads stay whole vectors past the edge (an unpadded panel
// guarded its copy, and the prime matmul ran at half the guarded tiles'
// speed). The padded program computes what the interpreter computes.
TEST(SketchSpace, APaddedTilePadsItsPackedPanel) {
  auto dag = dag_of("matmul:M=37,N=41,K=29");
  SketchSpace space = SketchSpace::make(dag, host_target()).value();
  const int lanes = static_cast<int>(host_target().vector_lanes(DType::f32()));
  int packed = -1;
  for (size_t i = 0; i < space.sketches().size(); ++i) {
    const Sketch& sk = space.sketches()[i];
    const StagePlan* local = plan_named(space, sk, "matmul", SketchStageRef::Kind::kLocal);
    if (local && !local->packed.empty()) packed = static_cast<int>(i);
  }
  ASSERT_GE(packed, 0) << space.to_string();
  const Sketch& sk = space.sketches()[packed];
  SketchDecisions d = SketchDecisions::unset(sk);
  // i, j (the vector axis: two registers, 41 is none of their multiples), k.
  d.tiles = {{3, 1, 2, 8}, {1, 1, 2, 2 * lanes}, {2, 16}};
  const StagePlan* consumer = plan_named(space, sk, "matmul");
  ASSERT_NE(consumer, nullptr);
  for (size_t p = 0; p < sk.plans.size(); ++p)
    if (&sk.plans[p] == consumer) d.pad[p] = 1;
  SpaceRng rng(3);
  auto program = space.complete(packed, d, rng);
  ASSERT_TRUE(program.is_ok()) << program.status().to_string();
  const State& s = program->state;
  EXPECT_TRUE(s.stage(s.stage_index("matmul.local")).pad_tile) << s.to_string();
  EXPECT_TRUE(s.stage(s.stage_index("B.local")).pad_tile) << s.to_string();
  const auto inputs = test::random_inputs(*dag, 5, -1, 1);
  auto want = test::run(State(dag), inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  runtime::ThreadPool pool(2);
  auto got = test::run_native(s, inputs, pool);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(test::all_close(*got, *want, 1e-4, 1e-4)) << steps_to_json(s.steps());
}

// A packed producer whose tiles hang over the edge mostly pads them (the
// panel with them); an unpacked one is even odds.
TEST(SketchSpace, PackedTilesThatHangOverAreMostlyPadded) {
  auto dag = dag_of("matmul:M=37,N=41,K=29");
  SketchSpace space = SketchSpace::make(dag, host_target()).value();
  std::map<bool, std::pair<int, int>> padded_of;  // packed -> (padded, overhanging)
  SpaceRng rng(11);
  for (int i = 0; i < 600; ++i) {
    const SketchProgram p = space.sample(rng).value();
    const Sketch& sk = space.sketches()[p.sketch];
    for (size_t c = 0; c < sk.plans.size(); ++c) {
      if (sk.plans[c].rule != StageRule::kFusedConsumer) continue;
      const StagePlan& producer = sk.plans[static_cast<size_t>(sk.plans[c].partner)];
      bool overhangs = false;  // along i or j (the reduction's tiles do not pad)
      for (size_t a = 0; a < 2; ++a) {
        const int var = producer.tiles[a];
        if (var < 0) continue;
        int64_t product = 1;
        for (int64_t f : p.decisions.tiles[var]) product *= f;
        overhangs |= product != p.decisions.tile_extents[var];
      }
      if (!overhangs) continue;
      auto& [padded, total] = padded_of[!producer.packed.empty()];
      padded += p.decisions.pad[c] > 0;
      ++total;
    }
  }
  ASSERT_GT(padded_of[true].second, 50);
  ASSERT_GT(padded_of[false].second, 50);
  EXPECT_GT(padded_of[true].first, 0.7 * padded_of[true].second);
  EXPECT_LT(padded_of[false].first, 0.62 * padded_of[false].second);
}

TEST(SketchSpace, MalformedProgramJsonIsAParseError) {
  SketchSpace space = space_of("relu:M=4,N=4");
  SpaceRng rng(1);
  EXPECT_EQ(space.program_from_json("{", rng).status().code(), ErrorCode::kParseError);
  EXPECT_EQ(space.program_from_json("{\"sketch\":0,\"decisions\":{\"tiles\":3}}", rng).status().code(),
            ErrorCode::kParseError);
  EXPECT_EQ(space.program_from_json("{\"sketch\":5,\"decisions\":{}}", rng).status().code(),
            ErrorCode::kInvalidArgument);
  // Decisions of another space's sketch do not fit.
  SketchSpace other = space_of("matmul:M=8,N=8,K=8");
  const std::string foreign = SketchSpace::program_to_json(other.sample(rng).value());
  EXPECT_EQ(space.program_from_json(foreign, rng).status().code(), ErrorCode::kInvalidArgument);
}

TEST(SketchSpace, BadArgumentsAreInvalidArgument) {
  SketchOptions bad;
  bad.max_sketches = 0;
  EXPECT_EQ(SketchSpace::make(dag_of("relu:M=4,N=4"), host_target(), bad).status().code(), ErrorCode::kInvalidArgument);
  bad = SketchOptions();
  bad.vector_bias = 2;
  EXPECT_EQ(SketchSpace::make(dag_of("relu:M=4,N=4"), host_target(), bad).status().code(), ErrorCode::kInvalidArgument);
  SketchSpace space = space_of("relu:M=4,N=4");
  SpaceRng rng(1);
  EXPECT_EQ(space.complete(7, {}, rng).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(space.sample(-1, 1).status().code(), ErrorCode::kInvalidArgument);
}

TEST(SketchSpace, PrintsItsSketches) {
  SketchSpace space = space_of("matmul:M=64,N=64,K=64");
  const std::string text = space.to_string();
  EXPECT_NE(text.find("sketch 0: matmul cache_write"), std::string::npos) << text;
  EXPECT_NE(text.find("packs B"), std::string::npos) << text;
  EXPECT_NE(text.find("matmul.local.i=?x4"), std::string::npos) << text;
}

TEST(Annotation, TileFactorsCoverTheExtentWithDivisors) {
  SketchOptions options;
  options.nondividing_chance = 0;
  options.unfriendly_nondividing_chance = 0;
  SpaceRng rng(3);
  for (int64_t extent = 1; extent <= 300; ++extent)
    for (int levels : {2, 4})
      for (bool vec : {false, true}) {
        auto f = sample_tile_factors(extent, TileVar{"x", levels, vec, false, 16}, 32, options, rng);
        ASSERT_EQ(static_cast<int>(f.size()), levels);
        int64_t product = 1;
        for (int64_t x : f) product *= x;
        ASSERT_EQ(product, extent) << extent;
        if (vec) {
          ASSERT_LE(f.back(), kMaxVectorLanes);
        }
      }
}

TEST(Annotation, VectorLevelsFavourLaneMultiples) {
  SketchOptions options;
  SpaceRng rng(3);
  int multiples = 0;
  for (int i = 0; i < 1000; ++i)
    multiples += sample_tile_factors(1024, TileVar{"x", 4, true, false, 16}, 32, options, rng).back() % 16 == 0;
  EXPECT_GT(multiples, 750);
}

TEST(Annotation, NonDividingTilesHaveTargetSizesAndCoverTheExtent) {
  SketchOptions options;
  options.nondividing_chance = 1;
  options.unfriendly_nondividing_chance = 1;
  SpaceRng rng(3);
  for (int64_t extent : {70, 997, 1009, 6625, 56, 5})
    for (bool vec : {false, true})
      for (int draw = 0; draw < 50; ++draw) {
        auto f = sample_tile_factors(extent, TileVar{"x", 4, vec, false, 16}, 32, options, rng);
        int64_t inner = 1;
        for (size_t l = 1; l < f.size(); ++l) {
          inner *= f[l];
          const bool innermost = l + 1 == f.size();
          if (vec && innermost && extent >= 16) {
            EXPECT_EQ(f[l] % 16, 0) << extent;  // whole vectors
            EXPECT_LE(f[l], 64) << extent;
          } else if (!vec && innermost) {
            EXPECT_LE(f[l], 16) << extent << ": register rows beyond half of 32 registers";
          } else {
            EXPECT_EQ(f[l] & (f[l] - 1), 0) << extent << ": " << f[l] << " is not a power of two";
          }
        }
        // The outer level covers the extent, without a wholly empty tile.
        EXPECT_EQ(f[0], (extent + inner - 1) / inner) << extent;
        EXPECT_LE(inner, std::max<int64_t>(extent, 64)) << extent;
      }
}

// A k block that need not divide its reduction reaches the template's block
// sizes (256 of K = 499), not only a spatial tile's 64.
TEST(Annotation, NonDividingReduceTilesReachLongKBlocks) {
  SketchOptions options;
  options.nondividing_chance = 1;
  options.unfriendly_nondividing_chance = 1;
  SpaceRng rng(3);
  std::set<int64_t> reduce_blocks, spatial_blocks;
  for (int draw = 0; draw < 300; ++draw) {
    auto k = sample_tile_factors(499, TileVar{"k", 2, false, /*reduce=*/true, 16}, 32, options, rng);
    EXPECT_EQ(k[0], (499 + k[1] - 1) / k[1]);
    EXPECT_LE(k[1], kMaxReduceTile);
    reduce_blocks.insert(k[1]);
    spatial_blocks.insert(sample_tile_factors(499, TileVar{"i", 2, false, false, 16}, 32, options, rng)[1]);
  }
  EXPECT_TRUE(reduce_blocks.count(256)) << "no k block of 256";
  EXPECT_TRUE(reduce_blocks.count(499)) << "never the whole reduction";
  EXPECT_GE(*reduce_blocks.begin(), 8) << "a k block too short to keep the accumulators a while";
  EXPECT_LE(*spatial_blocks.rbegin(), 64);
}

TEST(Annotation, ExtentsWithoutTargetSizedDivisorsMostlyGetNonDividingTiles) {
  SketchOptions options;  // the defaults
  SpaceRng rng(5);
  auto nondividing = [&](int64_t extent) {
    int n = 0;
    for (int i = 0; i < 1000; ++i) {
      auto f = sample_tile_factors(extent, TileVar{"x", 4, true, false, 16}, 32, options, rng);
      int64_t product = 1;
      for (int64_t x : f) product *= x;
      n += product != extent;
    }
    return n;
  };
  EXPECT_EQ(nondividing(1009), 1000);  // a prime: always remainders, never 1009 register rows
  EXPECT_GT(nondividing(6625), 700);   // 5^3 x 53: mostly remainders ...
  EXPECT_LT(nondividing(6625), 950);   // ... and now and then its divisors
  EXPECT_LT(nondividing(1024), 300);   // exact factorizations stay the common case
}

TEST(Annotation, ParallelLoopsHaveEnoughTasksAndVectorLoopsFitTheTarget) {
  SketchSpace space = space_of("matmul:M=512,N=512,K=512");
  const int lanes = space.target().vector_lanes(DType::f32());
  const auto programs = space.sample(200, 5).value();
  for (const SketchProgram& p : programs) {
    const Stage& out = p.state.stage(p.state.stage_index("matmul"));
    ASSERT_EQ(out.iters[0].annotation, IterAnnotation::kParallel) << p.state.to_string();
    EXPECT_GE(out.iters[0].extent, std::min(2, space.target().num_cores));
    // Attached stages (panels, .local) vectorize over the region they cover.
    const State bounded = infer_bounds(p.state).value();
    for (const Stage& st : bounded.stages())
      for (const Iter& it : st.iters)
        if (it.annotation == IterAnnotation::kVectorize) {
          EXPECT_TRUE(vector_friendly(it.extent, lanes));
        }
  }
}

TEST(Annotation, AnotherTargetGivesItsOwnVectorWidth) {
  Target neon = Target::parse("llvm -mtriple=aarch64-linux-gnu -mattr=+neon -num-cores=4").value();
  SketchSpace space = space_of("matmul:M=64,N=64,K=64", neon);
  int vectorized = 0;
  const auto programs = space.sample(100, 5).value();
  for (const SketchProgram& p : programs) {
    ASSERT_TRUE(lower(p.state).is_ok());
    const State bounded = infer_bounds(p.state).value();
    for (const Stage& st : bounded.stages())
      for (const Iter& it : st.iters)
        if (it.annotation == IterAnnotation::kVectorize) {
          ++vectorized;
          EXPECT_TRUE(vector_friendly(it.extent, 4)) << p.state.to_string();
        }
  }
  EXPECT_GT(vectorized, 50);
}

TEST(Annotation, AMovedStageSplitsTheRegionItCovers) {
  SketchSpace space = space_of("avg_pool2d:N=1,C=4,H=16,W=16,R=3,S=3,pad=1");
  const Sketch& sk = space.sketches()[0];
  const StagePlan* sum = plan_named(space, sk, "avg_pool2d.sum");
  ASSERT_TRUE(sum != nullptr && sum->movable && sum->tiles.size() == 1);
  const int var = sum->tiles[0];
  int moved = 0, narrowed = 0;
  const auto programs = space.sample(300, 8).value();
  for (const SketchProgram& p : programs) {
    const int s = p.state.stage_index("avg_pool2d.sum");
    if (p.state.stage(s).location != ComputeLocation::kAt) continue;
    ++moved;
    // The vector axis (l, the output column) was factorized over the columns
    // the stage computes where it is attached, which bound inference confirms.
    const int64_t region = p.decisions.tile_extents[var];
    narrowed += region < 16;
    const State bounded = infer_bounds(p.state).value();
    const Stage& st = bounded.stage(s);
    const int outer = st.iter_index("l.0"), inner = st.iter_index("l.1");
    const int64_t covered =
        outer >= 0 ? st.iters[outer].extent * st.iters[inner].extent : st.iters[st.iter_index("l")].extent;
    EXPECT_EQ(covered, region) << p.state.to_string();
  }
  EXPECT_GT(moved, 20);
  EXPECT_GT(narrowed, 5);
}

}  // namespace
}  // namespace tessera
