// tessera.tune's engine: the tuning job `tessera tune` runs (tuner/job.h),
// on a thread of its own while the caller's thread, without the GIL, waits
// and lets Python's signal handlers run: Ctrl-C stops the job as the command
// line's does, then raises KeyboardInterrupt.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "tuner/job.h"

namespace tessera::python {

/// Tunes the model at `model` (empty: the operators of options["op"]) with
/// `tessera tune`'s options (names without "--"); `command_line` is recorded
/// with the session. `progress`: print as `tessera tune` does, on stdout.
/// Returns {"stored", "stored_ok", "stopped", "tasks": [{name, workload_key,
/// trials, errors, best_cost_s, flops}]}. ValueError: an option's value;
/// tessera.Error: the job's errors, or every trial failed; KeyboardInterrupt
/// (or what a Python SIGINT handler raised) after the job stopped with what
/// it measured stored.
pybind11::dict tune(const std::string& model, tuner::OptionValues options, const std::string& command_line,
                    bool progress, bool verbose);

}  // namespace tessera::python
