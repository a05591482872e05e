// Linear quantization of tensors, as ONNX defines it: a float x stands for
// the integer q = saturate(round_half_even(x / scale) + zero_point), and q
// for x = (q - zero_point) * scale. Each is one broadcast stage; the scale
// and zero point broadcast against x (one value per tensor, or one per
// channel shaped to align with its axis).
#pragma once

#include <string>

#include "base/status.h"
#include "compiler/te/tensor.h"

namespace tessera::ops {

/// saturate(round_half_even(x / scale) + zero_point) in zero_point's type
/// (int8, uint8 or int32). x and scale are float32; kInvalidArgument for
/// other types or shapes that do not broadcast to x's.
Result<Tensor> quantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                        const std::string& name = "quantize");

/// (x - zero_point) * scale in float32, the difference taken in int32 (exact
/// for int8, uint8 and int32 x). zero_point has x's type.
Result<Tensor> dequantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                          const std::string& name = "dequantize");

/// quantize() of one element, computed as the kernel does (float32 division,
/// half to even): the reference constant folding uses.
double quantize_reference(double x, double scale, double zero_point, DType t);
/// dequantize() of one element in float32.
double dequantize_reference(double x, double scale, double zero_point);

/// int8 or uint8: the types quantize() writes and dequantize() reads
/// besides int32.
bool is_8_bit_integer(DType t);

}  // namespace tessera::ops
