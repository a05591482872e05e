// Internal to report/: the page's sections, each an HTML fragment rendered
// from the collected records. report.cc puts them together in one page.
#pragma once

#include <string>
#include <vector>

#include "report/collect.h"
#include "report/report.h"

namespace tessera::report {

/// What the sections share: the data, the options and the task order.
struct PageContext {
  const ReportData& data;
  const ReportOptions& options;
  std::vector<int> order;          ///< task indices in the order the page lists them
  std::vector<double> weight;      ///< per task: calls per model run (0: not the model's)
  std::vector<std::string> label;  ///< per task: the model's name for it, or op and shapes
  std::vector<double> flops;       ///< per task: flops of one run (workloads table, else the model's); 0: unknown
  std::string model_target;        ///< the target the model section weighs
  std::vector<const ModelKernel*> missing;  ///< the model's kernels without a record on model_target
};

/// Builds the context: labels, weights, and the order (by share of the
/// model's time when there is a model, else by key).
PageContext make_context(const ReportData& data, const ReportOptions& options);

/// GFLOP/s of one run of task `t` taking `cost_s`; 0 when its flops are unknown.
double gflops_of(const PageContext& page, int t, double cost_s);
/// A target by its short name ("x86_64 znver4, 2 cores"), the whole string
/// as its tooltip.
std::string short_target_html(const std::string& target);

std::string summary_section(const PageContext& page);  ///< id "summary"
std::string model_section(const PageContext& page);    ///< id "model"; empty without a model
std::string time_section(const PageContext& page);     ///< id "time": sessions and workers
std::string tasks_section(const PageContext& page);  ///< id "tasks": a plot per task of 4+ trials, a table of the rest
std::string best_section(const PageContext& page);   ///< id "best": rows with id = workload key

}  // namespace tessera::report
