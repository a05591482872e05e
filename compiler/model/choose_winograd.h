// Which convolutions run by Winograd: a measurement, not a rule.
//
// Winograd F(2x2, 3x3) does 2.25x fewer multiply-adds than the direct
// convolution, but its weights are 16/9 as large and it adds two transforms:
// a ResNet's 7x7x512 layers read 16 MB of transformed weights where the
// direct conv reads 9 MB. So tuning measures both kernels of every
// convolution that can run either way (tuning_plans), and compile time runs
// each by whichever has the faster best record (choose_winograd); untuned,
// by a rule screened on the fallbacks.
//
//   PreparedModel model = prepare_model(g).value();
//   auto plans = tuning_plans(model).value();      // tune the tasks of every plan
//   ModelPlan plan = plan_model_from_records(model, target, &records).value();
#pragma once

#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/model/compile_model.h"
#include "compiler/schedule/schedule_source.h"

namespace tessera::model {

/// The plans whose tasks tuning covers: the direct one and, when some
/// convolution can run by Winograd, the one where every such convolution
/// does. Tasks common to both have the same workload key.
Result<std::vector<ModelPlan>> tuning_plans(const PreparedModel& model, const PlanOptions& options = {});

/// How one convolution that can run by Winograd was decided.
struct WinogradChoice {
  std::string conv;       ///< the conv node's name
  std::string label;      ///< its direct kernel's task label
  double direct_s = 0;    ///< best record of its direct kernel; 0: none
  double winograd_s = 0;  ///< best record of its Winograd kernel; 0: none
  bool winograd = false;  ///< run by Winograd
  bool external = false;  ///< taken by the external backend (runs there, direct)
};

/// Decides each convolution that can run by Winograd: it does when its
/// Winograd kernel has a record on `target` (or a compatible one) and none
/// of its direct kernel is faster. When neither kernel has a record (or
/// there is no source), by the fallbacks' measured rule: Winograd when it
/// has at least 16 input and 16 output channels. Errors: the planning's and
/// the source's.
Result<std::vector<WinogradChoice>> choose_winograd(const PreparedModel& model, const Target& target,
                                                    ScheduleSource* source, const PlanOptions& options = {});

/// `options` with the convolutions `choices` picks listed for Winograd.
PlanOptions with_winograd(PlanOptions options, const std::vector<WinogradChoice>& choices);

/// plan_model with each convolution run the way its records say is faster
/// (choose_winograd); the decisions go to `choices` when given.
Result<ModelPlan> plan_model_from_records(const PreparedModel& model, const Target& target, ScheduleSource* source,
                                          std::vector<WinogradChoice>* choices = nullptr,
                                          const PlanOptions& options = {});

/// One line per convolution for people: "layer1.0.conv1  winograd
/// (winograd 0.394 ms, direct 0.638 ms)".
std::string format_winograd_choices(const std::vector<WinogradChoice>& choices);

}  // namespace tessera::model
