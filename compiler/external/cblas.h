// The `cblas` backend (C source): MatMul, Gemm (dense) and batched MatMul
// through cblas_sgemm, with bias and elementwise epilogues as generated C
// loops. The package's library links libopenblas.
#pragma once

#include <memory>

#include "compiler/external/backend.h"

namespace tessera::external {

/// The cblas backend. Takes float32 MatMul (rank >= 2; an operand view
/// from fold_matmul_views only when it moves no data, a flatten) and Gemm alone, and as composites followed by up to
/// four elementwise epilogues (add, sub, mul, div, max, min with operands that broadcast to the chain's shape; relu,
/// leaky_relu, clip, sigmoid, tanh, erf). Batch dimensions may broadcast from one operand only.
std::unique_ptr<Backend> make_cblas_backend();

}  // namespace tessera::external
