// The one way lowering passes run: in order, each optionally followed by the
// IR verifier and a dump of what it produced, up to an optional last pass.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/verify.h"
#include "compiler/lower/lowering_plan.h"

namespace tessera {

/// What the passes of lower() work on: the schedule, its plan (the
/// schedule-level passes fill it) and the kernel (from build_loop_nests on).
struct LoweringUnit {
  const State* state = nullptr;
  std::string name;  ///< the kernel's name
  LoweringPlan plan;
  PrimFunc func;  ///< body undefined until the loop nests are built
};

/// One pass, by name. `ir_after` is the IR stage it leaves for the verifier;
/// schedule-level passes (no IR yet) have none.
struct LoweringPass {
  const char* name;
  std::optional<IrStage> ir_after;
  Status (*run)(LoweringUnit& unit);
};

/// What one pass produced: the kernel's text, or the plan's before there is IR.
struct PassDump {
  std::string pass;
  std::string text;
};

/// How to run the passes.
struct LowerOptions {
  /// Verify the IR after every pass that has IR; a violation returns
  /// kInternal naming the pass. On in tests; costs a walk of the IR per pass.
  bool verify = false;
  /// Stop after the pass of this name (empty: run them all). The result is
  /// the kernel as that pass left it (no body before build_loop_nests).
  std::string stop_after = {};
  /// Passes not to run (names). The cost model skips partition_loops: its
  /// features describe the schedule's loops, not their remainders.
  std::vector<std::string> skip = {};
  /// When set, receives one dump per pass run, in order.
  std::vector<PassDump>* trace = nullptr;
};

/// Runs `passes` in order on `state`, building the kernel `name`. An unknown
/// `stop_after` is kInvalidArgument naming the passes; a pass's own error is
/// returned as it is.
Result<PrimFunc> run_passes(std::span<const LoweringPass> passes, const State& state, const std::string& name,
                            const LowerOptions& options);

}  // namespace tessera
