// The weights of the dot-product kernels: int8 values packed four to an
// int32 word along their reduction axis (ops::matmul_u8s8,
// ops::conv2d_nhwc_u8s8), as the instruction reads them from one lane.
#pragma once

#include "base/status.h"
#include "compiler/graph/graph.h"

namespace tessera::graph {

/// `c` (int8) with indices 4q .. 4q + 3 of `axis` packed to word q of that
/// axis, the lowest index in the lowest byte: [..., n, ...] -> int32
/// [..., n / 4, ...]. kInvalidArgument when `c` is not int8 or the axis's
/// extent is not a multiple of 4.
Result<Constant> pack_int8_words(const Constant& c, size_t axis);

}  // namespace tessera::graph
