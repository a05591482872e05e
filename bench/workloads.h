// The workloads the issues name and their random arguments, shared by the
// benchmarks that measure them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ops/op_spec.h"
#include "runtime/ndarray.h"

namespace tessera::bench {

/// Every argument of `op` (inputs and outputs, in the kernel's order) as an
/// array of random values, seeded 1, 2, ... by position.
inline std::vector<runtime::NDArray> make_args(const ops::OpInstance& op) {
  std::vector<runtime::NDArray> args;
  uint64_t seed = 1;
  for (const Tensor& t : op.dag->args()) {
    args.push_back(runtime::NDArray::create(t->shape, t->dtype).value());
    args.back().fill_random(seed++);
  }
  return args;
}

/// One 2-D convolution layer: C input channels of H x W, K outputs, an
/// R x S window, batch 1.
struct ConvLayer {
  int64_t c, h, w, k, r, s, stride, pad;
};

/// The ResNet-50 layers of the tuning benchmarks: (64,56,56,64,3x3),
/// (128,28,28,128,3x3), (256,14,14,256,3x3), (64,56,56,256,1x1).
inline std::vector<ConvLayer> resnet50_conv_layers() {
  return {{64, 56, 56, 64, 3, 3, 1, 1},
          {128, 28, 28, 128, 3, 3, 1, 1},
          {256, 14, 14, 256, 3, 3, 1, 1},
          {64, 56, 56, 256, 1, 1, 1, 0}};
}

/// The layer as an NHWC operator spec (the layout the model compiler gives
/// conv-heavy graphs): "conv2d_nhwc:N=1,C=64,...".
inline std::string conv2d_nhwc_spec(const ConvLayer& l) {
  return "conv2d_nhwc:N=1,C=" + std::to_string(l.c) + ",H=" + std::to_string(l.h) + ",W=" + std::to_string(l.w) +
         ",K=" + std::to_string(l.k) + ",R=" + std::to_string(l.r) + ",S=" + std::to_string(l.s) +
         ",stride=" + std::to_string(l.stride) + ",pad=" + std::to_string(l.pad);
}

}  // namespace tessera::bench
