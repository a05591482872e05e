#include "tuner/knob_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "costmodel/features.h"
#include "costmodel/xgb_model.h"

namespace tessera::tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Bound on the candidates kept with their loop nests between a search and
// the proposals taken from it (a search lowers at most sa_max_lowerings).
constexpr size_t kMaxLoweredCandidates = 2048;

constexpr struct {
  KnobStrategy strategy;
  const char* name;
} kStrategyNames[] = {
    {KnobStrategy::kRandom, "random"},
    {KnobStrategy::kGrid, "grid"},
    {KnobStrategy::kGa, "ga"},
    {KnobStrategy::kXgb, "xgb"},
};

// FNV-1a over the bytes of a feature vector.
uint64_t feature_hash(const std::vector<float>& f) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(f.data());
  for (size_t i = 0; i < f.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 0x100000001b3ULL;
  return h;
}

std::unique_ptr<costmodel::CostModel> default_model(KnobStrategy strategy, uint64_t seed) {
  if (strategy != KnobStrategy::kXgb) return nullptr;
  costmodel::XGBOptions options;
  options.seed = seed;
  return std::make_unique<costmodel::XGBModel>(options);
}

}  // namespace

const char* knob_strategy_name(KnobStrategy strategy) {
  for (const auto& s : kStrategyNames)
    if (s.strategy == strategy) return s.name;
  return "unknown";
}

Result<KnobStrategy> parse_knob_strategy(std::string_view name) {
  std::string accepted;
  for (const auto& s : kStrategyNames) {
    if (name == s.name) return s.strategy;
    accepted += accepted.empty() ? s.name : std::string(", ") + s.name;
  }
  return Status(ErrorCode::kInvalidArgument,
                "unknown knob strategy '" + std::string(name) + "' (accepted: " + accepted + ")");
}

KnobPolicy::KnobPolicy(const KnobTemplate& tmpl, std::shared_ptr<const ComputeDAG> dag, Target target, KnobSpace space,
                       KnobStrategy strategy, std::unique_ptr<costmodel::CostModel> model, uint64_t seed,
                       KnobPolicyOptions options)
    : tmpl_(tmpl),
      dag_(std::move(dag)),
      target_(std::move(target)),
      space_(std::move(space)),
      strategy_(strategy),
      model_(model ? std::move(model) : default_model(strategy, seed)),
      options_(options),
      rng_(seed) {
  for (const Knob& k : space_.knobs()) radix_.push_back(k.candidates.size());
}

std::vector<int64_t> KnobPolicy::genes_of(uint64_t index) const {
  // The first knob varies fastest with the index (KnobSpace::config).
  std::vector<int64_t> genes;
  genes.reserve(radix_.size());
  for (uint64_t r : radix_) {
    genes.push_back(static_cast<int64_t>(index % r));
    index /= r;
  }
  return genes;
}

uint64_t KnobPolicy::index_of(const std::vector<int64_t>& genes) const {
  uint64_t index = 0, stride = 1;
  for (size_t k = 0; k < radix_.size(); ++k) {
    index += static_cast<uint64_t>(genes[k]) * stride;
    stride *= radix_[k];
  }
  return index;
}

uint64_t KnobPolicy::draw_index() {
  // The space may hold more than 2^63 configurations: draw 64-bit, unbiased.
  const uint64_t n = space_.size();
  if (n <= 1) return 0;
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = rng_.next();
  while (x >= limit);
  return x % n;
}

std::optional<Candidate> KnobPolicy::take(uint64_t index) {
  if (!visited_.insert(index).second || invalid_.count(index)) return std::nullopt;
  // The cost model learns from the features of what it measures; a program
  // that does not lower is as invalid as one the template rejects.
  if (strategy_ == KnobStrategy::kXgb && !features_of(index)) return std::nullopt;
  // The candidate whose features were extracted carries its state and loop
  // nest on; otherwise the configuration is applied now.
  std::optional<Candidate> c;
  if (auto made = lowered_.find(index); made != lowered_.end()) {
    c = std::move(made->second);
    lowered_.erase(made);
  } else {
    auto config = space_.config(index);
    if (!config.is_ok()) return std::nullopt;  // unreachable: index < size()
    State state(dag_);
    if (!tmpl_.apply(*config, target_, &state).is_ok()) {
      invalid_.insert(index);
      return std::nullopt;
    }
    c = Candidate::from_state(std::move(state), records::SpaceKind::kKnob, config->to_json());
  }
  if (!seen_.insert(c->steps())) {
    ++duplicates_;
    return std::nullopt;
  }
  if (strategy_ == KnobStrategy::kXgb) known_features_.insert(feature_hash(*features_of(index)));
  return c;
}

std::optional<Candidate> KnobPolicy::adopt(const Candidate& other) {
  if (other.knob_config_json.empty()) return std::nullopt;
  auto config = KnobConfig::from_json(other.knob_config_json, space_);
  if (!config.is_ok()) return std::nullopt;  // another space
  return take(config->index());
}

void KnobPolicy::take_random(int n, std::vector<Candidate>* out) {
  const size_t want = out->size() + static_cast<size_t>(std::max(n, 0));
  // Draws repeat often once most of a small space is visited; then scan.
  for (int attempts = 0; out->size() < want && attempts < 20 * n + 100; ++attempts) {
    if (visited_.size() >= space_.size()) return;
    if (auto c = take(draw_index())) out->push_back(std::move(*c));
  }
  if (out->size() >= want || visited_.size() >= space_.size()) return;
  const uint64_t size = space_.size(), start = draw_index();
  const uint64_t scan = std::min<uint64_t>(size, uint64_t{1} << 22);
  for (uint64_t i = 0; i < scan && out->size() < want; ++i) {
    const uint64_t index = i < size - start ? start + i : i - (size - start);
    if (auto c = take(index)) out->push_back(std::move(*c));
  }
}

void KnobPolicy::take_grid(int n, std::vector<Candidate>* out) {
  while (static_cast<int>(out->size()) < n && grid_next_ < space_.size()) {
    if (auto c = take(grid_next_++)) out->push_back(std::move(*c));
  }
}

void KnobPolicy::breed() {
  ga_pending_.clear();
  if (measured_.empty()) {
    // The first generation is random; take() checks what it draws.
    for (int i = 0; i < options_.ga_population; ++i) ga_pending_.push_back(draw_index());
    ga_generation_ = ga_pending_;
    return;
  }
  // Parents: the elites of everything measured, then the measured members
  // of the last generation, then (after a resume) the next best measured.
  std::vector<std::pair<double, uint64_t>> ranked;
  for (const auto& [index, cost] : measured_) ranked.emplace_back(cost, index);
  std::sort(ranked.begin(), ranked.end());
  std::vector<uint64_t> parents;
  std::unordered_set<uint64_t> in_parents;
  auto add_parent = [&](uint64_t index) {
    if (measured_.count(index) && in_parents.insert(index).second) parents.push_back(index);
  };
  for (int i = 0; i < options_.ga_elites && i < static_cast<int>(ranked.size()); ++i) add_parent(ranked[i].second);
  for (uint64_t index : ga_generation_) add_parent(index);
  for (size_t i = 0; static_cast<int>(parents.size()) < options_.ga_population / 2 && i < ranked.size(); ++i)
    add_parent(ranked[i].second);

  // Selection in proportion to measured throughput (uniform when all failed).
  std::vector<double> cumulative;
  double total = 0;
  for (uint64_t p : parents) {
    const double cost = measured_.at(p);
    total += std::isfinite(cost) && cost > 0 ? 1.0 / cost : 0.0;
    cumulative.push_back(total);
  }
  auto select = [&]() -> uint64_t {
    if (total <= 0) return parents[static_cast<size_t>(rng_.uniform(static_cast<int64_t>(parents.size())))];
    const double r = rng_.real() * total;
    const size_t i = std::upper_bound(cumulative.begin(), cumulative.end(), r) - cumulative.begin();
    return parents[std::min(i, parents.size() - 1)];
  };

  std::unordered_set<uint64_t> children;
  for (int attempts = 0;
       static_cast<int>(ga_pending_.size()) < options_.ga_population && attempts < 20 * options_.ga_population;
       ++attempts) {
    std::vector<int64_t> genes = genes_of(select());
    const std::vector<int64_t> other = genes_of(select());
    for (size_t k = 0; k < genes.size(); ++k) {
      if (rng_.uniform(2)) genes[k] = other[k];  // crossover by knob
      if (radix_[k] > 1 && rng_.chance(options_.ga_mutation_prob))
        genes[k] = rng_.uniform(static_cast<int64_t>(radix_[k]));
    }
    const uint64_t child = index_of(genes);
    if (visited_.count(child) || invalid_.count(child) || !children.insert(child).second) continue;
    ga_pending_.push_back(child);
  }
  ga_generation_ = ga_pending_;
}

void KnobPolicy::take_ga(int n, std::vector<Candidate>* out) {
  bool bred = false;
  while (static_cast<int>(out->size()) < n) {
    if (ga_next_ >= ga_pending_.size()) {
      // One new generation per call at most: its children may still need
      // measuring before the next one can be bred from them.
      if (bred) break;
      breed();
      ga_next_ = 0;
      bred = true;
      if (ga_pending_.empty()) break;
    }
    if (auto c = take(ga_pending_[ga_next_++])) out->push_back(std::move(*c));
  }
  // Near exhaustion breeding finds too few new children; draw the rest.
  take_random(n - static_cast<int>(out->size()), out);
}

const std::optional<std::vector<float>>& KnobPolicy::features_of(uint64_t index) {
  auto it = features_.find(index);
  if (it != features_.end()) return it->second;
  if (features_.size() >= options_.feature_cache_limit) features_.clear();
  std::optional<std::vector<float>> f;
  if (!invalid_.count(index)) {
    auto config = space_.config(index);
    State state(dag_);
    if (config.is_ok() && tmpl_.apply(*config, target_, &state).is_ok()) {
      ++feature_extractions_;
      Candidate c = Candidate::from_state(std::move(state), records::SpaceKind::kKnob, config->to_json());
      auto nest = c.loop_nest(dag_);
      auto extracted = nest.is_ok() ? costmodel::extract_features(*nest) : Result<std::vector<float>>(nest.status());
      if (extracted.is_ok()) {
        f = std::move(*extracted);
        // Kept for take(): the top of a search is proposed right after it.
        if (lowered_.size() >= kMaxLoweredCandidates) lowered_.clear();
        lowered_.emplace(index, std::move(c));
      }
    }
    if (!f) invalid_.insert(index);
  }
  return features_.emplace(index, std::move(f)).first->second;
}

Result<std::vector<double>> KnobPolicy::predict(const std::vector<uint64_t>& points) {
  std::vector<std::vector<float>> feats;
  std::vector<size_t> where;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& f = features_of(points[i]);
    if (!f) continue;
    feats.push_back(*f);
    where.push_back(i);
  }
  std::vector<double> scores(points.size(), -kInf);
  if (feats.empty()) return scores;
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> predicted, model_->predict(feats));
  for (size_t j = 0; j < where.size(); ++j) scores[where[j]] = predicted[j];
  return scores;
}

uint64_t KnobPolicy::neighbour(uint64_t index) {
  std::vector<int64_t> genes = genes_of(index);
  std::vector<size_t> tunable;
  for (size_t k = 0; k < radix_.size(); ++k)
    if (radix_[k] > 1) tunable.push_back(k);
  if (tunable.empty()) return index;
  const size_t k = rng_.pick(tunable);
  // A different choice for one knob, uniformly among the others.
  const int64_t other = rng_.uniform(static_cast<int64_t>(radix_[k]) - 1);
  genes[k] = other >= genes[k] ? other + 1 : other;
  return index_of(genes);
}

Result<std::vector<uint64_t>> KnobPolicy::anneal(int keep) {
  // AutoTVM's SimulatedAnnealingOptimizer: chains continue from where the
  // last search left them, walk by changing one knob, accept by the
  // Metropolis rule on predicted scores, and the best unvisited points seen
  // by any chain form the top-k.
  std::vector<uint64_t> points = sa_points_;
  while (static_cast<int>(points.size()) < options_.sa_chains) points.push_back(draw_index());
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> scores, predict(points));

  std::set<std::pair<double, uint64_t>> top;  // (score, index), lowest first
  std::unordered_set<uint64_t> in_top;
  auto offer = [&](uint64_t index, double score) {
    if (!std::isfinite(score) || visited_.count(index) || in_top.count(index)) return false;
    if (static_cast<int>(top.size()) >= keep) {
      if (score <= top.begin()->first) return false;
      in_top.erase(top.begin()->second);
      top.erase(top.begin());
    }
    top.emplace(score, index);
    in_top.insert(index);
    return true;
  };
  for (size_t i = 0; i < points.size(); ++i) offer(points[i], scores[i]);

  double temp = options_.sa_temp_start;
  const double cool = (options_.sa_temp_start - options_.sa_temp_end) / (options_.sa_max_iters + 1);
  int last_change = 0;
  std::vector<uint64_t> next(points.size());
  const int64_t lowerings_before = feature_extractions_;
  auto over_budget = [&] {
    return options_.sa_max_lowerings > 0 && feature_extractions_ - lowerings_before >= options_.sa_max_lowerings;
  };
  for (int iter = 0; iter < options_.sa_max_iters && iter - last_change <= options_.sa_early_stop && !over_budget();
       ++iter) {
    for (size_t i = 0; i < points.size(); ++i) next[i] = neighbour(points[i]);
    TESSERA_ASSIGN_OR_RETURN(std::vector<double> next_scores, predict(next));
    for (size_t i = 0; i < points.size(); ++i) {
      if (offer(next[i], next_scores[i])) last_change = iter;
      if (!std::isfinite(next_scores[i])) continue;
      // exp(min(delta / t, 1)) >= 1 accepts every improvement.
      const bool accept = !std::isfinite(scores[i]) ||
                          rng_.real() < std::exp(std::min((next_scores[i] - scores[i]) / (temp + 1e-5), 1.0));
      if (accept) {
        points[i] = next[i];
        scores[i] = next_scores[i];
      }
    }
    temp -= cool;
  }
  sa_points_ = std::move(points);
  std::vector<uint64_t> ranked;
  for (auto it = top.rbegin(); it != top.rend(); ++it) ranked.push_back(it->second);
  return ranked;
}

Result<std::vector<Candidate>> KnobPolicy::propose_xgb(int n) {
  std::vector<Candidate> out;
  if (!trained_) {
    // Nothing to learn from yet: AutoTVM's first batch is random too.
    take_random(n, &out);
    return out;
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<uint64_t> ranked, anneal(std::max(options_.sa_keep, n)));
  const int from_model = n - static_cast<int>(std::lround(n * options_.eps_greedy));
  for (uint64_t index : ranked) {
    if (static_cast<int>(out.size()) >= from_model) break;
    // Configurations that lower to the same features (e.g. a reorder of
    // loops of extent 1) score alike and most likely run alike: one of them
    // per batch and per measurement is enough. The others stay unvisited.
    const auto& f = features_of(index);
    if (!f || known_features_.count(feature_hash(*f))) continue;
    if (auto c = take(index)) out.push_back(std::move(*c));
  }
  last_model_picks_ = static_cast<int>(out.size());
  take_random(n - static_cast<int>(out.size()), &out);
  return out;
}

Result<std::vector<Candidate>> KnobPolicy::propose(int n) {
  last_model_picks_ = 0;
  std::vector<Candidate> out;
  if (n <= 0) return out;
  switch (strategy_) {
    case KnobStrategy::kRandom: take_random(n, &out); break;
    case KnobStrategy::kGrid: take_grid(n, &out); break;
    case KnobStrategy::kGa: take_ga(n, &out); break;
    case KnobStrategy::kXgb: return propose_xgb(n);
  }
  return out;
}

Status KnobPolicy::train(const std::vector<uint64_t>& indices, const std::vector<double>& costs) {
  untrained_.insert(untrained_.end(), indices.begin(), indices.end());
  untrained_costs_.insert(untrained_costs_.end(), costs.begin(), costs.end());
  // Labels are throughput relative to one fixed reference (the first
  // success), not to the best so far: the model keeps every sample it was
  // given, so a label must not change meaning when a better one arrives.
  if (reference_cost_ <= 0) {
    double best = kInf;
    for (double c : untrained_costs_) best = std::min(best, c);
    if (!std::isfinite(best)) return Status::ok();  // nothing succeeded yet: wait for a success
    reference_cost_ = best;
  }
  std::vector<std::vector<float>> feats;
  std::vector<double> labels;
  for (size_t i = 0; i < untrained_.size(); ++i) {
    const auto& f = features_of(untrained_[i]);
    if (!f) continue;  // measured once, does not lower now: nothing to learn
    known_features_.insert(feature_hash(*f));
    feats.push_back(*f);
    const double c = untrained_costs_[i];
    labels.push_back(std::isfinite(c) && c > 0 ? reference_cost_ / c : 0.0);
  }
  untrained_.clear();
  untrained_costs_.clear();
  if (feats.empty()) return Status::ok();
  TESSERA_RETURN_IF_ERROR(model_->update(feats, labels).with_context("knob policy: training the cost model"));
  trained_ = true;
  return Status::ok();
}

Status KnobPolicy::observe(const std::vector<Candidate>& candidates, const std::vector<records::Record>& records) {
  std::vector<uint64_t> fresh;
  std::vector<double> costs;
  for (size_t i = 0; i < candidates.size() && i < records.size(); ++i) {
    const Candidate& c = candidates[i];
    const records::Record& r = records[i];
    seen_.insert(c.steps());
    const std::string& json = c.knob_config_json.empty() ? r.knob_config_json : c.knob_config_json;
    auto config = json.empty() ? Result<KnobConfig>(Status(ErrorCode::kInvalidArgument, "no knob configuration"))
                               : KnobConfig::from_json(json, space_);
    if (!config.is_ok()) {
      ++foreign_records_;
      continue;
    }
    const uint64_t index = config->index();
    visited_.insert(index);
    const double cost = r.ok() && std::isfinite(r.mean_cost()) ? r.mean_cost() : kInf;
    auto [it, inserted] = measured_.emplace(index, cost);
    if (!inserted) {
      // Measured again (an earlier run's duplicate): keep the best, learn once.
      it->second = std::min(it->second, cost);
      continue;
    }
    fresh.push_back(index);
    costs.push_back(cost);
  }
  if (strategy_ == KnobStrategy::kXgb && !fresh.empty()) return train(fresh, costs);
  return Status::ok();
}

}  // namespace tessera::tuner
