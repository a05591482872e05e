#include "compiler/lower/pass_runner.h"

#include <algorithm>

#include "compiler/ir/printer.h"

namespace tessera {

Result<PrimFunc> run_passes(std::span<const LoweringPass> passes, const State& state, const std::string& name,
                            const LowerOptions& options) {
  size_t last = passes.size();
  if (!options.stop_after.empty()) {
    auto named =
        std::find_if(passes.begin(), passes.end(), [&](const LoweringPass& p) { return options.stop_after == p.name; });
    if (named == passes.end()) {
      std::string names;
      for (const LoweringPass& p : passes) names += (names.empty() ? "" : ", ") + std::string(p.name);
      return Status(ErrorCode::kInvalidArgument,
                    "no lowering pass '" + options.stop_after + "' (passes: " + names + ")");
    }
    last = static_cast<size_t>(named - passes.begin()) + 1;
  }
  LoweringUnit unit;
  unit.state = &state;
  unit.name = name;
  unit.func.name = name;
  for (size_t i = 0; i < last; ++i) {
    const LoweringPass& pass = passes[i];
    if (std::find(options.skip.begin(), options.skip.end(), pass.name) != options.skip.end()) continue;
    TESSERA_RETURN_IF_ERROR(pass.run(unit));
    if (options.verify && pass.ir_after) {
      Status st = verify(unit.func, VerifyOptions{.stage = *pass.ir_after});
      if (!st.is_ok())
        return Status(ErrorCode::kInternal, "after lowering pass " + std::string(pass.name) + ": " + st.message());
    }
    if (options.trace)
      options.trace->push_back({pass.name, unit.func.body.defined() ? to_string(unit.func) : unit.plan.to_string()});
  }
  return std::move(unit.func);
}

}  // namespace tessera
