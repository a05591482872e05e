#include "python/tune.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "python/errors.h"
#include "tools/after_tuning.h"
#include "tools/compile_flow.h"
#include "tools/model_input.h"
#include "tools/tune_regions.h"
#include "tuner/progress.h"

namespace tessera::python {

namespace py = pybind11;

namespace {

// tessera-worker: in bin/ beside lib/, which holds the rpc library, both in
// the build tree and in an install.
std::string worker_binary() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&rpc::stop_local_workers_from_signal), &info) == 0 || !info.dli_fname) return "";
  std::string lib = info.dli_fname;
  const size_t slash = lib.find_last_of('/');
  return (slash == std::string::npos ? std::string(".") : lib.substr(0, slash)) + "/../bin/tessera-worker";
}

// What the job thread hands back.
struct Outcome {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  Result<tuner::JobSummary> summary = Status(ErrorCode::kInternal, "the tuning job did not run");
  std::unique_ptr<tuner::TuneJob> job;  // destroyed with the GIL released: it stops the workers
};

py::dict to_python(const tuner::JobSummary& s) {
  py::list tasks;
  for (const tuner::TaskSummary& t : s.tasks) {
    py::dict task;
    task["name"] = t.name;
    task["workload_key"] = t.workload_key;
    task["trials"] = t.trials;
    task["errors"] = t.errors;
    task["best_cost_s"] = t.best_cost_s;
    task["flops"] = t.flops;
    tasks.append(task);
  }
  py::dict out;
  out["stored"] = s.stored;
  out["stored_ok"] = s.stored_ok;
  out["stopped"] = s.stopped;
  out["tasks"] = tasks;
  return out;
}

// Waits for the job without the GIL, running Python's signal handlers every
// 100 ms. The first exception they raise (KeyboardInterrupt at Ctrl-C) sets
// `stop`: the job ends after its batch, everything measured stored; a second
// sets `cancel`: the batch in flight is dropped. Returns the first exception.
std::optional<py::error_already_set> wait_for(Outcome& outcome, std::atomic<bool>& stop, std::atomic<bool>& cancel) {
  std::optional<py::error_already_set> raised;
  for (;;) {
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(outcome.mutex);
      if (outcome.done_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return outcome.done; })) break;
    }
    if (PyErr_CheckSignals() == 0) continue;
    py::error_already_set e;  // fetches and clears the Python error
    if (!raised) {
      raised.emplace(std::move(e));
      stop = true;
      std::fprintf(stderr, "\ntessera.tune: stopping after this batch (Ctrl-C again: stop now, dropping the batch)\n");
    } else {
      cancel = true;
    }
  }
  return raised;
}

// The model at `path` imported once (into `graph`, for after_model_tuning
// too) and its kernels that a worker measures (into `kernels`), with a
// warning for each left out when `progress`.
Status import_kernels(const std::string& path, const std::vector<std::string>& shapes,
                      const std::vector<std::string>& values, const model::PlanOptions& options, bool progress,
                      std::optional<graph::Graph>* graph, tuner::ModelKernels* kernels) {
  TESSERA_ASSIGN_OR_RETURN(graph::Graph imported, cli::import_model(path, shapes, values));
  graph->emplace(std::move(imported));
  TESSERA_ASSIGN_OR_RETURN(tuner::ModelKernels found, cli::model_kernels(**graph, path, options));
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> warnings, cli::keep_measurable(&found, rpc::WireLimits()));
  if (progress)
    for (const std::string& w : warnings) std::fprintf(stderr, "tessera.tune: warning: %s\n", w.c_str());
  *kernels = std::move(found);
  return Status::ok();
}

}  // namespace

py::dict tune(const std::string& model, tuner::OptionValues options, const std::string& command_line, bool progress,
              bool verbose) {
  const bool has_model = !model.empty();
  auto config = tuner::parse_tune_config(options, has_model);
  if (!config.is_ok()) throw py::value_error(config.status().message());
  if (options.count("byoc") && !has_model) throw py::value_error("byoc applies to a model's tuning");
  auto byoc = cli::resolve_byoc(options.count("byoc") ? options["byoc"].back() : "auto", config->target);
  if (!byoc.is_ok()) throw py::value_error("byoc: " + byoc.status().message());
  if (options.count("precision") && !has_model) throw py::value_error("precision applies to a model's tuning");
  model::PlanOptions plan_options;
  if (options.count("precision")) {
    auto p = cli::parse_precision(options["precision"].back(), config->target);
    if (!p.is_ok()) throw py::value_error(p.status().message());
    plan_options.precision = *p;
  }
  plan_options.int8_pairs = model::int8_pairs_pay(config->target);
  config->command_line = command_line;
  config->worker_binary = worker_binary();
  tuner::ModelKernels kernels;
  const std::vector<std::string> shapes =
      options.count("input-shape") ? options["input-shape"] : std::vector<std::string>{};
  const std::vector<std::string> values =
      options.count("input-value") ? options["input-value"] : std::vector<std::string>{};
  // The model is imported once, for its kernels and for after_model_tuning.
  std::optional<graph::Graph> graph;
  if (has_model) {
    Status st;
    {
      py::gil_scoped_release release;
      st = import_kernels(model, shapes, values, plan_options, progress, &graph, &kernels);
    }
    check(st);
  }

  Outcome outcome;
  std::atomic<bool> stop{false}, cancel{false};
  FILE* log = progress ? stdout : nullptr;
  std::thread worker(
      [&, config = std::move(config).value(), kernels = std::move(kernels), graph = std::move(graph)]() mutable {
        auto job = tuner::TuneJob::open(std::move(config), std::move(kernels), log);
        Result<tuner::JobSummary> summary =
            job.is_ok() ? Status(ErrorCode::kInternal, "the tuning job did not run") : job.status();
        if (job.is_ok()) {
          tuner::Progress printer(stdout, progress && ::isatty(STDOUT_FILENO));
          summary = (*job)->run(progress ? &printer : nullptr, &stop, &cancel);
          // Then the records checked in the model, and the regions of an
          // external backend timed both ways, for compile.
          if (graph && summary.is_ok() && !summary->stopped && !summary->all_failed)
            cli::after_model_tuning(*graph, plan_options, *byoc, **job, log, verbose);
        }
        std::fflush(stdout);
        std::lock_guard<std::mutex> lock(outcome.mutex);
        if (job.is_ok()) outcome.job = std::move(job).value();
        outcome.summary = std::move(summary);
        outcome.done = true;
        outcome.done_cv.notify_all();
      });
  std::optional<py::error_already_set> raised = wait_for(outcome, stop, cancel);
  {
    py::gil_scoped_release release;
    worker.join();
    outcome.job.reset();  // the local workers stop here
  }
  const std::string db = options.count("db") ? options["db"].back() : std::string("tessera.db");
  if (raised) {
    if (outcome.summary.is_ok()) {
      const tuner::JobSummary& s = *outcome.summary;
      std::printf("\nstopped by Ctrl-C%s: this run stored %lld record(s), %lld measured ok, in %s\n",
                  s.cancelled ? " at once (the batch in flight was dropped)" : " after the batch",
                  static_cast<long long>(s.stored), static_cast<long long>(s.stored_ok), db.c_str());
      std::fflush(stdout);
    }
    raised->restore();
    throw py::error_already_set();
  }
  check(outcome.summary.status());
  const tuner::JobSummary& s = *outcome.summary;
  if (progress) {
    std::printf("\n%s", verbose ? tuner::format_summary(s.tasks).c_str()
                                : tuner::format_summary(s.tasks, tuner::kSummaryRows, false).c_str());
    std::fflush(stdout);
  }
  if (s.all_failed) {
    std::string message = "every trial of this run failed; the first errors:";
    for (const std::string& e : s.errors) message += "\n  " + e;
    throw StatusError(Status(ErrorCode::kRuntimeError, message));
  }
  return to_python(s);
}

}  // namespace tessera::python
