// The template families behind the table in templates.cc (internal to
// compiler/space). Each family has the three functions of KnobTemplate.
#pragma once

#include "compiler/space/knob/templates.h"

namespace tessera::template_detail {

/// matmul, dense (with its bias/ReLU tail) and batch_matmul: a register-tiled
/// micro-kernel computed at parallel output blocks (template_gemm.cc).
Result<KnobSpace> define_gemm(const ComputeDAG& dag, const Target& target);
Status apply_gemm(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_gemm(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// matmul_u8s8_pairs: 2 x 2 tiles of the int8 product, a vector of tiles per
/// micro-kernel row pair, for a matrix-multiply instruction (template_gemm_pairs.cc).
Result<KnobSpace> define_gemm_pairs(const ComputeDAG& dag, const Target& target);
Status apply_gemm_pairs(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_gemm_pairs(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// attention: a MatMul, its softmax and the context MatMul in one kernel, a
/// block of rows of a head at a time (template_attention.cc).
Result<KnobSpace> define_attention(const ComputeDAG& dag, const Target& target);
Status apply_attention(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_attention(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// conv2d NCHW: output channels unrolled, output width vectorized (template_conv.cc).
Result<KnobSpace> define_conv_nchw(const ComputeDAG& dag, const Target& target);
Status apply_conv_nchw(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_conv_nchw(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// conv2d NHWC: output width unrolled, output channels vectorized (template_conv.cc).
Result<KnobSpace> define_conv_nhwc(const ComputeDAG& dag, const Target& target);
Status apply_conv_nhwc(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_conv_nhwc(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// conv2d by Winograd F(2x2, 3x3), NHWC: input transform, batched gemm,
/// output transform with the tail (template_winograd.cc).
Result<KnobSpace> define_winograd(const ComputeDAG& dag, const Target& target);
Status apply_winograd(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_winograd(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// depthwise conv2d NCHW: output width vectorized, window unrolled (template_window.cc).
Result<KnobSpace> define_depthwise(const ComputeDAG& dag, const Target& target);
Status apply_depthwise(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_depthwise(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// depthwise conv2d NHWC: output channels vectorized, output columns
/// unrolled, window around them (template_depthwise_nhwc.cc).
Result<KnobSpace> define_depthwise_nhwc(const ComputeDAG& dag, const Target& target);
Status apply_depthwise_nhwc(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_depthwise_nhwc(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// max, average and global average pooling (template_window.cc).
Result<KnobSpace> define_pool(const ComputeDAG& dag, const Target& target);
Status apply_pool(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_pool(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

/// row-wise normalisations, softmax and layer_norm as a model fuses them:
/// parallel blocks of rows, each row's statistics computed at the row, the
/// row written vectorized (template_rows.cc).
Result<KnobSpace> define_rows(const ComputeDAG& dag, const Target& target);
Status apply_rows(const KnobConfig& config, const Target& target, State* state);
Result<KnobConfig> fallback_rows(const KnobSpace& space, const ComputeDAG& dag, const Target& target);

}  // namespace tessera::template_detail
