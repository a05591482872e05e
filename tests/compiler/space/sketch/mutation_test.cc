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

std::shared_ptr<const ComputeDAG> dag_of(const std::string& spec) { return ops::parse_op_spec(spec).value().dag; }

SketchSpace space_of(const std::string& spec) { return SketchSpace::make(dag_of(spec), host_target()).value(); }

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
