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

#include "driver/tune.h"
#include "python/errors.h"
#include "rpc/runner.h"
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

}  // namespace

py::dict tune(const std::string& model, tuner::OptionValues options, const std::string& command_line, bool progress,
              bool verbose) {
  driver::TuneRequest request;
  request.model = model;
  request.options = std::move(options);
  request.command_line = command_line;
  request.worker_binary = worker_binary();
  auto checked = driver::Tuning::check(std::move(request));
  if (!checked.is_ok()) throw py::value_error(checked.status().message());
  std::shared_ptr<driver::Tuning> tuning = std::move(checked).value();
  {
    // The model is imported once, for its kernels and for after_tuning.
    Result<std::vector<std::string>> warnings = std::vector<std::string>{};
    {
      py::gil_scoped_release release;
      warnings = tuning->import();
    }
    check(warnings.status());
    if (progress)
      for (const std::string& w : *warnings) std::fprintf(stderr, "tessera.tune: warning: %s\n", w.c_str());
  }

  Outcome outcome;
  std::atomic<bool> stop{false}, cancel{false};
  FILE* log = progress ? stdout : nullptr;
  std::thread worker([&, tuning] {
    tuner::Progress printer(stdout, progress && ::isatty(STDOUT_FILENO));
    Result<tuner::JobSummary> summary = tuning->run(log, progress ? &printer : nullptr, &stop, &cancel);
    // As `tessera tune`: the summary, then the records checked in the model
    // and the regions of an external backend timed both ways, for compile.
    if (summary.is_ok() && !summary->stopped && !summary->cancelled) {
      if (progress) {
        std::printf("\n%s", verbose ? tuner::format_summary(summary->tasks).c_str()
                                    : tuner::format_summary(summary->tasks, tuner::kSummaryRows, false).c_str());
      }
      if (!summary->all_failed) tuning->after_tuning(log, verbose, &stop);
    }
    std::fflush(stdout);
    std::lock_guard<std::mutex> lock(outcome.mutex);
    outcome.summary = std::move(summary);
    outcome.done = true;
    outcome.done_cv.notify_all();
  });
  std::optional<py::error_already_set> raised = wait_for(outcome, stop, cancel);
  {
    py::gil_scoped_release release;
    worker.join();
    tuning->close();  // the local workers stop here
  }
  if (raised) {
    if (outcome.summary.is_ok()) {
      std::printf("\n%s\n", driver::format_stopped(*outcome.summary, tuning->db()).c_str());
      std::fflush(stdout);
    }
    raised->restore();
    throw py::error_already_set();
  }
  check(outcome.summary.status());
  const tuner::JobSummary& s = *outcome.summary;
  if (s.all_failed) throw StatusError(Status(ErrorCode::kRuntimeError, driver::format_all_failed(s)));
  return to_python(s);
}

}  // namespace tessera::python
