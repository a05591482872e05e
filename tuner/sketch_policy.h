// Search over a SketchSpace: random sampling, or Ansor's evolutionary search
// guided by a cost model (population from random samples and the best
// measured programs, cost-model-scored mutation and crossover, an
// epsilon-greedy share of random candidates).
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "compiler/space/sketch/sketch_space.h"
#include "costmodel/cost_model.h"
#include "tuner/search_policy.h"

namespace tessera::tuner {

struct EvolutionOptions {
  int population = 128;         ///< programs per generation
  int generations = 3;          ///< rounds of mutation and selection per proposal
  double elite_share = 0.25;    ///< share of the initial population taken from the best measured programs
  double crossover_prob = 0.1;  ///< chance a child comes from two parents instead of one mutation
  double eps_greedy = 0.05;     ///< share of each batch drawn at random
  bool crossover = true;        ///< Ansor's crossover of compatible decisions (TVM never shipped it)
  /// Threads that extract candidates' features (lowering them) when
  /// scoring. Proposing runs while no build or measurement does, so a
  /// second core is otherwise idle then; the result does not depend on it.
  int feature_threads = 2;
};

class SketchPolicy final : public SearchPolicy {
 public:
  /// With `model` null the policy samples at random; otherwise it evolves.
  SketchPolicy(SketchSpace space, std::unique_ptr<costmodel::CostModel> model, EvolutionOptions options, uint64_t seed);

  std::string name() const override { return model_ ? "evolutionary" : "random"; }
  Result<std::vector<Candidate>> propose(int n) override;
  Status observe(const std::vector<Candidate>& candidates, const std::vector<records::Record>& records) override;

  /// Candidates the last propose() drew from the model's ranking (not random).
  int last_model_picks() const { return last_model_picks_; }

 private:
  Result<std::vector<Candidate>> random_candidates(int n, SeenSet* taken);
  // Programs with their candidates (the key of every set and cache here,
  // and the carrier of each program's state and loop nest).
  struct Population {
    std::vector<SketchProgram> programs;
    std::vector<Candidate> candidates;
  };
  // Adds `p` with its candidate: the one made for the same step list
  // recently (so its loop nest is not made again), or a new one.
  void add(Population* population, SketchProgram p);
  Result<std::vector<double>> score(const Population& population);
  // Features of each program (empty when it does not lower), from the cache
  // or extracted from its candidate's loop nest on options_.feature_threads threads.
  std::vector<const std::vector<float>*> features_of(const Population& population);
  Result<Population> evolve();
  std::optional<SketchProgram> crossover(const SketchProgram& a, const SketchProgram& b);

  SketchSpace space_;
  std::unique_ptr<costmodel::CostModel> model_;
  EvolutionOptions options_;
  SpaceRng rng_;
  SeenSet seen_;
  using StepMap = std::unordered_map<std::vector<Step>, SketchProgram, StepListHash>;
  // Proposed programs by step list, so the measured ones can seed the population.
  StepMap proposed_;
  // Candidates of recent programs by step list: a program met again (a
  // survivor, a repeated child) keeps its state and loop nest. Cleared when
  // it grows past kMaxCachedCandidates; a proposed candidate leaves it.
  std::unordered_map<std::vector<Step>, Candidate, StepListHash> candidates_;
  // Features by step list: survivors, elites and measured candidates are
  // scored again and again. Cleared when it grows past kMaxCachedFeatures.
  std::unordered_map<std::vector<Step>, std::vector<float>, StepListHash> feature_cache_;
  // Samples waiting for the first success (the labels' reference).
  std::vector<std::vector<float>> pending_features_;
  std::vector<double> pending_costs_;
  double reference_cost_ = 0;
  // Successes: mean cost, the record's step JSON (it orders equal costs), steps.
  struct Measured {
    double cost;
    std::string json;
    std::vector<Step> steps;
  };
  std::vector<Measured> measured_;
  bool trained_ = false;
  int last_model_picks_ = 0;
};

}  // namespace tessera::tuner
