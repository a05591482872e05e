#include "report/collect.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tessera::report {
namespace {

// Adds one record to its task, its session and its worker.
void add_record(const records::Record& r, TaskRecords& task, SessionRecords& session, WorkerRecords& worker) {
  const bool baseline = is_baseline(r);
  if (!r.infrastructure) ++(baseline ? task.baselines : task.trials);
  ++session.records;
  session.build_s += r.build_seconds;
  session.measure_s += r.run_seconds;
  if (session.first == 0 || r.timestamp < session.first) session.first = r.timestamp;
  session.last = std::max(session.last, r.timestamp);
  ++worker.records;
  if (r.ok()) {
    ++session.ok;
    ++worker.ok;
    const double cost = r.mean_cost();
    // best_of's rule: the lowest mean cost, a tie to the earlier record.
    const bool improved = !task.best || cost < task.best->mean_cost();
    if (improved) task.best = r;
    task.ok.push_back({baseline ? 0 : task.trials, cost, improved});
    if (baseline) {
      std::optional<double>& kept = r.space == records::SpaceKind::kManual ? task.manual_s : task.default_s;
      if (!kept || cost < *kept) kept = cost;
    }
    return;
  }
  r.infrastructure ? ++worker.infrastructure : ++worker.errors;
  task.failures.push_back({baseline ? 0 : task.trials, r.error_kind, r.infrastructure});
  if (++task.errors_by_kind[r.error_kind] == 1) task.example_message[r.error_kind] = r.error_message;
}

}  // namespace

bool is_baseline(const records::Record& r) {
  return r.steps_json == "[]" || r.space == records::SpaceKind::kManual;
}

int find_task(const ReportData& data, const std::string& key, const std::string& target) {
  auto it = std::lower_bound(data.tasks.begin(), data.tasks.end(), std::make_pair(key, target),
                             [](const TaskRecords& t, const std::pair<std::string, std::string>& k) {
                               return std::tie(t.key, t.target) < std::tie(k.first, k.second);
                             });
  if (it == data.tasks.end() || it->key != key || it->target != target) return -1;
  return static_cast<int>(it - data.tasks.begin());
}

Result<ReportData> collect(records::Store& store, const std::string& target) {
  ReportData data;
  TESSERA_ASSIGN_OR_RETURN(std::vector<records::SessionInfo> sessions, store.sessions());
  std::map<int64_t, size_t> session_index;
  for (const auto& s : sessions) {
    session_index[s.id] = data.sessions.size();
    SessionRecords session;
    session.info = s;
    data.sessions.push_back(std::move(session));
  }
  std::map<std::pair<std::string, std::string>, int32_t> task_index;
  records::RecordFilter filter;
  filter.target = target;
  TESSERA_RETURN_IF_ERROR(store.for_each(filter, [&](const records::Record& r) -> Status {
    auto [it, added] = task_index.try_emplace({r.workload_key, r.target}, static_cast<int32_t>(data.tasks.size()));
    if (added) {
      data.tasks.emplace_back();
      data.tasks.back().key = r.workload_key;
      data.tasks.back().target = r.target;
    }
    auto s = session_index.find(r.session_id);
    SessionRecords& session = s == session_index.end() ? data.orphans : data.sessions[s->second];
    add_record(r, data.tasks[it->second], session, data.workers[r.worker]);
    data.events.push_back({it->second, r.ok() ? r.mean_cost() : std::numeric_limits<double>::infinity(), r.timestamp,
                           r.infrastructure, is_baseline(r)});
    ++data.total_records;
    return Status::ok();
  }));
  // Tasks by key then target (the map's order); events follow their task.
  std::vector<int32_t> new_index(data.tasks.size());
  std::vector<TaskRecords> sorted;
  sorted.reserve(data.tasks.size());
  for (const auto& [k, i] : task_index) {
    new_index[i] = static_cast<int32_t>(sorted.size());
    sorted.push_back(std::move(data.tasks[i]));
  }
  data.tasks = std::move(sorted);
  for (Event& e : data.events) e.task = new_index[e.task];
  TESSERA_ASSIGN_OR_RETURN(std::vector<records::PhaseTimes> phases, store.phase_times());
  for (const records::PhaseTimes& p : phases) {
    auto s = session_index.find(p.session_id);
    if (s == session_index.end() || (!target.empty() && p.target != target)) continue;
    auto& sum = data.sessions[s->second].phases;
    if (!sum) sum = records::PhaseTimes{p.session_id, "", target, 0, 0, 0, 0, 0};
    sum->search_seconds += p.search_seconds;
    sum->build_seconds += p.build_seconds;
    sum->measure_seconds += p.measure_seconds;
    sum->store_seconds += p.store_seconds;
    sum->batches += p.batches;
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<records::WorkloadInfo> workloads, store.workloads());
  for (const records::WorkloadInfo& w : workloads) {
    auto first = std::lower_bound(data.tasks.begin(), data.tasks.end(), w.key,
                                  [](const TaskRecords& t, const std::string& key) { return t.key < key; });
    for (auto t = first; t != data.tasks.end() && t->key == w.key; ++t) {
      t->op_name = w.op_name;
      t->shapes = w.shapes;
      t->flop_count = w.flop_count;
    }
  }
  return data;
}

}  // namespace tessera::report
