// Small DAGs and schedules shared by the tests of the lowering passes.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "compiler/ir/op.h"
#include "compiler/lower/allocate_buffers.h"
#include "compiler/lower/infer_bounds.h"
#include "compiler/lower/inline_stages.h"
#include "compiler/lower/place_guards.h"
#include "compiler/schedule/state.h"
#include "compiler/te/compute_dag.h"

namespace tessera::test {

/// C[i, j] = sum_k A[i, k] * B[k, j].
inline std::shared_ptr<const ComputeDAG> matmul_dag(int64_t m, int64_t n, int64_t k) {
  Tensor a = placeholder({m, k}, DType::f32(), "A");
  Tensor b = placeholder({k, n}, DType::f32(), "B");
  IterVar r = reduce_axis(k, "k");
  Tensor c = compute(
      {m, n},
      [&](const Vars& i) {
        return sum(read(a, {i[0], r->var}) * read(b, {r->var, i[1]}), {r});
      },
      "C");
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
}

/// B[i] = A[i] + 1; C[i] = B[i] * 2: a producer to inline or attach.
inline std::shared_ptr<const ComputeDAG> chain_dag(int64_t n) {
  Tensor a = placeholder({n}, DType::f32(), "A");
  Tensor b = compute(
      {n}, [&](const Vars& i) { return read(a, {i[0]}) + 1.0f; }, "B");
  Tensor c = compute(
      {n}, [&](const Vars& i) { return read(b, {i[0]}) * 2.0f; }, "C");
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({a, c}).value());
}

/// B[i] = A[i] + 1; C[i] = B[i] + B[i + 1]: a consumer that reads a window.
inline std::shared_ptr<const ComputeDAG> window_dag(int64_t n) {
  Tensor a = placeholder({n + 1}, DType::f32(), "A");
  Tensor b = compute(
      {n + 1}, [&](const Vars& i) { return read(a, {i[0]}) + 1.0f; }, "B");
  Tensor c = compute(
      {n}, [&](const Vars& i) { return read(b, {i[0]}) + read(b, {i[0] + 1}); }, "C");
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({a, c}).value());
}

/// chain_dag(n) with C split by `factor` and B computed at C's outer loop.
inline State chain_at_outer(int64_t n, int64_t factor) {
  State s(chain_dag(n));
  const int c = s.stage_index("C");
  EXPECT_TRUE(s.split(c, 0, {factor}).is_ok());
  EXPECT_TRUE(s.compute_at(s.stage_index("B"), c, 0).is_ok());
  return s;
}

/// The plan of `state` after every schedule-level pass (through place_guards);
/// it points into `state`, which must outlive it.
inline LoweringPlan full_plan(const State& state) {
  LoweringPlan plan = inline_stages(state).value();
  plan = infer_bounds(std::move(plan)).value();
  plan = allocate_buffers(std::move(plan)).value();
  return place_guards(std::move(plan)).value();
}

}  // namespace tessera::test
