// Padding and 2-D convolutions (NCHW with OIHW weights, NHWC with HWIO
// weights, depthwise NCHW and NHWC).
//
// A convolution with non-zero padding reads a separate "pad" stage (pattern
// kInjective) that selects the padding value outside the input, so a
// schedule can inline it or compute it at a loop of the convolution. The
// convolution itself is OpPattern::kComplex.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ops/window.h"
#include "compiler/te/tensor.h"

namespace tessera::ops {

/// out[i] = x[i - before] inside x, `value` outside; out's dims are
/// x's + before + after. Pattern kInjective.
Result<Tensor> pad(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                   double value = 0.0, const std::string& name = "pad");

/// The same padding by a value known at run time: `value` holds one
/// element (any shape), cast to x's type.
Result<Tensor> pad(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                   const Tensor& value, const std::string& name = "pad");

/// What an integer convolution's padding reads: a constant uint8, or a
/// uint8 tensor of one element known only at run time (the zero point a
/// dynamically quantized model computes from its input).
struct PadValue {
  PadValue(int64_t v = 0) : constant(v) {}      // NOLINT: a constant converts
  PadValue(Tensor t) : tensor(std::move(t)) {}  // NOLINT: so does a tensor
  int64_t constant = 0;
  Tensor tensor;
};

/// 2-D convolution of X: N x C x H x W with W: K x C/groups x R x S, giving
/// N x K x P x Q where P = (H + top + bottom - dilation.h * (R - 1) - 1) / stride.h + 1.
Result<Tensor> conv2d_nchw(const Tensor& x, const Tensor& w, Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1,
                           int64_t groups = 1, const std::string& name = "conv2d");

/// The same convolution on X: N x H x W x C with W: R x S x C/groups x K,
/// giving N x P x Q x K.
Result<Tensor> conv2d_nhwc(const Tensor& x, const Tensor& w, Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1,
                           int64_t groups = 1, const std::string& name = "conv2d_nhwc");

/// The integer convolution on a dot-product unit: X uint8 N x H x W x C
/// (C a multiple of 4) and int8 weights packed four input channels to an
/// int32 word, W: R x S x C/4 x K (W[r, s, q, k] holds the weights of
/// channels 4q .. 4q + 3), giving int32 N x P x Q x K, exact. The padding
/// reads `pad_value` (a uint8: the input's zero point, so that padding
/// adds nothing once the zero point's sum is taken off). Grouped: W is
/// R x S x C/(4 groups) x K, each group's input channels a multiple of 4.
Result<Tensor> conv2d_nhwc_u8s8(const Tensor& x, const Tensor& w, Size2 stride = 1, Padding2 padding = 0,
                                Size2 dilation = 1, const PadValue& pad_value = 0, int64_t groups = 1,
                                const std::string& name = "conv2d_nhwc_u8s8");

/// conv2d_nhwc_u8s8 (one group) computed as 2 x 2 tiles over eight bytes of
/// C at a time, pairs of output columns by pairs of output channels:
/// T[n, p, q2, k2, r, c] = sum over the window and the channels of the
/// products of pixel (p, 2 q2 + r) and channel 2 k2 + c, two words a step,
/// then Y[n, p, q, k] = T[n, p, q / 2, k / 2, q % 2, k % 2]. C a multiple of
/// 8, K even; an odd Q computes one more column (over padding) that Y never
/// reads. A vector of such tiles is what a matrix-multiply instruction
/// (AArch64's USMMLA, +i8mm) computes, one tile a register (the gemm_pairs
/// template); elsewhere the two words are two dot products. Same sums as
/// conv2d_nhwc_u8s8.
Result<Tensor> conv2d_nhwc_u8s8_pairs(const Tensor& x, const Tensor& w, Size2 stride = 1, Padding2 padding = 0,
                                      Size2 dilation = 1, const PadValue& pad_value = 0,
                                      const std::string& name = "conv2d_nhwc_u8s8_pairs");

/// The integer depthwise convolution (a quantized MobileNet's): X uint8
/// N x H x W x C, W int8 R x S x 1 x C*M (output channel k reads input
/// channel k / M), giving int32 N x P x Q x C*M, exact. The padding reads
/// `pad_value`. No dot product helps (a tap sums one channel), so the window
/// multiplies in float32 while that is exact (R * S <= 514 taps: every
/// partial sum of |uint8 * int8| <= 32640 stays below 2^24), in int32 past
/// that; the sums are cast to int32 by a tail stage.
Result<Tensor> depthwise_conv2d_nhwc_u8s8(const Tensor& x, const Tensor& w, Size2 stride = 1, Padding2 padding = 0,
                                          Size2 dilation = 1, const PadValue& pad_value = 0,
                                          const std::string& name = "depthwise_conv2d_nhwc_u8s8");

/// The bfloat16 convolution on a dot-product unit, accumulated in float32:
/// X bfloat16 N x H x W x C (C even) and the weights packed in pairs of
/// input channels, W: R x S x C/2 x K x 2 (W[r, s, q, k, j] is the weight
/// of channel 2q + j), giving float32 N x P x Q x K; zero padding.
Result<Tensor> conv2d_nhwc_bf16(const Tensor& x, const Tensor& w, Size2 stride = 1, Padding2 padding = 0,
                                Size2 dilation = 1, const std::string& name = "conv2d_nhwc_bf16");

/// Depthwise convolution of X: N x C x H x W with W: C x M x R x S (M output
/// channels per input channel), giving N x C*M x P x Q; output channel c
/// reads input channel c / M.
Result<Tensor> depthwise_conv2d_nchw(const Tensor& x, const Tensor& w, Size2 stride = 1, Padding2 padding = 0,
                                     Size2 dilation = 1, const std::string& name = "depthwise_conv2d");

/// The same depthwise convolution on X: N x H x W x C with W: R x S x 1 x C*M
/// (the HWIO weights of the grouped conv), giving N x P x Q x C*M; output
/// channel k reads input channel k / M.
Result<Tensor> depthwise_conv2d_nhwc(const Tensor& x, const Tensor& w, Size2 stride = 1, Padding2 padding = 0,
                                     Size2 dilation = 1, const std::string& name = "depthwise_conv2d_nhwc");

}  // namespace tessera::ops
