// ComputeDAG: topological order, argument checks, flops, and workload keys
// that depend on structure, shapes and types, never on names.
#include "compiler/te/compute_dag.h"

#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/te/workload_key.h"

namespace tessera {
namespace {

struct Names {
  std::string a = "A", b = "B", c = "C", k = "k";
};

// C = A x B (+ ReLU when `relu`), with the given names.
Result<ComputeDAG> matmul(int64_t m, int64_t n, int64_t k, DType t = DType::f32(), Names names = {},
                          bool relu = false) {
  Tensor a = placeholder({m, k}, t, names.a), b = placeholder({k, n}, t, names.b);
  IterVar r = reduce_axis(k, names.k);
  Tensor c = compute(
      {m, n},
      [&](const Vars& i) {
        return sum(read(a, {i[0], r->var}) * read(b, {r->var, i[1]}), {r});
      },
      names.c);
  if (!relu) return ComputeDAG::make({a, b, c});
  Tensor d = compute(
      {m, n},
      [&](const Vars& i) {
        return max(read(c, {i[0], i[1]}), make_const(t, 0));
      },
      "D");
  return ComputeDAG::make({a, b, d});
}

TEST(ComputeDAG, TensorsAreInTopologicalOrder) {
  auto dag = matmul(4, 5, 6, DType::f32(), {}, /*relu=*/true);
  ASSERT_TRUE(dag.is_ok()) << dag.status().to_string();
  ASSERT_EQ(dag->tensors().size(), 4u);
  EXPECT_EQ(dag->tensors()[0]->name, "A");
  EXPECT_EQ(dag->tensors()[1]->name, "B");
  EXPECT_EQ(dag->tensors()[2]->name, "C");
  EXPECT_EQ(dag->tensors()[3]->name, "D");
  EXPECT_EQ(dag->index_of(dag->tensors()[2]), 2);
  EXPECT_FALSE(dag->is_output(dag->tensors()[2]));
  EXPECT_TRUE(dag->is_output(dag->tensors()[3]));
  EXPECT_FALSE(dag->is_output(dag->tensors()[0]));
}

TEST(ComputeDAG, FlopsCountAMultiplyAddAsTwo) {
  auto dag = matmul(4, 5, 6);
  ASSERT_TRUE(dag.is_ok());
  EXPECT_EQ(dag->flop_count(), 2.0 * 4 * 5 * 6);
}

TEST(ComputeDAG, PlaceholderMissingFromTheArgumentsIsAnError) {
  Tensor a = placeholder({4}, DType::f32(), "A");
  Tensor b = compute(
      {4}, [&](const Vars& i) { return read(a, {i[0]}) + 1.0f; }, "B");
  auto dag = ComputeDAG::make({b});
  ASSERT_FALSE(dag.is_ok());
  EXPECT_EQ(dag.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(dag.status().message().find("placeholder A"), std::string::npos);
}

TEST(ComputeDAG, RepeatedArgumentIsAnError) {
  Tensor a = placeholder({4}, DType::f32(), "A");
  Tensor b = compute(
      {4}, [&](const Vars& i) { return read(a, {i[0]}) + 1.0f; }, "B");
  auto dag = ComputeDAG::make({a, b, a});
  ASSERT_FALSE(dag.is_ok());
  EXPECT_EQ(dag.status().code(), ErrorCode::kInvalidArgument);
}

TEST(ComputeDAG, ArgumentsWithoutAComputeAreAnError) {
  auto dag = ComputeDAG::make({placeholder({4}, DType::f32(), "A")});
  ASSERT_FALSE(dag.is_ok());
  EXPECT_EQ(dag.status().code(), ErrorCode::kInvalidArgument);
}

TEST(WorkloadKey, IsTheSameWhateverTheNames) {
  auto x = matmul(64, 32, 16), y = matmul(64, 32, 16, DType::f32(), Names{"lhs", "rhs", "out", "r"});
  ASSERT_TRUE(x.is_ok() && y.is_ok());
  EXPECT_EQ(x->workload_key(), y->workload_key());
  EXPECT_EQ(x->canonical_text(), y->canonical_text());
}

TEST(WorkloadKey, IsTheSameForEqualStructureBuiltTwice) {
  EXPECT_EQ(matmul(8, 8, 8)->workload_key(), matmul(8, 8, 8)->workload_key());
}

TEST(WorkloadKey, DiffersForShapesTypesAndOperations) {
  const std::string key = matmul(8, 8, 8)->workload_key();
  EXPECT_EQ(key.size(), 32u);
  EXPECT_NE(matmul(8, 8, 16)->workload_key(), key);
  EXPECT_NE(matmul(8, 8, 8, DType::f16())->workload_key(), key);
  EXPECT_NE(matmul(8, 8, 8, DType::f32(), {}, /*relu=*/true)->workload_key(), key);
}

// Records in users' databases are keyed by these; a change of the canonical
// text (the printer's canonical mode) must be deliberate.
TEST(WorkloadKey, IsPinnedForAMatmul) {
  auto dag = matmul(64, 32, 16, DType::f32(), {}, /*relu=*/true);
  ASSERT_TRUE(dag.is_ok());
  EXPECT_EQ(dag->canonical_text(),
            "t0 = placeholder[64,16] float32\n"
            "t1 = placeholder[16,32] float32\n"
            "t2 = compute[64,32] float32 reduction (v0 v1 ) sum((t0[v0, v2]*t1[v2, v1]), axes=[v2:16])\n"
            "t3 = compute[64,32] float32 injective (v3 v4 ) max(t2[v3, v4], 0.0f)\n"
            "args: t0 t1 t3");
  EXPECT_EQ(dag->workload_key(), "cf362a14eb0999ec1ffd5f19d7680486");  // XXH3-128 since records schema 5
}

TEST(WorkloadKeyOf, IsXxh3Of128BitsAsThirtyTwoHexDigits) {
  // XXH3-128 of the empty input, seed 0 (xxHash's own test vector), high half first.
  EXPECT_EQ(workload_key_of(""), "99aa06d3014798d86001c324468d497f");
  const std::string h = workload_key_of("abc");
  EXPECT_EQ(h.size(), 32u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(h, workload_key_of("abc"));
  EXPECT_NE(h, workload_key_of("abd"));
}

// The keys of schema versions 1-4, kept for migrations: the value the
// matmul's key was pinned to before XXH3.
TEST(WorkloadKeyOf, TheLegacyKeyIsTheOldPinnedValue) {
  auto dag = matmul(64, 32, 16, DType::f32(), {}, /*relu=*/true);
  ASSERT_TRUE(dag.is_ok());
  EXPECT_EQ(legacy_workload_key_of(dag->canonical_text()), "2ab79eb1737b956f4ce92de4b900df2f");
  EXPECT_NE(legacy_workload_key_of(dag->canonical_text()), dag->workload_key());
}

}  // namespace
}  // namespace tessera
