// The 3x3 convolution by Winograd's minimal filtering, F(2x2, 3x3), in NHWC.
//
// Each 2x2 block of outputs (a tile) comes from the 4x4 input patch around it
// in 16 products instead of 36: the patch d is transformed to V = B^T d B, the
// weights g to U = G g G^T (once, ahead of time: winograd_f2x3_weights), and
// the outputs are A^T (U . V) A. Summed over the input channels, the 16
// element-wise products are 16 independent matrix products,
//
//   M[e, v, tile, k] = sum over c of V[e, v, tile, c] * U[e, v, c, k],
//
// 2.25x fewer multiply-adds than the direct convolution, for the price of the
// two transforms and of U being 16/9 the size of the weights.
//
// Stages (the template in compiler/space/template_winograd.cc finds them by
// pattern): "pad" (kInjective, optional), name.input (V, kInjective, four
// reads per element: B's rows have two non-zeros, both +-1), name.gemm (M,
// kComplex), name (the output transform, kInjective: nine reads of M).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ops/window.h"
#include "compiler/te/tensor.h"

namespace tessera::ops {

/// U = G g G^T for every (input channel, output channel) of 3 x 3 x C x K
/// (HWIO) float weights, as 4 x 4 x C x K.
std::vector<float> winograd_f2x3_weights(const std::vector<float>& hwio, int64_t c, int64_t k);

/// The stride-1, undilated 3x3 convolution of X: N x H x W x C whose weights
/// are given transformed, U: 4 x 4 x C x K (winograd_f2x3_weights), giving
/// N x P x Q x K with P = H + top + bottom - 2 (likewise Q).
Result<Tensor> conv2d_winograd_nhwc(const Tensor& x, const Tensor& u, Padding2 padding = 0,
                                    const std::string& name = "conv2d_winograd_nhwc");

}  // namespace tessera::ops
