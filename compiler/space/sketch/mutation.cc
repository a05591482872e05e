#include "compiler/space/sketch/mutation.h"

#include <algorithm>

#include "compiler/lower/infer_bounds.h"
#include "compiler/lower/lower.h"
#include "compiler/space/sketch/annotation.h"
#include "compiler/space/sketch/sketch_space.h"

namespace tessera {
namespace {

// Changes of one kind tried before the mutation reports "not applicable".
constexpr int kAttempts = 8;

std::vector<int64_t> unroll_steps_of(const SketchSpace& space) {
  return space.options().unroll_steps.empty() ? default_unroll_steps(space.target()) : space.options().unroll_steps;
}

bool decisions_fit(const Sketch& sk, const SketchDecisions& d) {
  return d.tiles.size() == sk.tiles.size() && d.parallel.size() == sk.plans.size() &&
         d.unroll.size() == sk.plans.size() && d.location.size() == sk.plans.size();
}

// The decisions each kind may change, as (index) lists.
std::vector<int> tile_candidates(const SketchDecisions& d) {
  std::vector<int> out;
  for (size_t t = 0; t < d.tiles.size(); ++t) {
    const auto& f = d.tiles[t];
    if (f.size() >= 2 && std::any_of(f.begin(), f.end(), [](int64_t x) { return x > 1; }))
      out.push_back(static_cast<int>(t));
  }
  return out;
}

std::vector<int> parallel_candidates(const SketchDecisions& d) {
  std::vector<int> out;
  for (size_t p = 0; p < d.parallel.size(); ++p)
    if (d.parallel[p] >= 1 && d.parallel_options[p] >= 2) out.push_back(static_cast<int>(p));
  return out;
}

std::vector<int> unroll_candidates(const Sketch& sk, const SketchDecisions& d, size_t steps) {
  std::vector<int> out;
  if (steps < 2) return out;
  for (size_t p = 0; p < d.unroll.size(); ++p)
    if (sk.plans[p].unrolls && d.unroll[p] >= 0) out.push_back(static_cast<int>(p));
  return out;
}

std::vector<int> location_candidates(const SketchDecisions& d) {
  std::vector<int> out;
  for (size_t p = 0; p < d.location.size(); ++p)
    if (d.location_options[p] >= 1 && d.location[p] >= 0) out.push_back(static_cast<int>(p));
  return out;
}

// A value in [lo, hi] other than `current`; hi > lo.
int64_t other_value(int64_t lo, int64_t hi, int64_t current, SpaceRng& rng) {
  int64_t v = lo + rng.uniform(hi - lo);
  return v >= current && current >= lo && current <= hi ? v + 1 : v;
}

// Tiles that need not divide (their product passes the extent): one inner
// level takes another size that suits the target, and the outer level
// covers the extent again. Moving a divisor would keep the product, so the
// padded work could only grow.
bool resize_nondividing_level(const TileVar& var, int64_t extent, int registers, std::vector<int64_t>& f,
                              SpaceRng& rng) {
  const int l = 1 + static_cast<int>(rng.uniform(static_cast<int64_t>(f.size()) - 1));
  int64_t others = 1;
  for (size_t o = 1; o < f.size(); ++o)
    if (static_cast<int>(o) != l) others *= f[o];
  std::vector<int64_t> sizes = nondividing_level_sizes(extent, var, l, others, registers);
  sizes.erase(std::remove(sizes.begin(), sizes.end(), f[l]), sizes.end());
  if (sizes.empty()) return false;
  f[l] = rng.pick(sizes);
  f[0] = (extent + others * f[l] - 1) / (others * f[l]);
  return true;
}

// Moves a divisor (> 1) of one level's factor to another level, or resizes
// a level of tiles that need not divide.
bool mutate_tile(const Sketch& sk, SketchDecisions& d, int registers, SpaceRng& rng) {
  const std::vector<int> vars = tile_candidates(d);
  if (vars.empty()) return false;
  const int t = rng.pick(vars);
  std::vector<int64_t>& f = d.tiles[t];
  if (product_of(f) != d.tile_extents[t])
    return resize_nondividing_level(sk.tiles[t], d.tile_extents[t], registers, f, rng);
  std::vector<int> sources;
  for (size_t l = 0; l < f.size(); ++l)
    if (f[l] > 1) sources.push_back(static_cast<int>(l));
  const int src = rng.pick(sources);
  std::vector<int64_t> divisors;
  for (int64_t x = 2; x <= f[src]; ++x)
    if (f[src] % x == 0) divisors.push_back(x);
  const int64_t moved = rng.pick(divisors);
  const int dst = static_cast<int>(other_value(0, static_cast<int64_t>(f.size()) - 1, src, rng));
  // The vectorized level stays within what the lowering can vectorize.
  if (sk.tiles[t].vector_inner && dst + 1 == static_cast<int>(f.size()) && f[dst] * moved > kMaxVectorLanes)
    return false;
  f[src] /= moved;
  f[dst] *= moved;
  return true;
}

// Plans whose producer's tiles hang over the tensor's edge: their choice
// between guarded and padded tiles (SketchDecisions::pad) matters.
std::vector<int> pad_candidates(const Sketch& sk, const SketchDecisions& d) {
  std::vector<int> out;
  for (size_t p = 0; p < d.pad.size() && p < sk.plans.size(); ++p) {
    if (d.pad[p] < 0 || sk.plans[p].rule != StageRule::kFusedConsumer) continue;
    for (int var : sk.plans[static_cast<size_t>(sk.plans[p].partner)].tiles) {
      if (var < 0 || d.tiles[var].empty()) continue;
      if (product_of(d.tiles[var]) != d.tile_extents[var]) {
        out.push_back(static_cast<int>(p));
        break;
      }
    }
  }
  return out;
}

bool change(const SketchSpace& space, const Sketch& sk, MutationKind kind, SketchDecisions& d, SpaceRng& rng) {
  switch (kind) {
    case MutationKind::kTileSize: {
      // Now and then the tail strategy of overhanging tiles instead of a size.
      const std::vector<int> padded = pad_candidates(sk, d);
      if (!padded.empty() && rng.chance(0.2)) {
        const int p = rng.pick(padded);
        d.pad[p] = 1 - d.pad[p];
        return true;
      }
      return mutate_tile(sk, d, space.target().vector_registers(), rng);
    }
    case MutationKind::kParallel: {
      const auto plans = parallel_candidates(d);
      if (plans.empty()) return false;
      const int p = rng.pick(plans);
      d.parallel[p] = static_cast<int>(other_value(1, d.parallel_options[p], d.parallel[p], rng));
      return true;
    }
    case MutationKind::kUnroll: {
      const auto steps = unroll_steps_of(space);
      const auto plans = unroll_candidates(sk, d, steps.size());
      if (plans.empty()) return false;
      const int p = rng.pick(plans);
      const auto at = std::find(steps.begin(), steps.end(), d.unroll[p]) - steps.begin();
      d.unroll[p] = steps[other_value(0, static_cast<int64_t>(steps.size()) - 1, at, rng)];
      return true;
    }
    case MutationKind::kComputeLocation: {
      const auto plans = location_candidates(d);
      if (plans.empty()) return false;
      const int p = rng.pick(plans);
      d.location[p] = static_cast<int>(other_value(0, d.location_options[p], d.location[p], rng));
      return true;
    }
  }
  return false;
}

// Replays the steps on a fresh state (as the builder will) and checks that
// it lowers: only the schedule-level passes can fail, so no IR is built for
// a program nobody may build (check_lowers).
Status validate(const SketchSpace& space, const State& state) {
  TESSERA_ASSIGN_OR_RETURN(State replayed, replay(space.dag_ptr(), state.steps()));
  return check_lowers(replayed);
}

}  // namespace

const char* mutation_kind_name(MutationKind kind) {
  switch (kind) {
    case MutationKind::kTileSize: return "tile-size";
    case MutationKind::kParallel: return "parallel";
    case MutationKind::kUnroll: return "auto-unroll";
    case MutationKind::kComputeLocation: return "compute-location";
  }
  return "?";
}

bool mutation_has_candidates(const SketchSpace& space, const SketchProgram& program, MutationKind kind) {
  if (program.sketch < 0 || program.sketch >= static_cast<int>(space.sketches().size())) return false;
  const Sketch& sk = space.sketches()[program.sketch];
  const SketchDecisions& d = program.decisions;
  if (!decisions_fit(sk, d)) return false;
  switch (kind) {
    case MutationKind::kTileSize: return !tile_candidates(d).empty();
    case MutationKind::kParallel: return !parallel_candidates(d).empty();
    case MutationKind::kUnroll: return !unroll_candidates(sk, d, unroll_steps_of(space).size()).empty();
    case MutationKind::kComputeLocation: return !location_candidates(d).empty();
  }
  return false;
}

MutationResult mutate(const SketchSpace& space, const SketchProgram& program, MutationKind kind, SpaceRng& rng) {
  MutationResult result;
  const std::string what = std::string(mutation_kind_name(kind)) + " mutation: ";
  if (!mutation_has_candidates(space, program, kind)) {
    result.reason = what + "nothing to change in this program";
    return result;
  }
  const Sketch& sk = space.sketches()[program.sketch];
  std::string last_error = "every change gave the same program";
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    SketchDecisions d = program.decisions;
    if (!change(space, sk, kind, d, rng)) continue;
    auto child = space.complete(program.sketch, std::move(d), rng);
    if (!child.is_ok()) {
      last_error = child.status().to_string();
      continue;
    }
    if (child->state.steps() == program.state.steps()) continue;
    Status valid = validate(space, child->state);
    if (!valid.is_ok()) {
      last_error = valid.to_string();
      continue;
    }
    result.program = std::move(child).value();
    return result;
  }
  result.reason = what + "no valid variant in " + std::to_string(kAttempts) + " tries (" + last_error + ")";
  return result;
}

MutationResult mutate(const SketchSpace& space, const SketchProgram& program, SpaceRng& rng) {
  std::vector<MutationKind> kinds;
  for (MutationKind k : kAllMutationKinds)
    if (mutation_has_candidates(space, program, k)) kinds.push_back(k);
  MutationResult result;
  result.reason = "no mutation applies to this program";
  while (!kinds.empty()) {
    const size_t i = static_cast<size_t>(rng.uniform(static_cast<int64_t>(kinds.size())));
    result = mutate(space, program, kinds[i], rng);
    if (result.applied()) return result;
    kinds.erase(kinds.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return result;
}

}  // namespace tessera
