// The package's values table and calls, laid out from a model's plan: its
// inputs, constants (packed where a kernel reads them packed), intermediates
// and outputs, one kernel call per group, and the control steps of its If
// and Loop nodes around their bodies' calls (runtime/package.h, CallKind).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/model/compile_model.h"
#include "compiler/schedule/layout.h"
#include "runtime/package.h"

namespace tessera::model {

/// Per task: the arguments its kernel reads packed, and how.
using ArgLayouts = std::vector<std::pair<int, PackedLayout>>;

/// Fills `out`'s values, calls (with their metadata), inputs and outputs for
/// `plan`, whose task t is the library's kernel `symbols[t]` reading the
/// arguments `task_layouts[t]` packed. Errors: kInternal when the plan is
/// inconsistent (a group reading a value no earlier group computes, a packed
/// argument that is not a constant).
/// `group_calls` gets the index of each group's (first) call.
Status lay_out_package(const ModelPlan& plan, const std::vector<ArgLayouts>& task_layouts,
                       const std::vector<std::string>& symbols, runtime::PackageContents* out,
                       std::vector<size_t>* group_calls);

}  // namespace tessera::model
