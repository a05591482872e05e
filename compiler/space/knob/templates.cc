#include "compiler/space/knob/templates.h"

#include "compiler/space/knob/template_families.h"

namespace tessera {
namespace {

using namespace template_detail;

// One row per operator spec name; rows of one family share its functions.
constexpr KnobTemplate kTemplates[] = {
    {"matmul", "gemm", define_gemm, apply_gemm, fallback_gemm},
    {"matmul_u8s8", "gemm", define_gemm, apply_gemm, fallback_gemm},
    {"matmul_u8s8_pairs", "gemm_pairs", define_gemm_pairs, apply_gemm_pairs, fallback_gemm_pairs},
    {"matmul_bf16", "gemm", define_gemm, apply_gemm, fallback_gemm},
    {"matmul_f16w", "gemm", define_gemm, apply_gemm, fallback_gemm},
    {"dense", "gemm", define_gemm, apply_gemm, fallback_gemm},
    {"batch_matmul", "gemm", define_gemm, apply_gemm, fallback_gemm},
    {"conv1d", "gemm", define_gemm, apply_gemm, fallback_gemm},
    {"conv2d", "conv2d_nchw", define_conv_nchw, apply_conv_nchw, fallback_conv_nchw},
    {"conv2d_nhwc", "conv2d_nhwc", define_conv_nhwc, apply_conv_nhwc, fallback_conv_nhwc},
    {"conv2d_nhwc_u8s8", "conv2d_nhwc", define_conv_nhwc, apply_conv_nhwc, fallback_conv_nhwc},
    {"conv2d_nhwc_u8s8_pairs", "gemm_pairs", define_gemm_pairs, apply_gemm_pairs, fallback_gemm_pairs},
    {"conv2d_nhwc_bf16", "conv2d_nhwc", define_conv_nhwc, apply_conv_nhwc, fallback_conv_nhwc},
    {"conv2d_winograd_nhwc", "conv2d_winograd_nhwc", define_winograd, apply_winograd, fallback_winograd},
    {"depthwise_conv2d", "depthwise_conv2d_nchw", define_depthwise, apply_depthwise, fallback_depthwise},
    {"depthwise_conv2d_nhwc", "depthwise_conv2d_nhwc", define_depthwise_nhwc, apply_depthwise_nhwc,
     fallback_depthwise_nhwc},
    {"depthwise_conv2d_nhwc_u8s8", "depthwise_conv2d_nhwc", define_depthwise_nhwc, apply_depthwise_nhwc,
     fallback_depthwise_nhwc},
    {"max_pool2d", "pool2d", define_pool, apply_pool, fallback_pool},
    {"avg_pool2d", "pool2d", define_pool, apply_pool, fallback_pool},
    {"global_avg_pool2d", "pool2d", define_pool, apply_pool, fallback_pool},
    // Not an operator spec: the schedule compiler/model gives a model's
    // softmax and layer_norm kernels (with what they fused).
    {"rows", "rows", define_rows, apply_rows, fallback_rows},
    // Not an operator spec either: a model's attention chains
    // (compiler/graph/fuse_ops.h), scores to context in one kernel.
    {"attention", "attention", define_attention, apply_attention, fallback_attention},
};

}  // namespace

std::span<const KnobTemplate> knob_templates() {
  return kTemplates;
}

const KnobTemplate* find_template(std::string_view op) {
  for (const KnobTemplate& t : kTemplates)
    if (t.op == op) return &t;
  return nullptr;
}

Result<State> apply_template(const KnobTemplate& t, std::shared_ptr<const ComputeDAG> dag, const KnobConfig& config,
                             const Target& target) {
  const std::string where = "template " + std::string(t.family) + " (" + std::string(t.op) + ")";
  TESSERA_ASSIGN_OR_RETURN(KnobSpace space, t.define(*dag, target));
  if (!space.contains(config))
    return Status(ErrorCode::kInvalidArgument,
                  where + ": configuration " + config.to_string() + " is not a point of this DAG's space");
  State state(std::move(dag));
  Status st = t.apply(config, target, &state);
  if (!st.is_ok()) return st.with_context(where + " with " + config.to_string());
  return state;
}

Result<State> apply_fallback(const KnobTemplate& t, std::shared_ptr<const ComputeDAG> dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(KnobSpace space, t.define(*dag, target));
  TESSERA_ASSIGN_OR_RETURN(KnobConfig config, t.fallback(space, *dag, target));
  return apply_template(t, std::move(dag), config, target);
}

}  // namespace tessera
