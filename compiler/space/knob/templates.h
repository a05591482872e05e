// Knob templates: hand-written schedules with tunable knobs, one per
// operator family (TVM's AutoTVM templates).
//
// A template defines its knobs from the DAG and the Target (vector width,
// registers, core count), so one template serves AVX-512, AVX2 and NEON.
// Applying a configuration is an ordinary sequence of schedule primitives on
// a State: the result is a step list that replays on the DAG without the
// template (DESIGN.md, "Schedules are data").
//
//   const KnobTemplate* t = find_template("matmul");
//   KnobSpace space = t->define(*inst.dag, target).value();
//   KnobConfig c = space.config(1234).value();          // or t->fallback(...)
//   State s = apply_template(*t, inst.dag, c, target).value();
//   records_store(s.steps(), c.to_json());
//
// Templates find stages by the names and patterns the ops library gives
// (compiler/ops): "matmul", "dense" (+ "dense.matmul" with an epilogue),
// "batch_matmul", "pad", "conv2d", "conv2d_nhwc", "depthwise_conv2d",
// "max_pool2d", "avg_pool2d(.sum)", "global_avg_pool2d(.sum)".
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "base/target.h"
#include "compiler/schedule/state.h"
#include "compiler/space/knob/knob_space.h"

namespace tessera {

/// One entry of the template table: the operator it schedules and the three
/// functions of its family.
struct KnobTemplate {
  std::string_view op;      ///< operator spec name (compiler/ops/op_spec.h), e.g. "dense"
  std::string_view family;  ///< the schedule family, e.g. "gemm", "conv2d_nchw"
  /// The knobs of `dag` on `target`; kInvalidArgument when the DAG is not
  /// this operator.
  Result<KnobSpace> (*define)(const ComputeDAG& dag, const Target& target);
  /// Applies `config` (a point of define's space for the same DAG and
  /// target) to `state`, a fresh state of that DAG.
  Status (*apply)(const KnobConfig& config, const Target& target, State* state);
  /// The configuration compile time uses when no record exists: modelled on
  /// hand-written kernels for `target`, nearest to them within `space`.
  Result<KnobConfig> (*fallback)(const KnobSpace& space, const ComputeDAG& dag, const Target& target);
};

/// Every template, in a fixed order.
std::span<const KnobTemplate> knob_templates();

/// The template for operator `op` (a spec name such as "conv2d"), or nullptr.
const KnobTemplate* find_template(std::string_view op);

/// Defines the template's space, checks that `config` belongs to it
/// (kInvalidArgument otherwise) and returns the scheduled state; its
/// steps() replay on `dag`.
Result<State> apply_template(const KnobTemplate& t, std::shared_ptr<const ComputeDAG> dag, const KnobConfig& config,
                             const Target& target);

/// The template's fallback configuration applied to `dag`.
Result<State> apply_fallback(const KnobTemplate& t, std::shared_ptr<const ComputeDAG> dag, const Target& target);

}  // namespace tessera
