#include "compiler/space/sketch/annotation.h"

#include <algorithm>
#include <climits>

#include "compiler/lower/infer_bounds.h"

namespace tessera {

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      out.push_back(p);
      n /= p;
    }
  if (n > 1) out.push_back(n);
  return out;
}

bool vector_friendly(int64_t extent, int lanes) {
  if (extent < 2 || extent > kMaxVectorLanes || lanes < 1) return false;
  return extent % lanes == 0 || lanes % extent == 0;
}

namespace {

// The chance that a producer whose tiles hang over the edge computes them
// whole (PadTileStep) rather than guarding their points; higher when it
// packs an input, whose panel is then padded too and copied in whole vectors
// (the gemm template's micro-kernel on prime shapes).
constexpr double kPadTileChance = 0.5, kPackedPadTileChance = 0.8;

// Each prime factor of n goes to a uniformly chosen level in [0, levels):
// every ordered factorization is reachable, and moving one prime between
// levels (the tile mutation) stays inside the same distribution.
void distribute(int64_t n, int levels, std::vector<int64_t>& f, SpaceRng& rng) {
  for (int64_t p : prime_factors(n)) f[rng.uniform(levels)] *= p;
}

// The tile sizes that need not divide the extent: each inner level drawn
// among nondividing_level_sizes, the outer level ceil(extent / inner). The
// last tile of each level is a remainder: a guard-free middle and a tail
// (partition_loops), a masked vector at the innermost (vectorize_loops).
std::vector<int64_t> nondividing_factors(int64_t extent, const TileVar& var, int registers, SpaceRng& rng) {
  const int levels = std::max(1, var.levels);
  std::vector<int64_t> f(levels, 1);
  int64_t inner = 1;
  for (int l = levels - 1; l >= 1; --l) {
    const std::vector<int64_t> sizes = nondividing_level_sizes(extent, var, l, inner, registers);
    f[l] = sizes.empty() ? 1 : rng.pick(sizes);
    inner *= f[l];
  }
  f[0] = (extent + inner - 1) / inner;
  return f;
}

// True when `extent` factors into tiles that suit the target: a lane
// multiple divides it (vector levels), or it has no prime factor above 16.
bool friendly_extent(int64_t extent, bool vector_inner, int lanes) {
  if (vector_inner) {
    for (int64_t m = lanes; m <= kMaxVectorLanes && m <= extent; m += lanes)
      if (extent % m == 0) return true;
    return extent < lanes && lanes % extent == 0;
  }
  return prime_factors(extent).back() <= 16;
}

}  // namespace

std::vector<int64_t> nondividing_level_sizes(int64_t extent, const TileVar& var, int level, int64_t others,
                                             int registers) {
  const int levels = std::max(1, var.levels);
  const bool innermost = level == levels - 1;
  std::vector<int64_t> sizes;
  auto fits = [&](int64_t size) { return size * others <= extent; };
  if (innermost && var.vector_inner && levels >= 2 && extent >= var.lanes) {
    // Whole vector registers, up to four.
    for (int64_t m = var.lanes; m <= std::min<int64_t>(kMaxVectorLanes, 4 * var.lanes) && m <= extent; m += var.lanes)
      if (others == 1 || fits(m)) sizes.push_back(m);
  } else if (var.reduce) {
    // A k block: long enough that the accumulators stay in registers for a
    // while (powers of two from 8), or the whole reduction when it fits.
    for (int64_t p = std::min<int64_t>(8, extent); p <= kMaxReduceTile && fits(p); p *= 2) sizes.push_back(p);
    if (extent <= kMaxReduceTile && fits(extent) && (sizes.empty() || sizes.back() != extent)) sizes.push_back(extent);
  } else if (innermost && levels >= 4 && !var.vector_inner) {
    // The rows of a register tile: each holds at least one vector of
    // accumulators, so at most half the registers.
    for (int64_t r : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32})
      if (r <= std::max(1, registers / 2) && fits(r)) sizes.push_back(r);
  } else {
    for (int64_t p = 1; p <= 64 && fits(p); p *= 2) sizes.push_back(p);
  }
  return sizes;
}

std::vector<int64_t> sample_tile_factors(int64_t extent, const TileVar& var, int registers,
                                         const SketchOptions& options, SpaceRng& rng) {
  const int lanes = var.lanes;
  const int levels = std::max(1, var.levels);
  std::vector<int64_t> f(levels, 1);
  if (extent <= 1) return f;
  const bool vector_inner = var.vector_inner && levels >= 2;
  // A prime above the register-tile sizes factors only as the whole extent
  // at one level (997 register rows): tiles that need not divide, always
  // (unless the options turn them off).
  const bool prime = extent > 16 && prime_factors(extent).size() == 1;
  const double nondividing = prime && options.unfriendly_nondividing_chance > 0 ? 1.0
                             : friendly_extent(extent, vector_inner, lanes)     ? options.nondividing_chance
                                                                                : options.unfriendly_nondividing_chance;
  if (levels >= 2 && rng.chance(nondividing)) return nondividing_factors(extent, var, registers, rng);
  if (!var.vector_inner || levels < 2) {
    distribute(extent, levels, f, rng);
    return f;
  }
  int64_t inner = 0, rest = extent;
  if (rng.chance(options.vector_bias)) {
    // Lane multiples that divide the extent (the whole extent when it is
    // shorter than a vector).
    std::vector<int64_t> candidates;
    for (int64_t d = 1; d <= std::min<int64_t>(extent, kMaxVectorLanes); ++d)
      if (extent % d == 0 && vector_friendly(d, lanes) && d >= std::min<int64_t>(lanes, extent))
        candidates.push_back(d);
    if (!candidates.empty()) {
      inner = rng.pick(candidates);
      rest = extent / inner;
    }
  }
  if (inner > 0) {
    f.back() = inner;
    distribute(rest, levels - 1, f, rng);
    return f;
  }
  distribute(extent, levels, f, rng);
  // A vectorized level wider than the lowering's limit is never useful.
  while (f.back() > kMaxVectorLanes) {
    const int64_t p = prime_factors(f.back()).front();
    f.back() /= p;
    f[rng.uniform(levels - 1)] *= p;
  }
  return f;
}

namespace {

// The tile variable of a tiled plan's vector axis: its last split spatial axis.
int vector_var(const StagePlan& plan, size_t spatial_axes) {
  int var = -1;
  for (size_t a = 0; a < spatial_axes; ++a)
    if (plan.tiles[a] >= 0) var = plan.tiles[a];
  return var;
}

class Annotator {
 public:
  Annotator(const std::shared_ptr<const ComputeDAG>& dag, const Sketch& sketch, const Target& target,
            const SketchOptions& options, SketchDecisions& d, SpaceRng& rng)
      : state_(dag),
        sketch_(sketch),
        target_(target),
        options_(options),
        d_(d),
        rng_(rng),
        unroll_steps_(options.unroll_steps.empty() ? default_unroll_steps(target) : options.unroll_steps) {}

  Result<State> run() {
    for (const SketchStructureStep& s : sketch_.structure) TESSERA_RETURN_IF_ERROR(structure(s));
    for (size_t p = 0; p < sketch_.plans.size(); ++p) {
      const int plan = static_cast<int>(p);
      switch (sketch_.plans[p].rule) {
        case StageRule::kInline:
        case StageRule::kFusedProducer: break;  // the consumer schedules its producer
        case StageRule::kTiled: TESSERA_RETURN_IF_ERROR(tiled(plan)); break;
        case StageRule::kFusedConsumer: TESSERA_RETURN_IF_ERROR(fused(plan)); break;
        case StageRule::kSimple: TESSERA_RETURN_IF_ERROR(simple(plan)); break;
      }
    }
    return std::move(state_);
  }

 private:
  Status structure(const SketchStructureStep& s);
  Status tiled(int p);
  Status fused(int p);
  Status simple(int p);

  Result<int> stage(const SketchStageRef& ref) const {
    int s = resolve_stage(state_, ref);
    if (s < 0) return Status(ErrorCode::kInternal, "sketch annotation: a planned stage is missing");
    return s;
  }
  int lanes_of(int stage) const { return target_.vector_lanes(state_.stage(stage).tensor->dtype); }
  std::vector<int64_t> tile(int var, int64_t extent);
  Status split(int stage, const Var& axis, const std::vector<int64_t>& factors, std::vector<Var>* pieces);
  Status reorder(int stage, const std::vector<Var>& order);
  Status parallelize(int p, int stage, int leading);
  Status vectorize_innermost(int stage);
  Status unroll(int p, int stage);
  Status pack(int p, const Var& at, int64_t vector_extent, bool padded);
  std::vector<std::pair<int, int>> location_candidates(int stage) const;

  State state_;
  const Sketch& sketch_;
  const Target& target_;
  const SketchOptions& options_;
  SketchDecisions& d_;
  SpaceRng& rng_;
  std::vector<int64_t> unroll_steps_;
};

std::vector<int64_t> Annotator::tile(int var, int64_t extent) {
  std::vector<int64_t>& f = d_.tiles[var];
  const TileVar& tv = sketch_.tiles[var];
  // Stale when made for another extent (a moved stage) or malformed.
  bool stale = static_cast<int>(f.size()) != tv.levels || d_.tile_extents[var] != extent || product_of(f) < extent;
  for (int64_t x : f) stale = stale || x < 1;
  if (stale) {
    f = sample_tile_factors(extent, tv, target_.vector_registers(), options_, rng_);
    d_.tile_extents[var] = extent;
  }
  return f;
}

Status Annotator::split(int stage, const Var& axis, const std::vector<int64_t>& factors, std::vector<Var>* pieces) {
  const int at = state_.stage(stage).iter_index(axis);
  if (at < 0) return Status(ErrorCode::kInternal, "sketch annotation: loop " + axis.name() + " is gone");
  TESSERA_RETURN_IF_ERROR(state_.split(stage, at, factors));
  pieces->clear();
  for (size_t l = 0; l <= factors.size(); ++l) pieces->push_back(state_.stage(stage).iters[at + l].var);
  return Status::ok();
}

Status Annotator::reorder(int stage, const std::vector<Var>& order) {
  const Stage& st = state_.stage(stage);
  if (order.size() != st.iters.size())
    return Status(ErrorCode::kInternal, "sketch annotation: a reorder of " + st.name() + " misses loops");
  std::vector<int> perm;
  bool identity = true;
  for (const Var& v : order) {
    perm.push_back(st.iter_index(v));
    identity = identity && perm.back() == static_cast<int>(perm.size()) - 1;
  }
  return identity ? Status::ok() : state_.reorder(stage, perm);
}

Status Annotator::parallelize(int p, int stage, int leading) {
  d_.parallel_options[p] = leading;
  if (leading <= 0) {
    d_.parallel[p] = 0;
    return Status::ok();
  }
  int k = d_.parallel[p];
  if (k < 1 || k > leading) {
    const int64_t cores = target_.num_cores, max_tasks = 16 * cores;
    const auto& iters = state_.stage(stage).iters;
    std::vector<int64_t> prefix(leading + 1, 1);
    for (int i = 0; i < leading; ++i) prefix[i + 1] = prefix[i] * iters[i].extent;
    int kmin = leading;
    for (int i = 1; i <= leading; ++i)
      if (prefix[i] >= cores) {
        kmin = i;
        break;
      }
    int kmax = kmin;
    while (kmax < leading && prefix[kmax] < max_tasks) ++kmax;
    k = kmin + static_cast<int>(rng_.uniform(kmax - kmin + 1));
    d_.parallel[p] = k;
  }
  if (k >= 2) {
    std::vector<int> loops(k);
    for (int i = 0; i < k; ++i) loops[i] = i;
    TESSERA_RETURN_IF_ERROR(state_.fuse(stage, loops));
  }
  return state_.parallel(stage, 0);
}

Status Annotator::vectorize_innermost(int stage) {
  const Stage& st = state_.stage(stage);
  if (st.iters.empty()) return Status::ok();
  const Iter& last = st.iters.back();
  if (last.kind != IterKind::kSpatial || last.annotation != IterAnnotation::kNone) return Status::ok();
  if (!vector_friendly(last.extent, lanes_of(stage))) return Status::ok();
  return state_.vectorize(stage, static_cast<int>(st.iters.size()) - 1);
}

Status Annotator::unroll(int p, int stage) {
  if (!sketch_.plans[p].unrolls || state_.stage(stage).iters.empty()) return Status::ok();
  int64_t v = d_.unroll[p];
  if (std::find(unroll_steps_.begin(), unroll_steps_.end(), v) == unroll_steps_.end()) {
    v = rng_.pick(unroll_steps_);
    d_.unroll[p] = v;
  }
  return v > 0 ? state_.pragma_auto_unroll(stage, 0, v) : Status::ok();
}

// Copies each packed input's panel (the region one vector-axis S2 iteration
// reads) into a local buffer at that loop, vectorized along the vector axis.
// A `padded` stage (PadTileStep) computes whole tiles past the edge; its
// panel is padded with it, so that the copy and the micro-kernel's loads stay
// whole vectors (an unpadded panel of a padded tile guards its copy, and ran
// the prime matmul at half the speed of the guarded tiles).
Status Annotator::pack(int p, const Var& at, int64_t vector_extent, bool padded) {
  const StagePlan& plan = sketch_.plans[p];
  for (int input : plan.packed) {
    TESSERA_ASSIGN_OR_RETURN(int source, stage(SketchStageRef{input, SketchStageRef::Kind::kTensor}));
    TESSERA_ASSIGN_OR_RETURN(int x, stage(plan.stage));
    TESSERA_RETURN_IF_ERROR(state_.cache_read(source, {x}));
    TESSERA_ASSIGN_OR_RETURN(int panel, stage(SketchStageRef{input, SketchStageRef::Kind::kCacheRead}));
    TESSERA_ASSIGN_OR_RETURN(x, stage(plan.stage));
    TESSERA_RETURN_IF_ERROR(state_.compute_at(panel, x, state_.stage(x).iter_index(at)));
    if (padded) TESSERA_RETURN_IF_ERROR(state_.pad_tile(panel));
    const int last = static_cast<int>(state_.stage(panel).iters.size()) - 1;
    if (last >= 0 && vector_friendly(vector_extent, lanes_of(panel)))
      TESSERA_RETURN_IF_ERROR(state_.vectorize(panel, last));
  }
  return Status::ok();
}

Status Annotator::structure(const SketchStructureStep& s) {
  TESSERA_ASSIGN_OR_RETURN(int x, stage(s.stage));
  switch (s.kind) {
    case SketchStructureStep::Kind::kCacheWrite: return state_.cache_write(x);
    case SketchStructureStep::Kind::kInline: return state_.compute_inline(x);
    case SketchStructureStep::Kind::kRfactor: {
      const int64_t extent = state_.stage(x).reduce_axes[s.axis]->extent;
      return state_.rfactor(x, s.axis, tile(s.tile, extent).back());
    }
  }
  return Status::ok();
}

// SSRSRS at the root: S0 S1 R0 S2 R1 S3, with axes of extent 1 left in front.
Status Annotator::tiled(int p) {
  const StagePlan& plan = sketch_.plans[p];
  TESSERA_ASSIGN_OR_RETURN(int x, stage(plan.stage));
  const std::vector<IterVar> axes = state_.stage(x).axes, reduce = state_.stage(x).reduce_axes;
  std::vector<Var> front, s0, s1, s2, s3, r0, r1, pc;
  for (size_t a = 0; a < axes.size(); ++a) {
    const int var = plan.tiles[a];
    if (var < 0) {
      front.push_back(axes[a]->var);
      continue;
    }
    std::vector<int64_t> f = tile(var, axes[a]->extent);
    TESSERA_RETURN_IF_ERROR(split(x, axes[a]->var, {f[1], f[2], f[3]}, &pc));
    s0.push_back(pc[0]);
    s1.push_back(pc[1]);
    s2.push_back(pc[2]);
    s3.push_back(pc[3]);
  }
  for (size_t r = 0; r < reduce.size(); ++r) {
    const int var = plan.tiles[axes.size() + r];
    if (var < 0) {
      r0.push_back(reduce[r]->var);
      continue;
    }
    std::vector<int64_t> f = tile(var, reduce[r]->extent);
    TESSERA_RETURN_IF_ERROR(split(x, reduce[r]->var, {f[1]}, &pc));
    r0.push_back(pc[0]);
    r1.push_back(pc[1]);
  }
  // Packing: the vector axis' S2 loop comes first in S2, so its panel is
  // reused by every other S2 iteration.
  if (!plan.packed.empty()) std::rotate(s2.begin(), s2.end() - 1, s2.end());
  std::vector<Var> order = front;
  for (const auto* level : {&s0, &s1, &r0, &s2, &r1, &s3}) order.insert(order.end(), level->begin(), level->end());
  TESSERA_RETURN_IF_ERROR(reorder(x, order));
  TESSERA_RETURN_IF_ERROR(parallelize(p, x, static_cast<int>(front.size() + s0.size() + s1.size())));
  if (!plan.packed.empty()) {
    TESSERA_RETURN_IF_ERROR(pack(p, s2.front(), d_.tiles[vector_var(plan, axes.size())][3], /*padded=*/false));
    TESSERA_ASSIGN_OR_RETURN(x, stage(plan.stage));
  }
  TESSERA_RETURN_IF_ERROR(vectorize_innermost(x));
  return unroll(p, x);
}

// The consumer keeps S0 S1 and an inner loop per axis; its producer is
// computed at the last outer loop and tiled R0 S2 R1 S3 over that tile, so
// one tile variable (S0 S1 S2 S3) covers both stages' splits of an axis.
Status Annotator::fused(int p) {
  const StagePlan& plan = sketch_.plans[p];
  const int q = plan.partner;
  const StagePlan& producer = sketch_.plans[q];
  TESSERA_ASSIGN_OR_RETURN(int y, stage(plan.stage));
  TESSERA_ASSIGN_OR_RETURN(int x, stage(producer.stage));
  const std::vector<IterVar> y_axes = state_.stage(y).axes;
  std::vector<Var> front, s0, s1, inner, pc;
  bool overhangs = false;  // a tile of the producer hangs over the tensor's edge
  for (size_t a = 0; a < y_axes.size(); ++a) {
    const int var = producer.tiles[a];
    if (var < 0) {
      front.push_back(y_axes[a]->var);
      continue;
    }
    std::vector<int64_t> f = tile(var, y_axes[a]->extent);
    overhangs |= f[0] * f[1] * f[2] * f[3] != y_axes[a]->extent;
    TESSERA_RETURN_IF_ERROR(split(y, y_axes[a]->var, {f[1], f[2] * f[3]}, &pc));
    s0.push_back(pc[0]);
    s1.push_back(pc[1]);
    inner.push_back(pc[2]);
  }
  std::vector<Var> order = front;
  for (const auto* level : {&s0, &s1, &inner}) order.insert(order.end(), level->begin(), level->end());
  TESSERA_RETURN_IF_ERROR(reorder(y, order));
  const Var attach = !s1.empty() ? s1.back() : !s0.empty() ? s0.back() : front.back();
  TESSERA_RETURN_IF_ERROR(parallelize(p, y, static_cast<int>(front.size() + s0.size() + s1.size())));
  // A fused parallel loop swallowed the attach loop: attach at the fused one.
  const int at = std::max(0, state_.stage(y).iter_index(attach));
  TESSERA_RETURN_IF_ERROR(state_.compute_at(x, y, at));
  TESSERA_ASSIGN_OR_RETURN(x, stage(producer.stage));
  // Where tiles hang over the edge: guarded points, or whole padded tiles.
  const double pad_chance = producer.packed.empty() ? kPadTileChance : kPackedPadTileChance;
  if (d_.pad[p] < 0) d_.pad[p] = overhangs && rng_.chance(pad_chance) ? 1 : 0;
  if (d_.pad[p] > 0) TESSERA_RETURN_IF_ERROR(state_.pad_tile(x));

  const std::vector<IterVar> axes = state_.stage(x).axes, reduce = state_.stage(x).reduce_axes;
  std::vector<Var> x_front, r0, s2, r1, s3;
  for (size_t a = 0; a < axes.size(); ++a) {
    const int var = producer.tiles[a];
    if (var < 0) {
      x_front.push_back(axes[a]->var);
      continue;
    }
    TESSERA_RETURN_IF_ERROR(split(x, axes[a]->var, {d_.tiles[var][3]}, &pc));
    s2.push_back(pc[0]);
    s3.push_back(pc[1]);
  }
  for (size_t r = 0; r < reduce.size(); ++r) {
    const int var = producer.tiles[axes.size() + r];
    if (var < 0) {
      r0.push_back(reduce[r]->var);
      continue;
    }
    std::vector<int64_t> f = tile(var, reduce[r]->extent);
    TESSERA_RETURN_IF_ERROR(split(x, reduce[r]->var, {f[1]}, &pc));
    r0.push_back(pc[0]);
    r1.push_back(pc[1]);
  }
  if (!producer.packed.empty()) std::rotate(s2.begin(), s2.end() - 1, s2.end());
  order = x_front;
  for (const auto* level : {&r0, &s2, &r1, &s3}) order.insert(order.end(), level->begin(), level->end());
  TESSERA_RETURN_IF_ERROR(reorder(x, order));
  if (!producer.packed.empty()) {
    TESSERA_RETURN_IF_ERROR(pack(q, s2.front(), d_.tiles[vector_var(producer, axes.size())][3], d_.pad[p] > 0));
    TESSERA_ASSIGN_OR_RETURN(x, stage(producer.stage));
  }
  TESSERA_RETURN_IF_ERROR(vectorize_innermost(x));
  TESSERA_RETURN_IF_ERROR(unroll(q, x));
  return vectorize_innermost(y);
}

// Where stage s may be computed: loops of its one consumer (through inlined
// stages), or, with several consumers, of the one the others are computed
// at, no deeper than they are. Loops inside a reduction or vectorized are
// never candidates.
std::vector<std::pair<int, int>> Annotator::location_candidates(int s) const {
  std::vector<int> consumers, frontier = consumers_of(state_, s);
  while (!frontier.empty()) {
    const int c = frontier.back();
    frontier.pop_back();
    if (state_.stage(c).location == ComputeLocation::kInline) {
      for (int cc : consumers_of(state_, c)) frontier.push_back(cc);
    } else if (std::find(consumers.begin(), consumers.end(), c) == consumers.end()) {
      consumers.push_back(c);
    }
  }
  int target = consumers.size() == 1 ? consumers[0] : -1, limit = INT_MAX;
  for (size_t i = 0; i < consumers.size() && target < 0 && consumers.size() > 1; ++i) {
    const int c = consumers[i];
    int deepest = INT_MAX;
    bool all_inside = true;
    for (int o : consumers) {
      if (o == c) continue;
      const Stage& os = state_.stage(o);
      if (os.location != ComputeLocation::kAt || os.attach_stage != c) {
        all_inside = false;
        break;
      }
      deepest = std::min(deepest, state_.stage(c).iter_index(os.attach_var));
    }
    if (all_inside) {
      target = c;
      limit = deepest;
    }
  }
  std::vector<std::pair<int, int>> out;
  if (target < 0) return out;
  const Stage& t = state_.stage(target);
  for (int i = 0; i < static_cast<int>(t.iters.size()) && i <= limit; ++i) {
    if (t.iters[i].kind == IterKind::kReduce) break;
    if (t.iters[i].annotation == IterAnnotation::kVectorize) continue;
    out.emplace_back(target, i);
  }
  return out;
}

// Loops kept; a movable stage first takes its compute location, then splits
// its vector axis over the region it covers there; a root one runs its
// leading spatial loops in parallel.
Status Annotator::simple(int p) {
  const StagePlan& plan = sketch_.plans[p];
  TESSERA_ASSIGN_OR_RETURN(int x, stage(plan.stage));
  bool attached = false;
  d_.location_options[p] = 0;
  if (plan.movable) {
    const auto candidates = location_candidates(x);
    const int n = static_cast<int>(candidates.size());
    d_.location_options[p] = n;
    int loc = d_.location[p];
    if (loc < 0 || loc > n) {
      loc = static_cast<int>(rng_.uniform(n + 1));
      d_.location[p] = loc;
    }
    if (loc > 0) {
      TESSERA_RETURN_IF_ERROR(state_.compute_at(x, candidates[loc - 1].first, candidates[loc - 1].second));
      attached = true;
    }
  }
  std::vector<Var> pieces;
  if (plan.vector_axis >= 0 && !plan.tiles.empty()) {
    const Var axis = state_.stage(x).axes[plan.vector_axis]->var;
    const int at = state_.stage(x).iter_index(axis);
    int64_t extent = state_.stage(x).iters[at].extent;
    if (attached) {
      TESSERA_ASSIGN_OR_RETURN(State bounded, infer_bounds(state_));
      extent = bounded.stage(x).iters[at].extent;
    }
    // Recorded even for one column, so the decision says what it covers.
    std::vector<int64_t> f = tile(plan.tiles[0], extent);
    if (f[1] > 1) TESSERA_RETURN_IF_ERROR(split(x, axis, {f[1]}, &pieces));
  }
  const auto& iters = state_.stage(x).iters;
  const bool has_reduce = !state_.stage(x).reduce_axes.empty();
  if (!pieces.empty() && has_reduce) {
    // Spatial loops, the reduction, then the vector loop innermost. Partial
    // sums of an rfactor computed at the final sum's loop (a matrix-vector
    // product) also take the outer piece of their vector axis inside the
    // reduction: the input is then read in order (k = ko * F + f), not in
    // F / lanes strided passes; a root one keeps it outside, in the
    // parallel loop.
    const bool inner_outer = attached && plan.stage.kind == SketchStageRef::Kind::kRfactor;
    std::vector<Var> spatial, red;
    for (const Iter& it : iters) {
      if (it.var.same_as(pieces[1]) || (inner_outer && it.var.same_as(pieces[0]))) continue;
      (it.kind == IterKind::kReduce ? red : spatial).push_back(it.var);
    }
    spatial.insert(spatial.end(), red.begin(), red.end());
    if (inner_outer) spatial.push_back(pieces[0]);
    spatial.push_back(pieces[1]);
    TESSERA_RETURN_IF_ERROR(reorder(x, spatial));
  }
  if (!attached) {
    const auto& its = state_.stage(x).iters;
    int leading = 0;
    while (leading < static_cast<int>(its.size()) && its[leading].kind == IterKind::kSpatial) ++leading;
    // Keep the innermost loop for vectors when nothing follows it.
    if (leading == static_cast<int>(its.size()) && leading > 0 &&
        (!pieces.empty() || vector_friendly(its.back().extent, lanes_of(x))))
      --leading;
    TESSERA_RETURN_IF_ERROR(parallelize(p, x, leading));
  }
  TESSERA_RETURN_IF_ERROR(vectorize_innermost(x));
  return unroll(p, x);
}

}  // namespace

Result<State> annotate_sketch(const std::shared_ptr<const ComputeDAG>& dag, const Sketch& sketch, const Target& target,
                              const SketchOptions& options, SketchDecisions* decisions, SpaceRng& rng) {
  SketchDecisions& d = *decisions;
  if (d.tiles.size() != sketch.tiles.size() || d.parallel.size() != sketch.plans.size())
    d = SketchDecisions::unset(sketch);
  auto result = Annotator(dag, sketch, target, options, d, rng).run();
  if (!result.is_ok()) return result.status().with_context("annotating sketch '" + sketch.description + "'");
  return result;
}

}  // namespace tessera
