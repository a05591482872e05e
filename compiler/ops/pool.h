// 2-D pooling over NCHW tensors.
//
// Windows slide in floor mode. With padding, a "pad" stage (kInjective)
// feeds the window reduction (kReduction), as for convolutions.
#pragma once

#include <string>

#include "base/status.h"
#include "compiler/ops/window.h"
#include "compiler/te/tensor.h"

namespace tessera::ops {

/// out[n, c, p, q] = max over the kernel window (padding is -inf, so it never
/// wins). Each padding must be smaller than the window on its axis.
Result<Tensor> max_pool2d(const Tensor& x, Size2 kernel, Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1,
                          const std::string& name = "max_pool2d");
/// max_pool2d over NHWC: X N x H x W x C, output N x OH x OW x C.
Result<Tensor> max_pool2d_nhwc(const Tensor& x, Size2 kernel, Size2 stride = 1, Padding2 padding = 0,
                               Size2 dilation = 1, const std::string& name = "max_pool2d_nhwc");

/// out[n, c, p, q] = mean over the kernel window. With count_include_pad the
/// divisor is the window size; otherwise it counts only the input elements
/// inside the window. The window sum is the stage `name`.sum.
Result<Tensor> avg_pool2d(const Tensor& x, Size2 kernel, Size2 stride = 1, Padding2 padding = 0,
                          bool count_include_pad = false, const std::string& name = "avg_pool2d");

/// out[n, c, 0, 0] = mean of x[n, c, :, :]: N x C x 1 x 1. The sum is the
/// stage `name`.sum.
Result<Tensor> global_avg_pool2d(const Tensor& x, const std::string& name = "global_avg_pool2d");

}  // namespace tessera::ops
