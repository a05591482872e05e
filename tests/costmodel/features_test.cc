#include "costmodel/features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "tests/costmodel/random_schedules.h"

namespace tessera::costmodel {
namespace {

using testing::matmul_dag;

float feature(const std::vector<float>& v, const std::string& name) {
  const int i = feature_index(name);
  EXPECT_GE(i, 0) << "no feature " << name;
  return i >= 0 ? v[i] : NAN;
}

float log_feature(double x) {
  return static_cast<float>(std::log2(1.0 + x));
}

// A tiled matmul: i.0 j.0 i.1 j.1 k, with optional annotations.
State tiled_matmul(bool vectorize, bool parallel, bool unroll) {
  State s(matmul_dag(64, 64, 64));
  const int c = s.stage_index("C");
  EXPECT_TRUE(s.tile(c, {0, 1}, {{8}, {16}}).is_ok());
  EXPECT_TRUE(s.reorder(c, {0, 1, 4, 2, 3}).is_ok());  // i.0 j.0 k i.1 j.1
  if (parallel) {
    EXPECT_TRUE(s.parallel(c, 0).is_ok());
  }
  if (unroll) {
    EXPECT_TRUE(s.unroll(c, 3).is_ok());
  }
  if (vectorize) {
    EXPECT_TRUE(s.vectorize(c, 4).is_ok());
  }
  return s;
}

TEST(FeatureTable, HasOneDocumentedUniqueNamePerFeature) {
  const auto& table = feature_names();
  ASSERT_EQ(table.size(), static_cast<size_t>(kFeatureCount));
  std::set<std::string> names;
  for (const FeatureInfo& f : table) {
    EXPECT_FALSE(f.doc.empty()) << f.name;
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate " << f.name;
  }
  EXPECT_EQ(feature_index("store.vec_lanes"), kProgramFeatureCount + 16);
  EXPECT_EQ(feature_index("no.such.feature"), -1);
}

TEST(ExtractFeatures, VectorIsFixedLengthAndFinite) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    auto s = testing::random_schedule(matmul_dag(64, 48, 32), rng);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    auto v = extract_features(*s);
    if (!v.is_ok()) continue;  // a schedule that does not lower
    ++checked;
    ASSERT_EQ(v->size(), static_cast<size_t>(kFeatureCount));
    for (size_t f = 0; f < v->size(); ++f) EXPECT_TRUE(std::isfinite((*v)[f])) << feature_names()[f].name;
  }
  EXPECT_GT(checked, 30);
}

TEST(ExtractFeatures, IsDeterministicAndSurvivesReplay) {
  State s = tiled_matmul(true, true, true);
  auto a = extract_features(s);
  auto b = extract_features(s);
  auto replayed = replay(s.dag_ptr(), s.steps());
  ASSERT_TRUE(a.is_ok() && b.is_ok() && replayed.is_ok());
  auto c = extract_features(*replayed);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(*a, *c);
}

TEST(ExtractFeatures, VectorizedScheduleRecordsItsLanes) {
  auto scalar = extract_features(tiled_matmul(false, false, false));
  auto vector = extract_features(tiled_matmul(true, false, false));
  ASSERT_TRUE(scalar.is_ok() && vector.is_ok());
  EXPECT_NE(*scalar, *vector);
  EXPECT_FLOAT_EQ(feature(*scalar, "store.vec_lanes"), log_feature(1));
  // Every store of the vectorized schedule (init and update) is 16 lanes wide.
  EXPECT_FLOAT_EQ(feature(*vector, "store.vec_lanes"), log_feature(16));
  EXPECT_GT(feature(*vector, "store.vec_op_frac"), 0.5f);
  EXPECT_EQ(feature(*scalar, "store.vec_op_frac"), 0.f);
  // The same arithmetic is done either way.
  EXPECT_FLOAT_EQ(feature(*scalar, "store.float_mad"), feature(*vector, "store.float_mad"));
  EXPECT_FLOAT_EQ(feature(*scalar, "program.total_flops"), feature(*vector, "program.total_flops"));
}

// An int8 product on packed words: its dot products count as the
// multiply-adds they are (4 a lane), none as a math call, and the program's
// flops are the product's 2 M N K, vectorized or not.
TEST(ExtractFeatures, PackedDotProductsCountTheirMultiplyAdds) {
  auto inst = ops::parse_op_spec("matmul_u8s8:M=16,N=32,K=64");
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  State scalar(inst->dag), vector(inst->dag);
  const int c = vector.stage_index(vector.dag().args().back());
  ASSERT_TRUE(vector.vectorize(c, 1).is_ok());
  for (const State* s : {&scalar, &vector}) {
    auto v = extract_features(*s);
    ASSERT_TRUE(v.is_ok()) << v.status().to_string();
    EXPECT_FLOAT_EQ(feature(*v, "store.dot_mad"), log_feature(16.0 * 32 * 64));
    EXPECT_EQ(feature(*v, "store.float_math"), 0.f);
    EXPECT_FLOAT_EQ(feature(*v, "program.total_flops"), log_feature(2.0 * 16 * 32 * 64));
  }
}

// A nest a matrix unit runs (kTensorized: AMX tile products) is told apart
// from serial loops: its loops and their work, which the serial form of the
// same nest does not have.
TEST(ExtractFeatures, TensorizedNestIsNotSerialLoops) {
  auto inst = ops::parse_op_spec("matmul_u8s8:M=32,N=32,K=128");
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  State serial(inst->dag), tiles(inst->dag);
  const int c = tiles.stage_index(tiles.dag().args().back());
  ASSERT_TRUE(tiles.tile(c, {0, 1}, {{16}, {16}}).is_ok());  // i.0 j.0 i.1 j.1 k
  ASSERT_TRUE(tiles.reorder(c, {0, 1, 4, 2, 3}).is_ok());    // i.0 j.0 k i.1 j.1
  State tensorized = tiles;
  ASSERT_TRUE(tensorized.annotate(c, 2, IterAnnotation::kTensorize).is_ok());
  auto plain = extract_features(tiles);
  auto unit = extract_features(tensorized);
  ASSERT_TRUE(plain.is_ok() && unit.is_ok()) << unit.status().to_string();
  EXPECT_EQ(feature(*plain, "store.tensor_num"), 0.f);
  EXPECT_EQ(feature(*plain, "store.tensor_prod"), 0.f);
  // The update's nest is k i.1 j.1 (32 words x 16 x 16); the zeroing and
  // the copy out have no tensorized loop and a small share of the work.
  EXPECT_GT(feature(*unit, "store.tensor_num"), 2.5f);
  EXPECT_LE(feature(*unit, "store.tensor_num"), 3.f);
  EXPECT_GT(feature(*unit, "store.tensor_prod"), 0.9f * log_feature(32.0 * 16 * 16));
  EXPECT_LT(feature(*unit, "store.serial_num"), feature(*plain, "store.serial_num"));
}

TEST(ExtractFeatures, ParallelLoopRecordsItsExtent) {
  auto serial = extract_features(tiled_matmul(false, false, false));
  auto parallel = extract_features(tiled_matmul(false, true, false));
  ASSERT_TRUE(serial.is_ok() && parallel.is_ok());
  EXPECT_EQ(feature(*serial, "store.par_num"), 0.f);
  EXPECT_EQ(feature(*serial, "store.par_outer_len"), 0.f);
  EXPECT_FLOAT_EQ(feature(*parallel, "store.par_num"), 1.f);
  EXPECT_FLOAT_EQ(feature(*parallel, "store.par_outer_len"), log_feature(8));  // i.0 has extent 64 / 8
  EXPECT_FLOAT_EQ(feature(*parallel, "store.par_prod"), log_feature(8));
  EXPECT_FLOAT_EQ(feature(*parallel, "store.par_outer_depth"), 0.f);
}

TEST(ExtractFeatures, UnrolledLoopIsSeenBeforeUnrolling) {
  auto v = extract_features(tiled_matmul(true, false, true));
  ASSERT_TRUE(v.is_ok());
  EXPECT_FLOAT_EQ(feature(*v, "store.unroll_num"), 1.f);
  EXPECT_FLOAT_EQ(feature(*v, "store.unroll_inner_len"), log_feature(8));  // i.1
}

TEST(ExtractFeatures, StrideOfTheInnermostLoop) {
  // Update store C[i, j] += A[i, k] * B[k, j] with k innermost: A moves by 1
  // element, B by a row (64), and C not at all (reused by the k loop).
  State s(matmul_dag(64, 64, 64));
  auto v = extract_features(s);
  ASSERT_TRUE(v.is_ok());
  // Per-store values are averaged with the stores' shares of the work: the
  // update runs 64^3 times, the initialization C[i, j] = 0 64^2 times.
  const double w = 64.0 / 65.0;
  // Buffers by bytes: C (read and write) first, then A and B (equal bytes,
  // A loaded first).
  EXPECT_FLOAT_EQ(feature(*v, "buf0.is_read_write"), float(w));
  EXPECT_FLOAT_EQ(feature(*v, "buf0.reuse_loop"), float(w));
  EXPECT_FLOAT_EQ(feature(*v, "buf0.reuse_ct"), log_feature(w * 64));
  EXPECT_FLOAT_EQ(feature(*v, "buf1.stride"), log_feature(w * 1));
  EXPECT_FLOAT_EQ(feature(*v, "buf2.stride"), log_feature(w * 64));
  EXPECT_FLOAT_EQ(feature(*v, "buf1.reuse_loop"), float(w));  // A[i, k] is reused by the j loop
}

TEST(ExtractFeatures, VectorizingAColumnIsAGather) {
  // Vectorizing i.1 (C[i, j] with i.1 in lanes) makes lanes 64 elements apart.
  State rows = tiled_matmul(true, false, false);
  State cols(matmul_dag(64, 64, 64));
  const int c = cols.stage_index("C");
  ASSERT_TRUE(cols.tile(c, {0, 1}, {{8}, {16}}).is_ok());
  ASSERT_TRUE(cols.reorder(c, {0, 1, 4, 3, 2}).is_ok());  // i.0 j.0 k j.1 i.1
  ASSERT_TRUE(cols.vectorize(c, 4).is_ok());
  auto contiguous = extract_features(rows);
  auto strided = extract_features(cols);
  ASSERT_TRUE(contiguous.is_ok() && strided.is_ok());
  EXPECT_EQ(feature(*contiguous, "store.vec_strided"), 0.f);
  EXPECT_GT(feature(*strided, "store.vec_strided"), 0.5f);
}

TEST(ExtractFeatures, TilingCutsEstimatedCacheMisses) {
  State naive(matmul_dag(512, 512, 512));
  State tiled(matmul_dag(512, 512, 512));
  const int c = tiled.stage_index("C");
  ASSERT_TRUE(tiled.tile(c, {0, 1}, {{8}, {64}}).is_ok());
  ASSERT_TRUE(tiled.reorder(c, {0, 1, 4, 2, 3}).is_ok());  // i.0 j.0 k i.1 j.1
  auto a = extract_features(naive);
  auto b = extract_features(tiled);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_LT(feature(*b, "store.l1_misses"), feature(*a, "store.l1_misses") - 2);  // over 4x fewer
  EXPECT_LE(feature(*b, "store.l2_misses"), feature(*a, "store.l2_misses"));
}

TEST(ExtractFeatures, AutoUnrollHintIsAppliedAsLoweringWould) {
  // i.0 j.0 k i.1 j.1 with a hint of 128 steps at i.0: j.1 (16 steps) and
  // i.1 (8 x 16 = 128 steps) are unrolled, k (64 x 128) stays a loop.
  State s = tiled_matmul(false, false, false);
  ASSERT_TRUE(s.pragma_auto_unroll(s.stage_index("C"), 0, 128).is_ok());
  auto v = extract_features(s);
  ASSERT_TRUE(v.is_ok());
  const double w = 64.0 / 65.0;  // the update's share of the work (the rest: C = 0)
  EXPECT_FLOAT_EQ(feature(*v, "store.auto_unroll_max_step"), log_feature(128));
  EXPECT_FLOAT_EQ(feature(*v, "store.auto_unrolled_num"), 2.f);
  EXPECT_FLOAT_EQ(feature(*v, "store.unrolled_copies"), log_feature(128));
  EXPECT_FLOAT_EQ(feature(*v, "store.loop_inner_len"), log_feature(w * 64 + (1 - w) * 4));  // k; j.0 for C = 0
}

TEST(ExtractFeatures, UpdateDistanceCountsIndependentWork) {
  // k innermost: each update waits for the previous one. Tiled with k
  // outside i.1 j.1: 8 x 16 independent updates between two of one element.
  auto naive = extract_features(State(matmul_dag(64, 64, 64)));
  auto tiled = extract_features(tiled_matmul(false, false, false));
  ASSERT_TRUE(naive.is_ok() && tiled.is_ok());
  const double w = 64.0 / 65.0;
  EXPECT_FLOAT_EQ(feature(*naive, "store.acc_distance"), log_feature(w * 1));
  EXPECT_FLOAT_EQ(feature(*tiled, "store.acc_distance"), log_feature(w * 128));
}

TEST(ExtractFeatures, WorksOnFullyLoweredCode) {
  State s = tiled_matmul(true, true, true);
  auto lowered = lower(s);
  ASSERT_TRUE(lowered.is_ok());
  auto v = extract_features(*lowered);
  ASSERT_TRUE(v.is_ok());
  ASSERT_EQ(v->size(), static_cast<size_t>(kFeatureCount));
  // Unrolled copies are separate stores, but the work they add up to is the same.
  auto before = extract_features(s);
  ASSERT_TRUE(before.is_ok());
  EXPECT_FLOAT_EQ(feature(*v, "program.total_flops"), feature(*before, "program.total_flops"));
  EXPECT_EQ(feature(*v, "store.unroll_num"), 0.f);
}

TEST(ExtractFeatures, FunctionWithoutBodyIsAnError) {
  PrimFunc empty{"nothing", {}, Stmt()};
  auto v = extract_features(empty);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kInvalidArgument);
}

TEST(ExtractFeatures, LoweringErrorsAreReturned) {
  State s(matmul_dag(64, 128, 8));
  ASSERT_TRUE(s.cache_write(s.stage_index("C")).is_ok());
  const int local = s.stage_index("C.local");
  ASSERT_TRUE(s.compute_at(local, s.stage_index("C"), 0).is_ok());  // region 1 x 128
  ASSERT_TRUE(s.vectorize(local, 1).is_ok());                       // 128 lanes: only lowering knows
  auto v = extract_features(s);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kLoweringError);
}

TEST(ExtractFeatures, BatchKeepsOneResultPerCandidate) {
  std::vector<State> states = {tiled_matmul(false, false, false), tiled_matmul(true, true, false)};
  auto results = extract_features(states);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].is_ok());
  EXPECT_TRUE(results[1].is_ok());
}

}  // namespace
}  // namespace tessera::costmodel
