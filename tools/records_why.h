// `tessera records why MODEL.onnx`: a model's fused kernels, each with its
// workload key and the schedule compile time would use — a record, and which
// one — or why it has none (no record of the workload, records only on
// other targets, none ok on this target, ok records that no longer replay).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cli {

/// What `records why MODEL.onnx` is asked.
struct WhyModelOptions {
  std::string model_path;
  std::vector<std::string> input_shapes;  ///< --input-shape bindings, "name:d0,d1,..."
  std::string db = "tessera.db";
  std::optional<std::string> target;  ///< the full target string; empty: this machine
  int64_t k = 5;                      ///< records tried per target before falling back
  bool full_target = false;           ///< print the target's whole string, not its short name
};

/// Prints, for every distinct kernel of the model (those `tessera tune` tunes
/// and compile looks up), its label, workload key and schedule choice with
/// the reason. Returns the exit code: 0, or 1 with the error on stderr (a
/// model that does not import, a database that does not open).
int explain_model_schedules(const WhyModelOptions& options);

}  // namespace tessera::cli
