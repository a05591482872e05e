// `tessera report`: one self-contained HTML page (inline SVG, CSS and a small
// script; nothing fetched, it opens from disk) on how tuning went, from a
// records database and, optionally, the kernels of a model:
//
//   report::ReportOptions o;
//   o.model = {"resnet18.onnx", kernels};       // optional
//   Status st = report::write_report("tessera.db", o, "report.html");
//
// Sections (each an element with the id given): "summary", "model" (with a
// model), "time" (where the time went, measurements per worker), "tasks"
// (per task: best GFLOP/s against trials, every measurement as a dot, errors
// by kind), "best" (the best kernel of each task with its steps; each row's
// id is its workload key, so report.html#KEY lands on it). Everything taken
// from the database or the model is escaped.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/store.h"

namespace tessera::report {

/// One distinct kernel of a model, as `tessera tune MODEL.onnx` tunes it.
struct ModelKernel {
  std::string key;    ///< workload key
  std::string label;  ///< e.g. "conv2d_relu 1x64x56x56"
  double weight = 1;  ///< calls per run of the model
  double flops = 0;   ///< of one call; 0: unknown (the workloads table may know)
};

/// The model a report weighs its tasks by.
struct ModelInfo {
  std::string name;                  ///< shown as is (escaped), e.g. the file's path
  std::vector<ModelKernel> kernels;  ///< distinct by key
};

/// What a report shows beyond the database.
struct ReportOptions {
  std::string title = "Tessera tuning report";
  std::string db_label;               ///< how the database is named on the page (its path)
  std::optional<ModelInfo> model;     ///< the model section, and tasks sorted by share
  std::string target;                 ///< only this target's records; empty: every target
  std::optional<double> ort_ms;       ///< ONNX Runtime's latency of the model, a line on its plots
  std::optional<double> peak_gflops;  ///< the machine's FMA peak; empty: "peak unknown"
  int max_dots = 2000;                ///< per plot; beyond, ok dots are sampled (every best-so-far step kept)
};

/// The report page for everything in `store` (see the file comment).
/// Errors: the store's, and kInvalidArgument for options out of range.
Result<std::string> render_report(records::Store& store, const ReportOptions& options);

/// Opens the database at `db` read-only (it must exist and hold a Tessera
/// schema), renders the report and writes it to `out_path` through a temporary
/// file in the same folder, renamed into place: nothing is left half-written.
/// Errors: kNotFound (no database), kDatabaseError (not a records database),
/// kInvalidArgument (a database without records), kIOError (cannot write).
Status write_report(const std::string& db, const ReportOptions& options, const std::string& out_path);

}  // namespace tessera::report
