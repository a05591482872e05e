#include "compiler/lower/lower.h"

#include "compiler/lower/allocate_buffers.h"
#include "compiler/lower/build_loop_nests.h"
#include "compiler/lower/flatten_storage.h"
#include "compiler/lower/infer_bounds.h"
#include "compiler/lower/inline_stages.h"
#include "compiler/lower/partition_loops.h"
#include "compiler/lower/place_guards.h"
#include "compiler/lower/simplify.h"
#include "compiler/lower/unroll_loops.h"
#include "compiler/lower/vectorize_loops.h"

namespace tessera {
namespace {

Status take(Result<LoweringPlan> result, LoweringPlan* plan) {
  if (!result.is_ok()) return result.status();
  *plan = std::move(result).value();
  return Status::ok();
}

// Unrolling comes last, without a simplify after it: the copies' constant
// arithmetic is folded as they are made, LLVM folds the rest, and simplifying
// hundreds of unrolled statements cost three quarters of the lowering time
// with no change to the generated code.
const LoweringPass kPasses[] = {
    {"inline_stages", std::nullopt, [](LoweringUnit& u) { return take(inline_stages(*u.state), &u.plan); }},
    {"infer_bounds", std::nullopt, [](LoweringUnit& u) { return take(infer_bounds(std::move(u.plan)), &u.plan); }},
    {"allocate_buffers", std::nullopt,
     [](LoweringUnit& u) { return take(allocate_buffers(std::move(u.plan)), &u.plan); }},
    {"place_guards", std::nullopt, [](LoweringUnit& u) { return take(place_guards(std::move(u.plan)), &u.plan); }},
    {"build_loop_nests", IrStage::kLoopNests,
     [](LoweringUnit& u) {
       u.func = build_loop_nests(u.plan, u.name);
       return Status::ok();
     }},
    {"flatten_storage", IrStage::kFlat,
     [](LoweringUnit& u) {
       u.func.body = flatten_storage(u.func.body, u.plan);
       return Status::ok();
     }},
    {"simplify", IrStage::kFlat,
     [](LoweringUnit& u) {
       u.func.body = simplify(u.func.body);
       return Status::ok();
     }},
    {"partition_loops", IrStage::kFlat,
     [](LoweringUnit& u) {
       u.func.body = partition_loops(u.func.body);
       return Status::ok();
     }},
    {"vectorize_loops", IrStage::kFlat,
     [](LoweringUnit& u) {
       u.func.body = vectorize_loops(u.func.body);
       return Status::ok();
     }},
    {"unroll_loops", IrStage::kFlat,
     [](LoweringUnit& u) {
       u.func.body = unroll_loops(u.func.body);
       return Status::ok();
     }},
};

}  // namespace

Result<PrimFunc> lower(const State& state, const std::string& name, const LowerOptions& options) {
  return run_passes(kPasses, state, name, options);
}

std::vector<std::string> lowering_pass_names() {
  std::vector<std::string> names;
  for (const LoweringPass& p : kPasses) names.emplace_back(p.name);
  return names;
}

Result<PrimFunc> schedule_to_loops(const State& state, const std::string& name) {
  return lower(state, name, LowerOptions{.stop_after = "flatten_storage"});
}

// build_loop_nests and every pass after it take any plan place_guards leaves
// (they return no Status); a pass that can fail must come before it.
Status check_lowers(const State& state) {
  return lower(state, "check", LowerOptions{.stop_after = "place_guards"}).status();
}

}  // namespace tessera
