#include "tuner/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "rpc/measure_types.h"
#include "tuner/measure/plausibility.h"

namespace tessera::tuner {

namespace {
// How much slower than a task's best a candidate's first repeat must be for
// the rest to be skipped.
constexpr double kClearlyWorse = 2.0;
}  // namespace
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double gflops(double flops, double cost) {
  return cost > 0 && std::isfinite(cost) ? flops / cost / 1e9 : 0;
}

// Sleeps a second, or less when `stop` is set meanwhile.
void pause_a_second(const std::atomic<bool>* stop) {
  for (int t = 0; t < 10 && !(stop && stop->load()); ++t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// A candidate whose result was implausible is measured again elsewhere
// (plausibility.h): the worker that reported it is avoided.
void avoid_on_retry(Candidate& c, const records::Record& r) {
  if (r.error_kind != kMeasurementError || r.worker.empty()) return;
  if (std::find(c.avoid_workers.begin(), c.avoid_workers.end(), r.worker) == c.avoid_workers.end() &&
      c.avoid_workers.size() < 64)
    c.avoid_workers.push_back(r.worker);
}

// Whether a fact (a record that is not an infrastructure error) is stored for the steps.
Result<bool> has_fact(records::Store* store, const Task& task, const std::string& steps) {
  if (!store) return false;
  TESSERA_ASSIGN_OR_RETURN(std::vector<records::Record> old,
                           store->records_of(task.workload_key(), task.target.to_string()));
  for (const auto& r : old)
    if (r.steps_json == steps && !r.infrastructure) return true;
  return false;
}

}  // namespace

Tuner::Tuner(std::vector<Task> tasks, std::vector<std::unique_ptr<SearchPolicy>> policies, Measurer& measurer,
             records::Store* store, TuneOptions options)
    : tasks_(std::move(tasks)), policies_(std::move(policies)), measurer_(measurer), store_(store), options_(options) {
  summaries_.resize(tasks_.size());
  for (size_t i = 0; i < tasks_.size(); ++i) {
    summaries_[i].name = tasks_[i].name;
    summaries_[i].workload_key = tasks_[i].workload_key();
    summaries_[i].weight = tasks_[i].weight;
    summaries_[i].best_cost_s = kInf;
    summaries_[i].flops = tasks_[i].dag->flop_count();
  }
  since_improvement_.assign(tasks_.size(), 0);
  retry_.resize(tasks_.size());
  last_batch_gflops_.assign(tasks_.size(), 0);
  exhausted_.assign(tasks_.size(), false);
  earlier_trials_.assign(tasks_.size(), 0);
}

Result<int64_t> Tuner::resume() {
  if (!store_) return int64_t{0};
  int64_t found = 0;
  const std::string empty_steps = steps_to_json({});
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& task = tasks_[i];
    TESSERA_ASSIGN_OR_RETURN(std::vector<records::Record> old,
                             store_->records_of(task.workload_key(), task.target.to_string()));
    std::vector<Candidate> candidates;
    std::vector<records::Record> usable;
    std::map<std::string, const records::Record*> lost;  // steps -> an infrastructure error, none of it a fact
    std::set<std::string> facts;
    for (const records::Record& r : old) {
      if (r.infrastructure)
        lost.emplace(r.steps_json, &r);
      else
        facts.insert(r.steps_json);
    }
    for (auto& r : old) {
      if (r.infrastructure) continue;  // not a measurement: never seen, never learned from
      auto steps = steps_from_json(r.steps_json);
      if (!steps.is_ok()) continue;  // written by a different compiler: skip, keep the record
      candidates.emplace_back(std::move(*steps), r.space, r.knob_config_json);
      usable.push_back(r);
    }
    if (const records::Record* best = records::best_of(usable)) {
      summaries_[i].best_cost_s = best->mean_cost();
      summaries_[i].best_steps = steps_from_json(best->steps_json).value();
    }
    // Measured again in this run; the default and the baseline are measured
    // again by measure_defaults and measure_baselines.
    const std::string baseline = task.baseline.empty() ? "" : steps_to_json(task.baseline);
    for (const records::Record& r : usable) {
      if (r.ok() && !baseline.empty() && r.steps_json == baseline)
        summaries_[i].untuned_compile_s =
            std::min(summaries_[i].untuned_compile_s.value_or(r.mean_cost()), r.mean_cost());
      if (r.steps_json != empty_steps && r.steps_json != baseline) ++earlier_trials_[i];
    }
    for (const auto& [steps_json, r] : lost) {
      if (facts.count(steps_json) || steps_json == empty_steps || steps_json == baseline) continue;
      auto steps = steps_from_json(steps_json);
      if (!steps.is_ok()) continue;
      retry_[i].emplace_back(std::move(*steps), r->space, r->knob_config_json);
      avoid_on_retry(retry_[i].back(), *r);
    }
    found += static_cast<int64_t>(usable.size());
    if (!candidates.empty()) TESSERA_RETURN_IF_ERROR(policies_[i]->observe(candidates, usable));
  }
  return found;
}

int64_t Tuner::pending_retries() const {
  int64_t n = 0;
  for (const auto& r : retry_) n += static_cast<int64_t>(r.size());
  return n;
}

void Tuner::announce(const std::string& line) {
  // On a terminal the line goes above the progress block, which it would
  // otherwise overwrite.
  if (progress_) return progress_->note(line);
  if (options_.on_wait) options_.on_wait(line);
}

void Tuner::note_infrastructure_error(const records::Record& r) {
  last_infrastructure_error_ = r.error_kind + ": " + r.error_message;
  if (r.error_kind == rpc::measure_error_kind_name(rpc::MeasureErrorKind::kSandboxError) && sandbox_error_.empty())
    sandbox_error_ = r.error_message + (r.worker.empty() ? "" : " (worker " + r.worker + ")");
}

Status Tuner::wait_for_workers(const std::atomic<bool>* stop) {
  // Waiting would not help: the worker's machine refuses the sandbox.
  if (!sandbox_error_.empty())
    return Status(ErrorCode::kUnavailable,
                  "a worker could not set up the measurement's sandbox: " + sandbox_error_ +
                      "; stopped, everything measured is stored (the lost measurements are taken again on the "
                      "next run, once the worker can)");
  rpc::Runner& runner = measurer_.runner();
  // The farm failed from when its tracker was last heard, if it went silent:
  // the wait's limit counts from then, and the message says so truly.
  if (!failing_since_)
    failing_since_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(runner.seconds_since_tracker_heard()));
  const std::string key = runner.device_key();
  bool announced = false;
  for (;;) {
    if (stop && stop->load()) return Status::ok();
    Result<int> workers = runner.count_workers();
    if (workers.is_ok()) max_workers_ = std::max(max_workers_, *workers);
    const bool present = workers.is_ok() && *workers > 0;
    // A runner that cannot count retries after a pause, within the same limit.
    const bool unknown = !workers.is_ok() && workers.status().code() == ErrorCode::kNotFound;
    if (since(*failing_since_) >= options_.worker_wait_s) {
      char limit[32], waited[32];
      std::snprintf(limit, sizeof limit, "%.0f", options_.worker_wait_s);
      std::snprintf(waited, sizeof waited, "%.0f", since(*failing_since_));
      std::string why = present || unknown ? "measurements failed for the infrastructure for " + std::string(limit) +
                                                 " s (" + last_infrastructure_error_ + ")"
                        : workers.is_ok() ? "no worker of key '" + key + "' came back within " + limit + " s (0 of " +
                                                std::to_string(max_workers_) + " left)"
                                          : "the tracker did not answer for " + std::string(waited) +
                                                " s: " + workers.status().message();
      return Status(ErrorCode::kUnavailable, why + "; stopped, everything measured is stored (run again to resume)");
    }
    if (unknown) {  // a runner that cannot count: try again after a pause
      pause_a_second(stop);
      return Status::ok();
    }
    if (present) {
      if (announced)
        announce("a worker of key '" + key + "' is back (" + std::to_string(*workers) + " of " +
                 std::to_string(max_workers_) + "); going on");
      return Status::ok();
    }
    if (!announced)
      announce(workers.is_ok()
                   ? "waiting for a worker of key " + key + ": 0 of " + std::to_string(max_workers_) + " left"
                   : "waiting for the tracker: " + workers.status().message());
    announced = true;
    pause_a_second(stop);
  }
}

Result<std::vector<records::Record>> Tuner::measure_alone(int i, const Candidate& candidate, MeasureOverride override,
                                                          const std::atomic<bool>* stop) {
  Candidate c = candidate;
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<records::Record> r, measurer_.measure(tasks_[i], {c}, override));
    if (store_) TESSERA_RETURN_IF_ERROR(store_->append(r));
    if (r.empty() || !r[0].infrastructure) {
      failing_since_.reset();
      return r;
    }
    ++summaries_[i].infrastructure_errors;
    note_infrastructure_error(r[0]);
    avoid_on_retry(c, r[0]);
    TESSERA_RETURN_IF_ERROR(wait_for_workers(stop));
    if (stop && stop->load()) return std::vector<records::Record>{};
  }
}

Status Tuner::measure_defaults() {
  // The untuned default is slow (scalar, one thread): it gets room, and is
  // timed like every candidate, so that "best" compares like with like.
  const std::string empty_steps = steps_to_json({});
  for (size_t i = 0; i < tasks_.size(); ++i) {
    show_phase("untuned defaults", i);
    if (stop_ && stop_->load()) return Status::ok();
    std::vector<records::Record> r;
    if (store_) {
      // Measured by an earlier run: not measured again.
      TESSERA_ASSIGN_OR_RETURN(r, store_->records_of(tasks_[i].workload_key(), tasks_[i].target.to_string()));
      std::erase_if(r, [&](const records::Record& x) { return x.steps_json != empty_steps || !x.ok(); });
    }
    if (r.empty()) {
      TESSERA_ASSIGN_OR_RETURN(r, measure_alone(static_cast<int>(i), Candidate{}, {.long_timeout = true}, stop_));
    }
    if (const records::Record* d = records::best_of(r)) {
      summaries_[i].default_cost_s = d->mean_cost();
      if (d->mean_cost() < summaries_[i].best_cost_s) {
        summaries_[i].best_cost_s = d->mean_cost();
        summaries_[i].best_steps.clear();
      }
    }
  }
  show_phase("untuned defaults", tasks_.size());
  return Status::ok();
}

Status Tuner::measure_baselines() {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    show_phase("baselines", i);
    if (tasks_[i].baseline.empty() || (stop_ && stop_->load())) continue;
    // resume() has fed a stored one to the policy and the summary; one
    // stored as an infrastructure error is measured again.
    TESSERA_ASSIGN_OR_RETURN(bool found, has_fact(store_, tasks_[i], steps_to_json(tasks_[i].baseline)));
    if (found) continue;
    Candidate c(tasks_[i].baseline, records::SpaceKind::kManual, tasks_[i].baseline_knob_config);
    TESSERA_ASSIGN_OR_RETURN(std::vector<records::Record> r, measure_alone(static_cast<int>(i), c, {}, stop_));
    if (r.empty()) continue;  // stopped
    if (r[0].ok()) summaries_[i].untuned_compile_s = r[0].mean_cost();
    TESSERA_RETURN_IF_ERROR(policies_[i]->observe({c}, r));
    if (r[0].ok() && r[0].mean_cost() < summaries_[i].best_cost_s) {
      summaries_[i].best_cost_s = r[0].mean_cost();
      summaries_[i].best_steps = c.steps();
    }
  }
  show_phase("baselines", tasks_.size());
  return Status::ok();
}

void Tuner::show_phase(const char* name, size_t done) {
  if (!progress_) return;
  std::vector<TaskProgress> shown;
  for (size_t i = 0; i < tasks_.size(); ++i) shown.push_back(progress_of(static_cast<int>(i)));
  progress_->update(shown, -1);
  progress_->phase(name, static_cast<int64_t>(done), static_cast<int64_t>(tasks_.size()));
}

TaskProgress Tuner::progress_of(int i) const {
  const TaskSummary& s = summaries_[i];
  TaskProgress p;
  p.name = s.name;
  p.key = s.workload_key;
  p.weight = s.weight;
  p.best_cost_s = std::isfinite(s.best_cost_s) ? s.best_cost_s : 0;
  p.default_cost_s = s.default_cost_s.value_or(0);
  p.untuned_compile_s = s.untuned_compile_s.value_or(0);
  p.trials = s.trials;
  p.budget = options_.trials;
  p.errors = s.errors;
  p.best_gflops = gflops(s.flops, s.best_cost_s);
  p.last_batch_gflops = last_batch_gflops_[i];
  int64_t all = 0;
  double seconds = 0;
  for (const auto& t : summaries_) {
    all += t.trials;
    seconds += t.seconds;
  }
  if (all > 0) p.eta_s = seconds / static_cast<double>(all) * static_cast<double>(options_.trials - all);
  return p;
}

int64_t Tuner::trials_spent() const {
  int64_t n = 0;
  for (const auto& s : summaries_) n += s.trials + s.given_up;
  return n;
}

int warm_up_batch(int64_t trials, size_t tasks, int batch_size) {
  if (tasks == 0) return batch_size;
  const int64_t half_share = trials / (2 * static_cast<int64_t>(tasks));
  return static_cast<int>(std::clamp<int64_t>(half_share, std::min(4, batch_size), batch_size));
}

Result<std::optional<Candidate>> Tuner::round(int i, int batch) {
  auto start = Clock::now();
  int n = static_cast<int>(std::min<int64_t>(batch, options_.trials - trials_spent()));
  // Candidates lost to the infrastructure first: they were never measured.
  std::vector<Candidate> candidates;
  SeenSet retried;
  while (static_cast<int>(candidates.size()) < n && !retry_[i].empty()) {
    retried.insert(retry_[i].front().steps());
    candidates.push_back(std::move(retry_[i].front()));
    retry_[i].erase(retry_[i].begin());
  }
  if (static_cast<int>(candidates.size()) < n) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<Candidate> proposed,
                             policies_[i]->propose(n - static_cast<int>(candidates.size())));
    for (Candidate& c : proposed)
      if (!retried.contains(c.steps())) candidates.push_back(std::move(c));
  }
  const double propose_s = since(start);
  summaries_[i].search_seconds += propose_s;
  if (candidates.empty()) {
    exhausted_[i] = true;
    return std::optional<Candidate>();
  }
  return measure_batch(i, std::move(candidates), start, propose_s);
}

Result<std::vector<int>> Tuner::share_best(int i, const Candidate& best) {
  std::vector<int> measured;
  if (tasks_[i].group.empty()) return measured;
  for (size_t u = 0; u < tasks_.size(); ++u) {
    if (static_cast<int>(u) == i || exhausted_[u] || tasks_[u].group != tasks_[i].group) continue;
    std::optional<Candidate> adopted = policies_[u]->adopt(best);
    if (!adopted) continue;
    if (trials_spent() >= options_.trials) break;
    TESSERA_RETURN_IF_ERROR(measure_batch(static_cast<int>(u), {std::move(*adopted)}, Clock::now(), 0)
                                .status()
                                .with_context("tuning " + tasks_[u].name));
    measured.push_back(static_cast<int>(u));
  }
  return measured;
}

Result<std::optional<Candidate>> Tuner::measure_batch(int i, std::vector<Candidate> candidates, Clock::time_point start,
                                                      double propose_s) {
  const Task& task = tasks_[i];
  TaskSummary& s = summaries_[i];
  // A candidate twice as slow as the task's best after its first repeat is
  // ranked already: its other repeats are skipped (noise rarely doubles a
  // time; the best itself is always timed whole).
  MeasureOverride cheaper;
  if (std::isfinite(s.best_cost_s) && s.best_cost_s > 0) cheaper.stop_above_s = kClearlyWorse * s.best_cost_s;
  TESSERA_ASSIGN_OR_RETURN(std::vector<records::Record> all, measurer_.measure(task, candidates, cheaper));
  s.build_seconds += measurer_.last_build_seconds();
  s.measure_seconds += measurer_.last_run_seconds();
  s.check_seconds += measurer_.last_check_seconds();
  auto store_start = Clock::now();
  if (store_) TESSERA_RETURN_IF_ERROR(store_->append(all));
  const double store_s = since(store_start);
  s.store_seconds += store_s;
  // The batch's records are moved below: what the phase times need, first.
  records::PhaseTimes phases;
  if (!all.empty())
    phases = {all.front().session_id,
              all.front().workload_key,
              all.front().target,
              0,
              measurer_.last_build_seconds(),
              measurer_.last_run_seconds(),
              store_s,
              0};
  // Infrastructure failures are stored but are no measurement: the policy
  // never sees them (nor learns from them), and they are measured again.
  std::vector<Candidate> measured;
  std::vector<records::Record> records;
  for (size_t j = 0; j < all.size(); ++j) {
    if (all[j].infrastructure) {
      ++s.infrastructure_errors;
      note_infrastructure_error(all[j]);
      avoid_on_retry(candidates[j], all[j]);
      // Lost time after time (every worker there is finds its result
      // implausible, say): given up, or the retries would never end while
      // the task's other candidates go on being measured.
      if (++candidates[j].times_lost < kMaxTimesLost) {
        retry_[i].push_back(std::move(candidates[j]));
      } else if (++s.given_up == 1) {
        announce(tasks_[i].name + ": a candidate lost to the infrastructure " + std::to_string(kMaxTimesLost) +
                 " times is given up (" + all[j].error_kind + ": " + all[j].error_message +
                 "); such candidates count against the trial budget");
      }
    } else {
      measured.push_back(std::move(candidates[j]));
      records.push_back(std::move(all[j]));
    }
  }
  if (records.size() < all.size()) infrastructure_failed_ = true;
  if (!records.empty()) failing_since_.reset();  // measurements go on
  auto learn_start = Clock::now();
  if (!measured.empty()) TESSERA_RETURN_IF_ERROR(policies_[i]->observe(measured, records));
  const double learn_s = since(learn_start);
  s.search_seconds += learn_s;
  // Where this batch's time went, kept with the session for `tessera report`.
  if (store_ && phases.session_id > 0) {
    phases.search_seconds = propose_s + learn_s;
    TESSERA_RETURN_IF_ERROR(store_->add_phase_times(phases));
  }
  if (!records.empty())
    s.overhead_per_trial_s.push_back((propose_s + store_s + learn_s) / static_cast<double>(records.size()));

  double batch_best = kInf;
  std::optional<Candidate> improved;
  for (size_t j = 0; j < records.size(); ++j) {
    ++s.trials;
    ++since_improvement_[i];
    if (!records[j].ok()) {
      ++s.errors;
      continue;
    }
    double c = records[j].mean_cost();
    batch_best = std::min(batch_best, c);
    if (c < s.best_cost_s) {
      s.best_cost_s = c;
      s.best_steps = measured[j].steps();
      since_improvement_[i] = 0;
      improved = measured[j];
    }
  }
  last_batch_gflops_[i] = gflops(s.flops, batch_best);
  s.seconds += since(start);
  if (options_.early_stopping > 0 && since_improvement_[i] >= options_.early_stopping) exhausted_[i] = true;
  return improved;
}

Result<std::vector<TaskSummary>> Tuner::run(Progress* progress, const std::atomic<bool>* stop) {
  stop_ = stop;
  if (Result<int> workers = measurer_.runner().count_workers(); workers.is_ok()) max_workers_ = *workers;
  progress_ = progress;
  if (options_.measure_default) TESSERA_RETURN_IF_ERROR(measure_defaults());
  TESSERA_RETURN_IF_ERROR(measure_baselines());
  std::vector<TaskWeight> weights;
  std::map<std::string, int> groups;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const std::string& g = tasks_[i].group;
    const int group =
        g.empty() ? -1 - static_cast<int>(i) : groups.emplace(g, static_cast<int>(groups.size())).first->second;
    const double cost = std::isfinite(summaries_[i].best_cost_s) ? summaries_[i].best_cost_s : 0;
    weights.push_back({tasks_[i].weight, tasks_[i].dag->flop_count(), group, cost});
  }
  TaskScheduler scheduler(weights, options_.scheduler, options_.seed);
  // Trials an earlier run stored count, so a resumed run goes on where the
  // scheduler stood instead of warming the same first tasks up again.
  auto total_trials = [&](int t) { return earlier_trials_[t] + summaries_[t].trials; };
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (earlier_trials_[i] > 0)
      scheduler.update(static_cast<int>(i), total_trials(static_cast<int>(i)), summaries_[i].best_cost_s);
  const int warm_up = warm_up_batch(options_.trials, tasks_.size(), options_.batch_size);
  auto start = Clock::now();
  std::vector<TaskProgress> shown;
  for (size_t i = 0; i < tasks_.size(); ++i) shown.push_back(progress_of(static_cast<int>(i)));
  if (progress) progress->update(shown, -1);
  while (trials_spent() < options_.trials) {
    if (stop && stop->load()) break;
    if (options_.time_budget_s > 0 && since(start) >= options_.time_budget_s) {
      ran_out_of_time_ = true;
      break;
    }
    // An exhausted task (its space measured through, or stopped early) gets
    // no more rounds; left to the scheduler, its gradient kept choosing it
    // and the rounds fell to whichever task came next in order (PP-OCR's
    // detector: a 0.34 ms conv after a global pool took 346 of 1,000
    // trials).
    for (size_t j = 0; j < tasks_.size(); ++j)
      if (exhausted_[j]) scheduler.retire(static_cast<int>(j));
    const int i = scheduler.next();
    if (i < 0) break;  // every space exhausted
    infrastructure_failed_ = false;
    auto improved = round(i, scheduler.warmed_up(i) ? options_.batch_size : warm_up);
    if (!improved.is_ok()) return improved.status().with_context("tuning " + tasks_[i].name);
    scheduler.update(i, total_trials(i), summaries_[i].best_cost_s);
    // A new best is tried at once by the tasks that share its search space
    // (ResNet's conv, conv + relu and conv + add + relu of one shape).
    if (*improved) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<int> siblings, share_best(i, **improved));
      for (int u : siblings) scheduler.update(u, total_trials(u), summaries_[u].best_cost_s);
    }
    // Lost to the infrastructure: pause until a worker is there again.
    if (infrastructure_failed_) TESSERA_RETURN_IF_ERROR(wait_for_workers(stop));
    for (size_t j = 0; j < tasks_.size(); ++j) shown[j] = progress_of(static_cast<int>(j));
    if (progress) progress->update(shown, i);
  }
  if (progress) progress->finish();
  return summaries_;
}

double median_overhead_per_trial_s(const TaskSummary& summary) {
  std::vector<double> v = summary.overhead_per_trial_s;
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string format_summary(const std::vector<TaskSummary>& summaries, size_t max_rows, bool per_trial_times) {
  std::string out;
  char buf[512];
  // By share of the model's time (weight x best; the default's where nothing succeeded).
  std::vector<TaskProgress> shares;
  for (const auto& s : summaries) {
    TaskProgress p;
    p.weight = s.weight;
    p.best_cost_s = std::isfinite(s.best_cost_s) ? s.best_cost_s : 0;
    p.default_cost_s = s.default_cost_s.value_or(0);
    shares.push_back(p);
  }
  const double total = estimated_latency_s(shares);
  std::snprintf(buf, sizeof buf, "%6s %6s %8s %10s %10s %8s %11s  %-12s  %s\n", "share", "weight", "trials", "best ms",
                "GFLOP/s", "errors", "vs untuned", "workload", "task");
  out += buf;
  const std::vector<size_t> order = by_share_of_time(shares);
  double rest_share = 0;
  for (size_t row = 0; row < order.size(); ++row) {
    const size_t i = order[row];
    const double share = total > 0 ? time_in_model_s(shares[i]) / total : 0;
    if (row >= max_rows) {
      rest_share += share;
      continue;
    }
    const TaskSummary& s = summaries[i];
    std::string speedup = "-";
    if (s.untuned_compile_s && std::isfinite(s.best_cost_s)) {
      char x[32];
      std::snprintf(x, sizeof x, "%.2fx", *s.untuned_compile_s / s.best_cost_s);
      speedup = x;
    }
    std::snprintf(buf, sizeof buf, "%5.1f%% %6g %8lld %10.3f %10.1f %8lld %11s  %-12.12s  %s\n", share * 100, s.weight,
                  static_cast<long long>(s.trials), std::isfinite(s.best_cost_s) ? s.best_cost_s * 1e3 : 0.0,
                  gflops(s.flops, s.best_cost_s), static_cast<long long>(s.errors), speedup.c_str(),
                  s.workload_key.c_str(), s.name.c_str());
    out += buf;
  }
  if (order.size() > max_rows) {
    std::snprintf(buf, sizeof buf, "  ... %zu more task%s, %.1f%% of the time\n", order.size() - max_rows,
                  order.size() - max_rows == 1 ? "" : "s", rest_share * 100);
    out += buf;
  }
  if (!per_trial_times) return out;
  for (size_t i : order) {
    const TaskSummary& s = summaries[i];
    if (s.trials == 0) continue;
    double n = static_cast<double>(s.trials);
    std::snprintf(buf, sizeof buf, "%s: %.3f s per trial (search %.3f, build %.3f, measure %.3f, store %.3f)\n",
                  s.name.c_str(), s.seconds / n, s.search_seconds / n, s.build_seconds / n, s.measure_seconds / n,
                  s.store_seconds / n);
    out += buf;
  }
  return out;
}

}  // namespace tessera::tuner
