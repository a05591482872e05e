// Search over a KnobSpace (a schedule template's configurations), as AutoTVM
// does: uniform random, grid (index order), a genetic algorithm whose
// fitness is the measured throughput, and an XGBoost cost model explored by
// simulated annealing with an epsilon-greedy share of random configurations.
//
//   KnobSpace space = tmpl->define(*dag, target).value();
//   KnobPolicy policy(*tmpl, dag, target, space, KnobStrategy::kXgb,
//                     std::make_unique<costmodel::XGBModel>(), seed);
//   auto batch = policy.propose(16);   // configurations never measured
//   policy.observe(batch, records);    // learn; also how a run resumes
//
// The model's picks skip configurations whose features equal those of one
// already proposed or measured (e.g. a reorder of loops of extent 1): they
// score alike and most likely run alike.
//
// Every proposal applies cleanly (configurations the template rejects are
// skipped and counted, never proposed), and no configuration or step list
// is proposed twice, whether measured in this run or in an earlier one fed
// to observe(). Same seed and same measurements give the same proposals.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/space/knob/templates.h"
#include "compiler/space/space_rng.h"
#include "costmodel/cost_model.h"
#include "tuner/search_policy.h"

namespace tessera::tuner {

/// How a KnobPolicy chooses configurations.
enum class KnobStrategy : uint8_t {
  kRandom,  ///< uniformly random unvisited configurations
  kGrid,    ///< configurations in index order, skipping visited ones
  kGa,      ///< genetic algorithm; fitness is the measured throughput
  kXgb,     ///< XGBoost cost model + simulated annealing, epsilon-greedy
};

/// "random", "grid", "ga" or "xgb" (the --strategy spelling).
const char* knob_strategy_name(KnobStrategy strategy);
/// Parses knob_strategy_name's spelling; kInvalidArgument naming the accepted ones otherwise.
Result<KnobStrategy> parse_knob_strategy(std::string_view name);

/// Parameters of the genetic algorithm and of the simulated annealing.
struct KnobPolicyOptions {
  // Genetic algorithm (AutoTVM's GATuner, with crossover by knob).
  int ga_population = 64;         ///< children per generation; parents are the best this many measured
  int ga_elites = 8;              ///< best measured configurations always among the parents
  double ga_mutation_prob = 0.1;  ///< chance each knob of a child takes a random choice

  // Simulated annealing over the cost model (AutoTVM's SimulatedAnnealingOptimizer).
  // AutoTVM runs 128 chains for up to 500 steps (early stop 50). Every new
  // point costs a lowering for its features (~0.17 ms), so a search here is
  // short and its chains go on from where the last one stopped. On the
  // synthetic tests (matmul 64^3 and 512^3, 32 seeds) a budget of 500
  // lowerings per search found the top 1% in as few trials as no budget
  // (27 vs 28 and 39 vs 51 trials; random 58 and 49) at 1/4 to 1/7 the cost.
  int sa_chains = 64;          ///< parallel chains; their end points start the next search
  int sa_max_iters = 200;      ///< steps of every chain per search
  int sa_early_stop = 30;      ///< stop after this many steps without a new top-k entry
  double sa_temp_start = 1.0;  ///< temperature at the first step, falling linearly ...
  double sa_temp_end = 0.0;    ///< ... to this at sa_max_iters
  int sa_keep = 64;            ///< top-k kept by predicted score (at least the batch size)
  /// Stop a search once it has lowered this many new configurations for
  /// their features; 0: no limit.
  int64_t sa_max_lowerings = 500;
  double eps_greedy = 0.05;  ///< share of each model-guided batch drawn at random

  size_t feature_cache_limit = 200000;  ///< cached feature vectors before the cache is cleared
};

/// A SearchPolicy over one template's KnobSpace for one task.
class KnobPolicy final : public SearchPolicy {
 public:
  /// `space` must be tmpl.define(*dag, target); `tmpl` must outlive the
  /// policy (find_template's entries do). `model` is used by kXgb only; kXgb
  /// with a null model trains a default costmodel::XGBModel seeded by `seed`.
  KnobPolicy(const KnobTemplate& tmpl, std::shared_ptr<const ComputeDAG> dag, Target target, KnobSpace space,
             KnobStrategy strategy, std::unique_ptr<costmodel::CostModel> model, uint64_t seed,
             KnobPolicyOptions options = {});

  /// knob_strategy_name(strategy).
  std::string name() const override { return knob_strategy_name(strategy_); }
  /// Up to `n` valid candidates (space kKnob, knob_config_json set), none of
  /// them proposed or measured before; empty once the space is exhausted.
  Result<std::vector<Candidate>> propose(int n) override;
  /// Marks the records' configurations and step lists visited and learns
  /// from them. Records whose knob configuration does not parse against the
  /// space (another template, another version) only mark their steps seen.
  Status observe(const std::vector<Candidate>& candidates, const std::vector<records::Record>& records) override;
  /// `other`'s knob configuration, when it parses in this space and was
  /// never visited here, applied to this task's DAG.
  std::optional<Candidate> adopt(const Candidate& other) override;

  KnobStrategy strategy() const { return strategy_; }
  const KnobSpace& space() const { return space_; }
  /// Configurations the template rejected (apply failed); never proposed.
  int64_t invalid_configs() const { return static_cast<int64_t>(invalid_.size()); }
  /// Configurations skipped because their step list equals one already seen.
  int64_t duplicate_programs() const { return duplicates_; }
  /// Configurations proposed, measured or skipped so far (never proposed again).
  int64_t visited_configs() const { return static_cast<int64_t>(visited_.size()); }
  /// Configurations with a measurement observed (good or bad).
  int64_t measured_configs() const { return static_cast<int64_t>(measured_.size()); }
  /// Records whose knob configuration did not parse against the space.
  int64_t foreign_records() const { return foreign_records_; }
  /// Feature vectors extracted so far (each a lowering of a configuration).
  int64_t feature_extractions() const { return feature_extractions_; }
  /// Candidates the last propose() took from the model's ranking (kXgb).
  int last_model_picks() const { return last_model_picks_; }

  /// The per-knob choice indices of configuration `index` (first knob first).
  std::vector<int64_t> genes_of(uint64_t index) const;
  /// The configuration index of per-knob choice indices.
  uint64_t index_of(const std::vector<int64_t>& genes) const;

 private:
  // Applies configuration `index` and, when it is valid, unvisited and its
  // steps unseen, marks it visited and returns its candidate.
  std::optional<Candidate> take(uint64_t index);
  uint64_t draw_index();
  // Appends up to `n` random unvisited candidates to `out`.
  void take_random(int n, std::vector<Candidate>* out);
  void take_grid(int n, std::vector<Candidate>* out);
  void take_ga(int n, std::vector<Candidate>* out);
  void breed();
  Result<std::vector<Candidate>> propose_xgb(int n);
  // Features of a configuration (cached); nullopt when it does not apply or lower.
  const std::optional<std::vector<float>>& features_of(uint64_t index);
  // Predicted scores of `points` (-infinity for invalid ones).
  Result<std::vector<double>> predict(const std::vector<uint64_t>& points);
  Result<std::vector<uint64_t>> anneal(int keep);
  uint64_t neighbour(uint64_t index);
  Status train(const std::vector<uint64_t>& indices, const std::vector<double>& costs);

  const KnobTemplate& tmpl_;
  std::shared_ptr<const ComputeDAG> dag_;
  Target target_;
  KnobSpace space_;
  KnobStrategy strategy_;
  std::unique_ptr<costmodel::CostModel> model_;
  KnobPolicyOptions options_;
  SpaceRng rng_;

  std::vector<uint64_t> radix_;           // candidates per knob
  SeenSet seen_;                          // step lists proposed or measured
  std::unordered_set<uint64_t> visited_;  // configurations proposed or measured
  std::unordered_set<uint64_t> invalid_;  // configurations the template rejects
  std::map<uint64_t, double> measured_;   // configuration -> best mean cost (infinity: error)
  int64_t duplicates_ = 0;
  int64_t foreign_records_ = 0;
  uint64_t grid_next_ = 0;

  std::vector<uint64_t> ga_pending_;     // the current generation, proposed in order
  size_t ga_next_ = 0;                   // next of ga_pending_ to propose
  std::vector<uint64_t> ga_generation_;  // the last generation bred (parents of the next)

  std::unordered_map<uint64_t, std::optional<std::vector<float>>> features_;
  // Candidates whose features were extracted, with their state and loop
  // nest, until take() proposes them; bounded (cleared when full).
  std::unordered_map<uint64_t, Candidate> lowered_;
  std::vector<uint64_t> sa_points_;              // where the chains stopped last time
  std::unordered_set<uint64_t> known_features_;  // hashes of the features of proposed and measured configurations
  std::vector<uint64_t> untrained_;              // measured before any success: trained once one arrives
  std::vector<double> untrained_costs_;
  double reference_cost_ = 0;  // labels are reference_cost_ / cost; 0 until a success
  bool trained_ = false;
  int64_t feature_extractions_ = 0;
  int last_model_picks_ = 0;
};

}  // namespace tessera::tuner
