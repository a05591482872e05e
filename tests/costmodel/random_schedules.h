// Random but valid schedules of a reduction operator (matmul, conv2d), for
// the cost model's tests and benchmark. Not a search space: a small,
// self-contained generator so that costmodel/ can be tested before and apart
// from compiler/space.
//
// Two shapes, chosen at random:
//  - direct: every spatial loop split in three, every reduce loop in two,
//    the outermost spatial tile first, the other loops shuffled; parallel,
//    vectorize, unroll and an auto-unroll hint at random;
//  - cached: cache_write of the output, the output tiled and parallel over
//    its outer tiles, the local accumulator computed at the tile and split,
//    reordered and annotated at random (the shape of a good CPU kernel).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/lower/infer_bounds.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/linalg.h"
#include "compiler/schedule/state.h"

namespace tessera::costmodel::testing {

/// C = A x B for A: m x k, B: k x n (float32).
inline std::shared_ptr<const ComputeDAG> matmul_dag(int64_t m, int64_t n, int64_t k) {
  Tensor a = placeholder({m, k}, DType::f32(), "A");
  Tensor b = placeholder({k, n}, DType::f32(), "B");
  Tensor c = ops::matmul(a, b, "C").value();
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
}

/// A 3x3 convolution, NCHW, batch 1, stride 1, padding 1 (with its pad stage).
inline std::shared_ptr<const ComputeDAG> conv_dag(int64_t c, int64_t hw, int64_t k) {
  Tensor x = placeholder({1, c, hw, hw}, DType::f32(), "X");
  Tensor w = placeholder({k, c, 3, 3}, DType::f32(), "W");
  Tensor y = ops::conv2d_nchw(x, w, 1, 1).value();
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({x, w, y}).value());
}

/// A uniformly chosen divisor of n (n >= 1), at most `limit`.
inline int64_t random_divisor(int64_t n, std::mt19937_64& rng, int64_t limit = 1 << 30) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= n && d <= limit; ++d)
    if (n % d == 0) divisors.push_back(d);
  return divisors[std::uniform_int_distribution<size_t>(0, divisors.size() - 1)(rng)];
}

inline bool coin(std::mt19937_64& rng, double p) {
  return std::bernoulli_distribution(p)(rng);
}

/// Index of the stage with reduce axes (the operator's main computation), or -1.
inline int main_stage(const State& s) {
  for (int i = 0; i < static_cast<int>(s.stages().size()); ++i)
    if (!s.stage(i).is_placeholder() && !s.stage(i).reduce_axes.empty()) return i;
  return -1;
}

namespace detail {

// Annotates the loops of `stage` at random: the first loop parallel (when
// spatial and `allow_parallel`), the innermost vectorized (when spatial and
// short), one of the inner loops unrolled.
inline Status annotate_randomly(State& s, int stage, std::mt19937_64& rng, bool allow_parallel) {
  const auto& iters = s.stage(stage).iters;
  const int n = static_cast<int>(iters.size());
  if (allow_parallel && n > 0 && iters[0].kind == IterKind::kSpatial && iters[0].extent > 1 && coin(rng, 0.8))
    TESSERA_RETURN_IF_ERROR(s.parallel(stage, 0));
  bool vectorized = false;
  if (n > 1 && iters[n - 1].kind == IterKind::kSpatial && iters[n - 1].extent <= 64 && coin(rng, 0.75)) {
    TESSERA_RETURN_IF_ERROR(s.vectorize(stage, n - 1));
    vectorized = true;
  }
  if (coin(rng, 0.5)) {
    const int last = n - 1 - (vectorized ? 1 : 0);
    const int pick = last - std::uniform_int_distribution<int>(0, 1)(rng);
    if (pick >= 1 && pick <= last && s.stage(stage).iters[pick].extent <= 16 &&
        s.stage(stage).iters[pick].annotation == IterAnnotation::kNone)
      TESSERA_RETURN_IF_ERROR(s.unroll(stage, pick));
  }
  if (n > 0 && coin(rng, 0.3)) {
    const int64_t steps[] = {16, 64, 512};
    TESSERA_RETURN_IF_ERROR(s.pragma_auto_unroll(stage, 0, steps[std::uniform_int_distribution<int>(0, 2)(rng)]));
  }
  return Status::ok();
}

inline Status direct(State& s, int stage, std::mt19937_64& rng) {
  const Stage& st = s.stage(stage);
  const int spatial = static_cast<int>(st.axes.size());
  const int reduce = static_cast<int>(st.reduce_axes.size());
  // Split from the last loop so the earlier indices stay put.
  for (int i = spatial + reduce - 1; i >= 0; --i) {
    const int64_t extent = s.stage(stage).iters[i].extent;
    if (i >= spatial) {
      TESSERA_RETURN_IF_ERROR(s.split(stage, i, {random_divisor(extent, rng, 64)}));
    } else {
      const int64_t inner = random_divisor(extent, rng, 64);
      TESSERA_RETURN_IF_ERROR(s.split(stage, i, {random_divisor(extent / inner, rng), inner}));
    }
  }
  // Loops now: per spatial axis 3 pieces, then per reduce axis 2 pieces.
  std::vector<int> outer, rest;
  for (int i = 0; i < spatial; ++i) {
    outer.push_back(3 * i);
    rest.push_back(3 * i + 1);
    rest.push_back(3 * i + 2);
  }
  for (int i = 0; i < 2 * reduce; ++i) rest.push_back(3 * spatial + i);
  std::shuffle(rest.begin(), rest.end(), rng);
  std::vector<int> order = outer;
  order.insert(order.end(), rest.begin(), rest.end());
  TESSERA_RETURN_IF_ERROR(s.reorder(stage, order));
  if (spatial > 1 && coin(rng, 0.5)) {
    std::vector<int> first(spatial);
    for (int i = 0; i < spatial; ++i) first[i] = i;
    TESSERA_RETURN_IF_ERROR(s.fuse(stage, first));
  }
  return annotate_randomly(s, stage, rng, true);
}

inline Status cached(State& s, int stage, std::mt19937_64& rng) {
  const std::string name = s.stage(stage).name();
  TESSERA_RETURN_IF_ERROR(s.cache_write(stage));
  const int out = s.stage_index(name);
  const int local = s.stage_index(name + ".local");
  const int spatial = static_cast<int>(s.stage(out).axes.size());
  std::vector<int> axes(spatial);
  std::vector<std::vector<int64_t>> factors(spatial);
  for (int i = 0; i < spatial; ++i) {
    axes[i] = i;
    factors[i] = {random_divisor(s.stage(out).iters[i].extent, rng, 128)};
  }
  TESSERA_RETURN_IF_ERROR(s.tile(out, axes, factors));
  int attach = spatial - 1;  // the innermost outer tile
  if (spatial > 1 && coin(rng, 0.6)) {
    TESSERA_RETURN_IF_ERROR(s.fuse(out, axes));
    attach = 0;
  }
  TESSERA_RETURN_IF_ERROR(s.parallel(out, 0));
  const int n_out = static_cast<int>(s.stage(out).iters.size());
  if (s.stage(out).iters[n_out - 1].extent <= 64 && coin(rng, 0.8))
    TESSERA_RETURN_IF_ERROR(s.vectorize(out, n_out - 1));
  TESSERA_RETURN_IF_ERROR(s.compute_at(local, out, attach));

  // The local stage's loops now cover one tile; split them there.
  TESSERA_ASSIGN_OR_RETURN(State bounded, infer_bounds(s));
  const int n = static_cast<int>(bounded.stage(local).iters.size());
  for (int i = n - 1; i >= 0; --i) {
    const int64_t extent = bounded.stage(local).iters[i].extent;
    TESSERA_RETURN_IF_ERROR(s.split(local, i, {random_divisor(extent, rng, 64)}));
  }
  // Pieces: 2 per loop, spatial loops first. Outer pieces first (reduce outer
  // ones shuffled among them), then the inner pieces shuffled, with the
  // innermost spatial piece last most of the time (so it can be vectorized).
  std::vector<int> outer, inner;
  for (int i = 0; i < n; ++i) {
    outer.push_back(2 * i);
    inner.push_back(2 * i + 1);
  }
  std::shuffle(outer.begin(), outer.end(), rng);
  const int last_spatial = 2 * (spatial - 1) + 1;
  inner.erase(std::find(inner.begin(), inner.end(), last_spatial));
  std::shuffle(inner.begin(), inner.end(), rng);
  if (coin(rng, 0.8)) {
    inner.push_back(last_spatial);
  } else {
    inner.insert(inner.begin(), last_spatial);
  }
  std::vector<int> order = outer;
  order.insert(order.end(), inner.begin(), inner.end());
  TESSERA_RETURN_IF_ERROR(s.reorder(local, order));
  return annotate_randomly(s, local, rng, false);
}

}  // namespace detail

/// A random schedule of `dag`'s reduction stage; stages before it (padding)
/// are inlined at random. May still fail to lower (the caller skips those):
/// the generator checks steps, not every lowering limit.
inline Result<State> random_schedule(std::shared_ptr<const ComputeDAG> dag, std::mt19937_64& rng) {
  State s(std::move(dag));
  const int stage = main_stage(s);
  if (stage < 0) return Status(ErrorCode::kInvalidArgument, "random_schedule: no reduction stage");
  for (int i = 0; i < stage; ++i) {
    if (!s.stage(i).is_placeholder() && coin(rng, 0.7)) TESSERA_RETURN_IF_ERROR(s.compute_inline(i));
  }
  if (coin(rng, 0.5)) {
    TESSERA_RETURN_IF_ERROR(detail::cached(s, stage, rng));
  } else {
    TESSERA_RETURN_IF_ERROR(detail::direct(s, stage, rng));
  }
  return s;
}

}  // namespace tessera::costmodel::testing
