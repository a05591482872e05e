#include "tuner/sketch_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "costmodel/features.h"

namespace tessera::tuner {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// Bound on the feature cache (entries of ~170 floats: ~35 MB).
constexpr size_t kMaxCachedFeatures = 50000;
// Bound on the cache of candidates with their states and loop nests: a few
// proposals' populations.
constexpr size_t kMaxCachedCandidates = 2048;
}  // namespace

SketchPolicy::SketchPolicy(SketchSpace space, std::unique_ptr<costmodel::CostModel> model, EvolutionOptions options,
                           uint64_t seed)
    : space_(std::move(space)), model_(std::move(model)), options_(options), rng_(seed) {
  // A pre-trained (warm) model ranks the first batch already.
  trained_ = model_ && model_->ready();
}

void SketchPolicy::add(Population* population, SketchProgram p) {
  if (candidates_.size() > kMaxCachedCandidates) candidates_.clear();
  auto it = candidates_.find(p.state.steps());
  if (it == candidates_.end())
    it = candidates_.emplace(p.state.steps(), Candidate::from_state(p.state, records::SpaceKind::kSketch)).first;
  population->candidates.push_back(it->second);
  population->programs.push_back(std::move(p));
}

Result<std::vector<Candidate>> SketchPolicy::random_candidates(int n, SeenSet* taken) {
  std::vector<Candidate> out;
  // A space can be small; give up after many draws that repeat.
  for (int attempts = 0; static_cast<int>(out.size()) < n && attempts < 20 * n + 100; ++attempts) {
    TESSERA_ASSIGN_OR_RETURN(SketchProgram p, space_.sample(rng_));
    const std::vector<Step>& steps = p.state.steps();
    if (seen_.contains(steps) || !taken->insert(steps)) continue;
    auto cached = candidates_.find(steps);
    if (cached != candidates_.end()) {
      out.push_back(std::move(cached->second));
      candidates_.erase(cached);
    } else {
      out.push_back(Candidate::from_state(p.state, records::SpaceKind::kSketch));
    }
    proposed_.emplace(out.back().steps(), std::move(p));
  }
  return out;
}

std::vector<const std::vector<float>*> SketchPolicy::features_of(const Population& population) {
  if (feature_cache_.size() > kMaxCachedFeatures) feature_cache_.clear();
  const std::vector<Candidate>& candidates = population.candidates;
  std::vector<size_t> missing;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (!feature_cache_.count(candidates[i].steps())) missing.push_back(i);
  // Extraction lowers each program (its candidate keeps the loop nest for
  // the build): split the missing ones between threads.
  std::vector<std::vector<float>> extracted(missing.size());
  auto extract = [&](size_t begin, size_t step) {
    for (size_t j = begin; j < missing.size(); j += step) {
      auto nest = candidates[missing[j]].loop_nest(space_.dag_ptr());
      if (!nest.is_ok()) continue;  // a program that does not lower stays empty
      auto f = costmodel::extract_features(*nest);
      if (f.is_ok()) extracted[j] = std::move(*f);
    }
  };
  // Threads only pay for themselves with a few programs each.
  const size_t threads =
      std::min(static_cast<size_t>(std::max(1, options_.feature_threads)), std::max<size_t>(1, missing.size() / 8));
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(extract, t, threads);
  extract(0, threads);
  for (auto& h : helpers) h.join();
  for (size_t j = 0; j < missing.size(); ++j)
    feature_cache_.emplace(candidates[missing[j]].steps(), std::move(extracted[j]));
  std::vector<const std::vector<float>*> out(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) out[i] = &feature_cache_.at(candidates[i].steps());
  return out;
}

Result<std::vector<double>> SketchPolicy::score(const Population& population) {
  std::vector<std::vector<float>> feats;
  std::vector<size_t> valid;
  const std::vector<const std::vector<float>*> cached = features_of(population);
  for (size_t i = 0; i < population.programs.size(); ++i) {
    if (cached[i]->empty()) continue;  // a program that does not lower scores lowest
    feats.push_back(*cached[i]);
    valid.push_back(i);
  }
  std::vector<double> scores(population.programs.size(), -kInf);
  if (feats.empty()) return scores;
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> predicted, model_->predict(feats));
  for (size_t j = 0; j < valid.size(); ++j) scores[valid[j]] = predicted[j];
  return scores;
}

std::optional<SketchProgram> SketchPolicy::crossover(const SketchProgram& a, const SketchProgram& b) {
  if (a.sketch != b.sketch) return std::nullopt;
  // Each tile variable and each stage plan's choices come whole from one
  // parent; completion redraws what no longer fits.
  SketchDecisions d = a.decisions;
  for (size_t i = 0; i < d.tiles.size() && i < b.decisions.tiles.size(); ++i)
    if (rng_.uniform(2)) d.tiles[i] = b.decisions.tiles[i];
  for (size_t i = 0; i < d.parallel.size() && i < b.decisions.parallel.size(); ++i) {
    if (!rng_.uniform(2)) continue;
    d.parallel[i] = b.decisions.parallel[i];
    if (i < d.unroll.size() && i < b.decisions.unroll.size()) d.unroll[i] = b.decisions.unroll[i];
    if (i < d.location.size() && i < b.decisions.location.size()) d.location[i] = b.decisions.location[i];
  }
  auto child = space_.complete(a.sketch, d, rng_);
  if (!child.is_ok()) return std::nullopt;
  return std::move(*child);
}

Result<SketchPolicy::Population> SketchPolicy::evolve() {
  Population population;
  // Elites: the best measured programs this session.
  std::vector<const Measured*> best;
  for (const Measured& m : measured_) best.push_back(&m);
  std::sort(best.begin(), best.end(), [](const Measured* a, const Measured* b) {
    return a->cost != b->cost ? a->cost < b->cost : a->json < b->json;
  });
  int elites = static_cast<int>(options_.population * options_.elite_share);
  for (const Measured* m : best) {
    if (static_cast<int>(population.programs.size()) >= elites) break;
    auto it = proposed_.find(m->steps);
    if (it != proposed_.end()) add(&population, it->second);
  }
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<SketchProgram> fresh,
      space_.sample(options_.population - static_cast<int>(population.programs.size()), rng_.next()));
  for (auto& p : fresh) add(&population, std::move(p));

  for (int g = 0; g < options_.generations; ++g) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<double> scores, score(population));
    // Selection in proportion to the score's rank (scores may be any real).
    std::vector<size_t> order(population.programs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return scores[x] > scores[y]; });
    Population next;
    SeenSet in_next;
    const size_t size = population.programs.size();
    // Keep the top tenth unchanged.
    for (size_t i = 0; i < order.size() && next.programs.size() < size / 10; ++i) {
      if (in_next.insert(population.candidates[order[i]].steps())) {
        next.programs.push_back(population.programs[order[i]]);
        next.candidates.push_back(population.candidates[order[i]]);
      }
    }
    auto pick_parent = [&]() -> const SketchProgram& {
      // Rank-weighted: the i-th best has weight (n - i).
      int64_t n = static_cast<int64_t>(order.size());
      int64_t total = n * (n + 1) / 2, r = rng_.uniform(total);
      for (int64_t i = 0; i < n; ++i) {
        r -= n - i;
        if (r < 0) return population.programs[order[i]];
      }
      return population.programs[order.front()];
    };
    for (int attempts = 0; next.programs.size() < size && attempts < 4 * options_.population; ++attempts) {
      const SketchProgram& parent = pick_parent();
      std::optional<SketchProgram> child;
      if (options_.crossover && rng_.chance(options_.crossover_prob)) {
        child = crossover(parent, pick_parent());
      } else {
        MutationResult m = space_.mutate(parent, rng_);
        if (m.applied()) child = std::move(m.program);
      }
      if (!child) continue;
      if (in_next.insert(child->state.steps())) add(&next, std::move(*child));
    }
    population = std::move(next);
  }
  return population;
}

Result<std::vector<Candidate>> SketchPolicy::propose(int n) {
  last_model_picks_ = 0;
  SeenSet taken;
  if (!model_ || !trained_) return random_candidates(n, &taken);
  TESSERA_ASSIGN_OR_RETURN(Population population, evolve());
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> scores, score(population));
  std::vector<size_t> order(population.programs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return scores[x] > scores[y]; });
  int from_model = n - static_cast<int>(std::round(n * options_.eps_greedy));
  std::vector<Candidate> out;
  for (size_t i : order) {
    if (static_cast<int>(out.size()) >= from_model) break;
    if (!std::isfinite(scores[i])) continue;
    const Candidate& c = population.candidates[i];
    if (seen_.contains(c.steps()) || !taken.insert(c.steps())) continue;
    out.push_back(c);
    candidates_.erase(c.steps());  // it travels with the batch now
    proposed_.emplace(c.steps(), std::move(population.programs[i]));
  }
  last_model_picks_ = static_cast<int>(out.size());
  TESSERA_ASSIGN_OR_RETURN(std::vector<Candidate> random, random_candidates(n - static_cast<int>(out.size()), &taken));
  for (auto& c : random) out.push_back(std::move(c));
  return out;
}

Status SketchPolicy::observe(const std::vector<Candidate>& candidates, const std::vector<records::Record>& records) {
  // The model keeps every sample it is given, so only this batch's samples go
  // in, labelled against a fixed reference (the first success) so that a
  // label means the same in every batch.
  std::vector<std::vector<float>> features;
  std::vector<double> costs;
  for (size_t i = 0; i < candidates.size() && i < records.size(); ++i) {
    const Candidate& c = candidates[i];
    const records::Record& r = records[i];
    if (!seen_.insert(c.steps())) continue;
    if (r.ok()) measured_.push_back({r.mean_cost(), r.steps_json, c.steps()});
    if (!model_) continue;
    std::vector<float> f;
    if (auto cached = feature_cache_.find(c.steps()); cached != feature_cache_.end()) {
      f = cached->second;  // proposed by this policy and scored: the same program
    } else {
      // Its own loop nest when it carries one (built from it), else made now
      // (a record of an earlier run; one of another compiler version may not
      // replay: nothing to learn).
      auto nest = c.loop_nest(space_.dag_ptr());
      if (!nest.is_ok()) continue;
      auto extracted = costmodel::extract_features(*nest);
      if (!extracted.is_ok()) continue;
      f = std::move(*extracted);
    }
    if (f.empty()) continue;
    features.push_back(std::move(f));
    costs.push_back(r.ok() ? r.mean_cost() : kInf);
    if (r.ok() && reference_cost_ <= 0) reference_cost_ = r.mean_cost();
  }
  if (!model_ || features.empty() || reference_cost_ <= 0) {
    // Nothing succeeded yet: keep the samples until a reference exists.
    for (size_t i = 0; i < features.size(); ++i) {
      pending_features_.push_back(std::move(features[i]));
      pending_costs_.push_back(costs[i]);
    }
    return Status::ok();
  }
  for (size_t i = 0; i < pending_features_.size(); ++i) {
    features.push_back(std::move(pending_features_[i]));
    costs.push_back(pending_costs_[i]);
  }
  pending_features_.clear();
  pending_costs_.clear();
  std::vector<double> labels;
  for (double c : costs) labels.push_back(std::isfinite(c) && c > 0 ? reference_cost_ / c : 0.0);
  TESSERA_RETURN_IF_ERROR(model_->update(features, labels));
  trained_ = true;
  return Status::ok();
}

}  // namespace tessera::tuner
