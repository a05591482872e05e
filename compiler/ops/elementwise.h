// Elementwise operators: binary ops with NumPy broadcasting and unary
// activations. Each is one compute stage: kElementwise when every input has
// the output's shape, kBroadcast when an input is broadcast.
#pragma once

#include <string>
#include <vector>

#include "compiler/te/tensor.h"
#include "runtime/status.h"

namespace tessera::ops {

/// The NumPy broadcast of two shapes (align trailing dims; each pair is equal
/// or has a 1), or kInvalidArgument naming both shapes.
Result<std::vector<int64_t>> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

/// a + b, a - b, a * b, a / b (floor division for integers), max(a, b),
/// min(a, b), pow(a, b) (floats), with NumPy broadcasting; both operands
/// must have one element type.
Result<Tensor> add(const Tensor& a, const Tensor& b, const std::string& name = "add");
Result<Tensor> sub(const Tensor& a, const Tensor& b, const std::string& name = "sub");
Result<Tensor> mul(const Tensor& a, const Tensor& b, const std::string& name = "mul");
Result<Tensor> div(const Tensor& a, const Tensor& b, const std::string& name = "div");
Result<Tensor> maximum(const Tensor& a, const Tensor& b, const std::string& name = "maximum");
Result<Tensor> minimum(const Tensor& a, const Tensor& b, const std::string& name = "minimum");
Result<Tensor> power(const Tensor& a, const Tensor& b, const std::string& name = "power");

/// max(x, 0).
Result<Tensor> relu(const Tensor& x, const std::string& name = "relu");
/// 1 / (1 + exp(-x)) (float).
Result<Tensor> sigmoid(const Tensor& x, const std::string& name = "sigmoid");
/// tanh(x) (float).
Result<Tensor> tanh(const Tensor& x, const std::string& name = "tanh");
/// exp(x) (float).
Result<Tensor> exp(const Tensor& x, const std::string& name = "exp");
/// x * min(max(x + 3, 0), 6) / 6 (float).
Result<Tensor> hardswish(const Tensor& x, const std::string& name = "hardswish");
/// min(max(x, lo), hi); lo <= hi.
Result<Tensor> clip(const Tensor& x, double lo, double hi, const std::string& name = "clip");
/// x > 0 ? x : alpha * x (float).
Result<Tensor> leaky_relu(const Tensor& x, double alpha = 0.01, const std::string& name = "leaky_relu");
/// 0.5 * x * (1 + erf(x / sqrt(2))) (float; the exact, erf form).
Result<Tensor> gelu(const Tensor& x, const std::string& name = "gelu");

}  // namespace tessera::ops
