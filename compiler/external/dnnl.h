// The `dnnl` backend (graph payload): convolutions (grouped, depthwise),
// dense layers, pooling, ReLU / Clip, Add, Concat and Transpose through
// oneDNN. `generate` serialises a region as a small JSON graph (ops,
// attributes, shapes, which inputs are weights); the package carries it, and
// the runtime module libtessera_dnnl.so (runtime/dnnl) builds the oneDNN
// primitives at load. docs/byoc.md gives the payload's fields.
#pragma once

#include <memory>

#include "compiler/external/backend.h"

namespace tessera::external {

/// The payload format's version, written into every payload and checked by
/// the runtime module.
inline constexpr const char* kDnnlPayloadVersion = "1";

/// The shared library that runs dnnl payloads on the device.
inline constexpr const char* kDnnlModuleLibrary = "libtessera_dnnl.so";

/// The dnnl backend. Takes float32: Conv (NCHW or NHWC, any groups, not
/// Winograd), Gemm (2-D, alpha 1, no transposed A, a constant weight) and
/// 2-D MatMul with a constant weight as dense layers, MaxPool / AvgPool
/// (2-D windows, no dilation, no indices), ReLU, Clip, Add (same rank, or a
/// constant broadcast operand), Concat, Transpose. Conv and dense followed
/// by bias / residual adds, ReLU and Clip are composites (oneDNN post-ops).
std::unique_ptr<Backend> make_dnnl_backend();

}  // namespace tessera::external
