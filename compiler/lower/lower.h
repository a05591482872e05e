// The lowering pipeline: schedule state -> loop IR ready for code generation.
#pragma once

#include <string>
#include <vector>

#include "compiler/lower/pass_runner.h"

namespace tessera {

/// Lowers `state` to a PrimFunc named `name` by the passes, in order:
///   inline_stages -> infer_bounds -> allocate_buffers -> place_guards   (schedule level)
///   -> build_loop_nests -> flatten_storage -> simplify -> vectorize_loops -> unroll_loops   (loop IR)
/// `options` verify between passes, trace them, or stop after one.
Result<PrimFunc> lower(const State& state, const std::string& name = "kernel", const LowerOptions& options = {});

/// The kernel of `state` with flat loads and stores, loops still annotated
/// (parallel, vectorized, unrolled): lower() stopped after flatten_storage,
/// by when every lowering error a schedule can cause has happened.
Result<PrimFunc> schedule_to_loops(const State& state, const std::string& name);

/// Whether `state` lowers, without building its IR: the schedule-level passes
/// (up to place_guards) are the only ones that can reject a schedule, so this
/// returns exactly the error lower() would, at a fraction of its cost. The
/// search spaces check each mutant this way.
Status check_lowers(const State& state);

/// The names of lower()'s passes, in order.
std::vector<std::string> lowering_pass_names();

}  // namespace tessera
