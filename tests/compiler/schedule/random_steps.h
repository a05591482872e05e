// Random valid schedules for property tests: steps are drawn at random and
// applied to a State; only the ones that apply are kept, so the result is a
// step list the schedule accepts. Also checks, for every rejected step, that
// the state was left as it was.
#pragma once

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compiler/schedule/state.h"

namespace tessera::test {

/// Draws random steps for one State.
class RandomScheduler {
 public:
  explicit RandomScheduler(uint32_t seed) : rng_(seed) {}

  /// A random valid schedule of `dag`: structural steps (cache_write, rfactor,
  /// cache_read), usually first, and about `steps` random loop steps.
  State generate(std::shared_ptr<const ComputeDAG> dag, int steps) {
    State s(std::move(dag));
    // Usually first; sometimes after loop steps, where some are rejected.
    const int structural_at = coin(0.8) ? 0 : pick(steps + 1);
    for (int n = 0; n <= steps; ++n) {
      if (n == structural_at) structural_steps(s);
      if (n < steps) random_step(s);
    }
    return s;
  }

  /// Descriptions of rejected steps that changed the state (should be none).
  const std::vector<std::string>& dirty_rejections() const { return dirty_; }
  /// Steps tried and steps rejected, for the curious.
  int tried() const { return tried_; }
  int rejected() const { return rejected_; }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // Applies `step`; on rejection checks that nothing changed.
  bool attempt(State& s, const Step& step) {
    ++tried_;
    const std::string before = s.to_string(), steps_before = steps_to_json(s.steps());
    Status st = s.apply(step);
    if (st.is_ok()) return true;
    ++rejected_;
    if (s.to_string() != before || steps_to_json(s.steps()) != steps_before)
      dirty_.push_back(step.to_string() + " was rejected (" + st.to_string() + ") but changed the state");
    if (st.code() != ErrorCode::kInvalidSchedule)
      dirty_.push_back(step.to_string() + " was rejected with " + st.to_string() + " instead of invalid-schedule");
    return false;
  }

  std::vector<int> compute_stages(const State& s, bool include_inlined = false) const {
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(s.stages().size()); ++i) {
      const Stage& st = s.stage(i);
      if (st.is_placeholder()) continue;
      if (!include_inlined && st.location == ComputeLocation::kInline) continue;
      out.push_back(i);
    }
    return out;
  }

  // A factor for a loop of `extent`: a common tile size or any size up to one
  // past the extent, so that many factors do not divide it.
  int64_t random_factor(int64_t extent) {
    static const int64_t kFactors[] = {1, 2, 3, 4, 5, 7, 8, 16};
    int64_t f = coin(0.3) ? std::uniform_int_distribution<int64_t>(1, extent + 1)(rng_) : kFactors[pick(8)];
    return std::min(f, extent + 1);
  }

  // Inner extents of a multi-level split whose product stays within twice
  // the extent: over-splitting only multiplies guarded, empty iterations.
  std::vector<int64_t> random_factors(int64_t extent, int levels) {
    std::vector<int64_t> factors;
    int64_t product = 1;
    for (int l = 0; l < levels; ++l) {
      const int64_t room = std::max<int64_t>(1, 2 * extent / product);
      factors.push_back(std::min(random_factor(extent), room));
      product *= factors.back();
    }
    return factors;
  }

  // cache_write (mostly of reductions), rfactor of reductions and cache_read
  // of a stage's inputs; they must come before loop transforms of the stage.
  void structural_steps(State& s) {
    // By name, since cache_write, rfactor and cache_read insert stages.
    std::vector<std::string> names;
    for (int i : compute_stages(s)) names.push_back(s.stage(i).name());
    for (const std::string& name : names) {
      int i = s.stage_index(name);
      if (i < 0 || s.stage(i).location == ComputeLocation::kInline) continue;
      const bool reduction = !s.stage(i).reduce_axes.empty();
      if (coin(reduction ? 0.4 : 0.1)) {
        attempt(s, CacheWriteStep{i});
      } else if (reduction && coin(0.15)) {
        RfactorStep step{.stage = i, .axis = pick(static_cast<int>(s.stage(i).reduce_axes.size())), .factor = 0};
        step.factor = random_factor(s.stage(i).reduce_axes[step.axis]->extent);
        attempt(s, step);
      }
      i = s.stage_index(name);
      if (coin(0.15)) {
        std::vector<int> inputs;
        for (int p = 0; p < static_cast<int>(s.stages().size()); ++p) {
          auto readers = consumers_of(s, p);
          if (std::find(readers.begin(), readers.end(), i) != readers.end()) inputs.push_back(p);
        }
        if (!inputs.empty()) {
          attempt(s, CacheReadStep{inputs[pick(static_cast<int>(inputs.size()))], {i}});
        }
      }
    }
  }

  // A step with arbitrary small arguments, mostly invalid: exercises the
  // rule that a rejected step leaves the state unchanged.
  Step garbage_step(const State& s) {
    const auto kind = static_cast<StepKind>(pick(static_cast<int>(StepKind::kStorageOrder) + 1));
    const int n = static_cast<int>(s.stages().size());
    auto small = [&](int hi) { return pick(hi + 3) - 1; };  // -1 .. hi + 1
    const int stage = small(n);
    auto some_loops = [&] {
      std::vector<int> iters;
      for (int i = 0, count = pick(4); i < count; ++i) iters.push_back(small(6));
      return iters;
    };
    switch (kind) {
      case StepKind::kSplit: {
        SplitStep step{.stage = stage, .iter = small(6), .factors = {}, .nparts = 0};
        if (coin(0.5))
          step.factors = {static_cast<int64_t>(small(4)), static_cast<int64_t>(small(4))};
        else
          step.nparts = small(4);
        return step;
      }
      case StepKind::kFuse: return FuseStep{stage, some_loops()};
      case StepKind::kReorder: return ReorderStep{stage, some_loops()};
      case StepKind::kCacheRead: return CacheReadStep{stage, some_loops()};
      case StepKind::kAnnotate: {
        const int iter = small(6);
        return AnnotateStep{stage, iter, static_cast<IterAnnotation>(pick(4))};
      }
      case StepKind::kComputeAt: {
        const int target = small(n);
        return ComputeAtStep{stage, target, small(6)};
      }
      case StepKind::kRfactor:
      case StepKind::kPackLayout: {
        const int axis = small(3);
        const int64_t factor = small(8);
        if (kind == StepKind::kRfactor) return RfactorStep{stage, axis, factor};
        return PackLayoutStep{stage, axis, factor};
      }
      case StepKind::kPragma: {
        const int iter = small(6);
        return PragmaStep{stage, iter, small(8)};
      }
      case StepKind::kComputeInline: return ComputeInlineStep{stage};
      case StepKind::kComputeRoot: return ComputeRootStep{stage};
      case StepKind::kPadTile: return PadTileStep{stage};
      case StepKind::kStorageOrder: return StorageOrderStep{stage, some_loops()};
      case StepKind::kCacheWrite: break;
    }
    return CacheWriteStep{stage};
  }

  // Stages whose loops enclose the uses of stage p: its readers, looking
  // through inlined ones.
  std::vector<int> attach_targets(const State& s, int p) const {
    std::vector<int> out, frontier = consumers_of(s, p);
    std::vector<bool> seen(s.stages().size(), false);
    while (!frontier.empty()) {
      int c = frontier.back();
      frontier.pop_back();
      if (seen[c]) continue;
      seen[c] = true;
      if (s.stage(c).location == ComputeLocation::kInline) {
        for (int cc : consumers_of(s, c)) frontier.push_back(cc);
      } else {
        out.push_back(c);
      }
    }
    return out;
  }

  void random_step(State& s) {
    std::vector<int> stages = compute_stages(s);
    if (stages.empty()) return;
    const int stage = stages[pick(static_cast<int>(stages.size()))];
    const Stage& st = s.stage(stage);
    const int loops = static_cast<int>(st.iters.size());
    const int kind = pick(100);
    if (coin(0.05)) {
      attempt(s, garbage_step(s));
      return;
    }
    if (kind < 30) {  // split, one to three levels
      SplitStep step{.stage = stage, .iter = pick(loops), .factors = {}, .nparts = 0};
      const int levels = 1 + pick(3);
      const int64_t extent = st.iters[step.iter].extent;
      if (levels == 1 && coin(0.2))
        step.nparts = random_factor(extent);
      else
        step.factors = random_factors(extent, levels);
      attempt(s, step);
    } else if (kind < 42) {  // reorder
      ReorderStep step{stage, {}};
      for (int i = 0; i < loops; ++i) step.order.push_back(i);
      std::shuffle(step.order.begin(), step.order.end(), rng_);
      attempt(s, step);
    } else if (kind < 52) {  // fuse adjacent loops
      if (loops < 2) return;
      FuseStep step{stage, {}};
      const int first = pick(loops - 1), count = std::min(loops - first, 2 + pick(2));
      for (int i = 0; i < count; ++i) step.iters.push_back(first + i);
      attempt(s, step);
    } else if (kind < 60) {  // inline an injective stage
      attempt(s, ComputeInlineStep{stage});
    } else if (kind < 76) {  // compute a producer at a loop of its consumer
      std::vector<int> targets = attach_targets(s, stage);
      if (targets.empty()) return;
      ComputeAtStep step{
          .stage = stage, .target_stage = targets[pick(static_cast<int>(targets.size()))], .target_iter = 0};
      step.target_iter = pick(static_cast<int>(s.stage(step.target_stage).iters.size()));
      attempt(s, step);
      // A tile computed whole at the tensor's edge, its reads clamped or masked.
      if (s.stage(stage).location == ComputeLocation::kAt && coin(0.3)) attempt(s, PadTileStep{stage});
      // Its buffer in another dimension order.
      if (s.stage(stage).location == ComputeLocation::kAt && coin(0.3)) {
        std::vector<int> order(s.stage(stage).tensor->shape.size());
        for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int>(d);
        std::shuffle(order.begin(), order.end(), rng_);
        attempt(s, StorageOrderStep{stage, order});
      }
    } else if (kind < 79) {
      attempt(s, ComputeRootStep{stage});
    } else if (kind < 94) {  // annotate
      AnnotateStep step{.stage = stage, .iter = pick(loops), .annotation = IterAnnotation::kNone};
      const Iter& it = st.iters[step.iter];
      const int a = pick(3);
      if (a == 0) {
        step.annotation = IterAnnotation::kParallel;
      } else {
        // Keep vectors and unrolled copies within the limits.
        if (it.extent > 64) return;
        step.annotation = a == 1 ? IterAnnotation::kVectorize : IterAnnotation::kUnroll;
      }
      attempt(s, step);
    } else {  // auto-unroll pragma
      static const int64_t kMaxSteps[] = {0, 16, 64, 512};
      const int iter = pick(loops);
      attempt(s, PragmaStep{stage, iter, kMaxSteps[pick(4)]});
    }
  }

  std::mt19937 rng_;
  std::vector<std::string> dirty_;
  int tried_ = 0, rejected_ = 0;
};

/// Greedily drops steps while `fails` still holds and the rest replays.
inline std::vector<Step> minimize_steps(const std::shared_ptr<const ComputeDAG>& dag, std::vector<Step> steps,
                                        const std::function<bool(const State&)>& fails) {
  bool shrunk = true;
  while (shrunk) {
    shrunk = false;
    for (size_t i = 0; i < steps.size(); ++i) {
      std::vector<Step> candidate = steps;
      candidate.erase(candidate.begin() + static_cast<std::ptrdiff_t>(i));
      auto state = replay(dag, candidate);
      if (state.is_ok() && fails(*state)) {
        steps = std::move(candidate);
        shrunk = true;
        break;
      }
    }
  }
  return steps;
}

}  // namespace tessera::test
