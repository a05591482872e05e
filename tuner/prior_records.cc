#include "tuner/prior_records.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "compiler/schedule/state.h"
#include "compiler/schedule/step.h"
#include "costmodel/features.h"
#include "records/store.h"
#include "tuner/search_policy.h"

namespace tessera::tuner {

namespace {

// One workload's training records: a group per target, each scored by the
// best of its own target's records that replay (a cost on one CPU says
// nothing of another's scale).
std::vector<costmodel::TrainingRecord> training_records(const std::vector<records::Record>& records,
                                                        const std::shared_ptr<const ComputeDAG>& dag,
                                                        int64_t* next_group) {
  std::vector<std::pair<const records::Record*, std::vector<float>>> replayed;
  std::map<std::string, double> best;
  for (const records::Record& r : records) {
    auto steps = steps_from_json(r.steps_json);
    if (!steps.is_ok()) continue;
    auto state = replay(dag, *steps);
    if (!state.is_ok()) continue;
    auto features = costmodel::extract_features(*state);
    if (!features.is_ok()) continue;
    replayed.emplace_back(&r, std::move(*features));
    auto [it, inserted] = best.emplace(r.target, std::numeric_limits<double>::infinity());
    if (r.ok()) it->second = std::min(it->second, r.mean_cost());
  }
  std::map<std::string, int64_t> groups;
  std::vector<costmodel::TrainingRecord> out;
  for (auto& [r, features] : replayed) {
    auto [g, inserted] = groups.emplace(r->target, *next_group);
    if (inserted) ++*next_group;
    out.push_back({std::move(features), normalized_throughput(*r, best[r->target]), g->second});
  }
  return out;
}

}  // namespace

Result<PriorRecords> read_prior_records(const std::string& path,
                                        const std::vector<std::shared_ptr<const ComputeDAG>>& dags,
                                        const std::string& target, int64_t per_workload_limit) {
  records::OpenOptions options;
  options.read_only = true;
  options.create = false;
  auto store = records::Store::open(path, options);
  if (!store.is_ok())
    return Status(store.status().code(), "cannot read the prior records in " + path + ": " + store.status().message());
  PriorRecords prior;
  prior.per_task.resize(dags.size());
  int64_t next_group = 0;
  for (size_t i = 0; i < dags.size(); ++i) {
    records::RecordFilter filter;
    filter.workload_key = dags[i]->workload_key();
    filter.newest_first = true;
    TESSERA_ASSIGN_OR_RETURN(std::vector<records::Record> all, store->list(filter));
    std::vector<records::Record> others;
    for (records::Record& r : all) {
      if (r.infrastructure) continue;
      if (r.target == target) {
        ++prior.same_target;
        continue;
      }
      if (static_cast<int64_t>(others.size()) >= per_workload_limit) continue;  // still counts this target's
      prior.targets.insert(r.target);
      others.push_back(std::move(r));
    }
    prior.per_task[i] = training_records(others, dags[i], &next_group);
  }
  return prior;
}

int64_t PriorRecords::records() const {
  int64_t n = 0;
  for (const auto& t : per_task) n += static_cast<int64_t>(t.size());
  return n;
}

int64_t PriorRecords::workloads() const {
  return std::count_if(per_task.begin(), per_task.end(), [](const auto& t) { return !t.empty(); });
}

std::string describe_prior(const PriorRecords& prior, size_t tasks, const std::string& path) {
  std::string line = "prior: " + std::to_string(prior.records()) + " record" + (prior.records() == 1 ? "" : "s") +
                     " of " + std::to_string(prior.workloads()) + " of these " + std::to_string(tasks) + " workload" +
                     (tasks == 1 ? "" : "s") + " from " + path;
  if (!prior.targets.empty()) {
    line += ", measured on ";
    size_t n = 0;
    for (const std::string& t : prior.targets) line += (n++ ? "; " : "") + t;
  }
  line += prior.records() ? "; they warm the cost model and are not stored here" : "; the cost model starts cold";
  if (prior.same_target)
    line += " (" + std::to_string(prior.same_target) + " of this target's own left out: they are measurements, " +
            "for records export and import)";
  return line;
}

}  // namespace tessera::tuner
