// Matrix products: matmul, dense (fully connected) and batch_matmul.
//
// Each returns its output tensor (OpPattern::kComplex: a reduction with data
// reuse); epilogues (bias, ReLU) are separate elementwise/broadcast stages so
// that schedules can inline them or compute the product at them.
#pragma once

#include <optional>
#include <string>

#include "compiler/te/tensor.h"
#include "base/status.h"

namespace tessera::ops {

/// C[i, j] = sum_k A[i, k] * B[k, j] for A: M x K and B: K x N.
Result<Tensor> matmul(const Tensor& a, const Tensor& b, const std::string& name = "matmul");

/// Y[i, j] = act(sum_k X[i, k] * W[j, k] + bias[j]) for X: M x K, W: N x K
/// (TVM's layout) and an optional bias of N; act is ReLU when `relu`. With a
/// bias or ReLU the product is the stage `name`.matmul and the output `name`
/// is a broadcast/elementwise epilogue stage.
Result<Tensor> dense(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias = std::nullopt,
                     bool relu = false, const std::string& name = "dense");

/// C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] for A: Bt x M x K, B: Bt x K x N.
Result<Tensor> batch_matmul(const Tensor& a, const Tensor& b, const std::string& name = "batch_matmul");

}  // namespace tessera::ops
