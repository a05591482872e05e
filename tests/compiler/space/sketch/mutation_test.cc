// Mutations of sketch programs: each kind changes what it says, and what
// cannot change is reported as not applicable. (Validity over every operator
// is in sketch_samples_test.cc.)
#include "compiler/space/sketch/mutation.h"

#include <gtest/gtest.h>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/ops.h"
#include "compiler/space/sketch/sketch_space.h"

namespace tessera {
namespace {

std::shared_ptr<const ComputeDAG> dag_of(const std::string& spec) {
  return ops::parse_op_spec(spec).value().dag;
}

SketchSpace space_of(const std::string& spec) {
  return SketchSpace::make(dag_of(spec), host_target()).value();
}

// The first sampled program (seeded) for which `kind` has candidates.
SketchProgram program_with(const SketchSpace& space, MutationKind kind, uint64_t seed = 3) {
  SpaceRng rng(seed);
  for (int i = 0; i < 200; ++i) {
    SketchProgram p = space.sample(rng).value();
    if (mutation_has_candidates(space, p, kind)) return p;
  }
  ADD_FAILURE() << "no program with a " << mutation_kind_name(kind) << " candidate";
  return space.sample(rng).value();
}

TEST(Mutation, TileSizeMovesAFactorBetweenLevelsOfOneVariable) {
  SketchSpace space = space_of("matmul:M=64,N=96,K=48");
  SketchProgram parent = program_with(space, MutationKind::kTileSize);
  SpaceRng rng(5);
  MutationResult r = space.mutate(parent, MutationKind::kTileSize, rng);
  ASSERT_TRUE(r.applied()) << r.reason;
  int changed = 0;
  for (size_t t = 0; t < parent.decisions.tiles.size(); ++t) {
    const auto &a = parent.decisions.tiles[t], &b = r.program->decisions.tiles[t];
    if (a == b) continue;
    ++changed;
    int64_t pa = 1, pb = 1;
    for (int64_t x : a) pa *= x;
    for (int64_t x : b) pb *= x;
    EXPECT_EQ(pa, pb) << "a tile mutation keeps the extent covered";
  }
  EXPECT_EQ(changed, 1);
  EXPECT_NE(r.program->state.steps(), parent.state.steps());
}

// Tiles that need not divide (a prime matmul's) change one inner level to
// another size of the same kind, and the outer level covers the extent again
// without a wholly empty tile: moving a divisor would only grow the padding.
TEST(Mutation, TileSizeResizesALevelOfTilesThatNeedNotDivide) {
  SketchSpace space = space_of("matmul:M=997,N=1009,K=499");
  SpaceRng rng(11);
  int resized = 0;
  for (int i = 0; i < 40; ++i) {
    SketchProgram parent = space.sample(rng).value();
    MutationResult r = space.mutate(parent, MutationKind::kTileSize, rng);
    if (!r.applied()) continue;
    const SketchDecisions &a = parent.decisions, &b = r.program->decisions;
    for (size_t t = 0; t < a.tiles.size(); ++t) {
      if (a.tiles[t] == b.tiles[t] || a.tile_extents[t] != b.tile_extents[t]) continue;
      int64_t product = 1, inner = 1;
      for (int64_t x : a.tiles[t]) product *= x;
      if (product == a.tile_extents[t]) continue;  // an exact factorization: a divisor moved
      ++resized;
      int levels_changed = 0;
      for (size_t l = 1; l < b.tiles[t].size(); ++l) {
        inner *= b.tiles[t][l];
        levels_changed += a.tiles[t][l] != b.tiles[t][l];
      }
      EXPECT_EQ(levels_changed, 1);
      EXPECT_EQ(b.tiles[t][0], (b.tile_extents[t] + inner - 1) / inner);
    }
  }
  EXPECT_GT(resized, 5);
}

TEST(Mutation, ParallelChangesHowManyLoopsAreFused) {
  SketchSpace space = space_of("matmul:M=64,N=96,K=48");
  SketchProgram parent = program_with(space, MutationKind::kParallel);
  SpaceRng rng(5);
  MutationResult r = space.mutate(parent, MutationKind::kParallel, rng);
  ASSERT_TRUE(r.applied()) << r.reason;
  EXPECT_NE(r.program->decisions.parallel, parent.decisions.parallel);
  EXPECT_EQ(r.program->decisions.tiles, parent.decisions.tiles);
}

TEST(Mutation, AutoUnrollTakesAnotherValueFromTheTargetSet) {
  SketchSpace space = space_of("matmul:M=64,N=96,K=48");
  SketchProgram parent = program_with(space, MutationKind::kUnroll);
  SpaceRng rng(5);
  MutationResult r = space.mutate(parent, MutationKind::kUnroll, rng);
  ASSERT_TRUE(r.applied()) << r.reason;
  const auto steps = default_unroll_steps(space.target());
  bool differs = false;
  for (size_t p = 0; p < parent.decisions.unroll.size(); ++p) {
    if (r.program->decisions.unroll[p] == parent.decisions.unroll[p]) continue;
    differs = true;
    EXPECT_NE(std::find(steps.begin(), steps.end(), r.program->decisions.unroll[p]), steps.end());
  }
  EXPECT_TRUE(differs);
}

TEST(Mutation, ComputeLocationMovesAStageThatMayMove) {
  SketchSpace space = space_of("softmax:M=8,N=64");
  SketchProgram parent = program_with(space, MutationKind::kComputeLocation);
  SpaceRng rng(5);
  MutationResult r = space.mutate(parent, MutationKind::kComputeLocation, rng);
  ASSERT_TRUE(r.applied()) << r.reason;
  EXPECT_NE(r.program->decisions.location, parent.decisions.location);
}

TEST(Mutation, NothingToChangeIsNotApplicableWithAReason) {
  // A matmul has no stage whose compute location may move.
  SketchSpace space = space_of("matmul:M=16,N=16,K=16");
  SpaceRng rng(1);
  SketchProgram p = space.sample(rng).value();
  MutationResult r = space.mutate(p, MutationKind::kComputeLocation, rng);
  EXPECT_FALSE(r.applied());
  EXPECT_NE(r.reason.find("compute-location"), std::string::npos) << r.reason;
}

TEST(Mutation, SameSeedGivesTheSameChild) {
  SketchSpace space = space_of("conv2d:N=1,C=4,H=8,W=8,K=8,R=3,S=3,pad=1");
  SpaceRng rng(9);
  SketchProgram p = space.sample(rng).value();
  SpaceRng a(77), b(77);
  MutationResult ra = space.mutate(p, a), rb = space.mutate(p, b);
  ASSERT_TRUE(ra.applied() && rb.applied());
  EXPECT_EQ(ra.program->state.steps(), rb.program->state.steps());
}

}  // namespace
}  // namespace tessera
