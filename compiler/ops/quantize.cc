#include "compiler/ops/quantize.h"

#include <cmath>

#include "compiler/ir/op.h"
#include "compiler/ops/elementwise.h"
#include "compiler/ops/op_util.h"

namespace tessera::ops {

using detail::broadcast_indices;
using detail::constant;
using detail::invalid;
using detail::shape_str;

namespace {

double integer_min(DType t) {
  return t.is_uint() ? 0.0 : -std::ldexp(1.0, t.bits - 1);
}
double integer_max(DType t) {
  return t.is_uint() ? std::ldexp(1.0, t.bits) - 1 : std::ldexp(1.0, t.bits - 1) - 1;
}

// scale and zero point broadcast to x's shape, x keeping it.
Status check_broadcast(const std::string& op, const Tensor& x, const Tensor& scale, const Tensor& zero_point) {
  for (const Tensor* t : {&x, &scale, &zero_point})
    if (!t->defined()) return invalid(op, "an input is undefined");
  auto with_scale = broadcast_shape(x->shape, scale->shape);
  auto with_zero = broadcast_shape(x->shape, zero_point->shape);
  if (!with_scale.is_ok() || *with_scale != x->shape || !with_zero.is_ok() || *with_zero != x->shape)
    return invalid(op, "scale " + shape_str(scale->shape) + " and zero point " + shape_str(zero_point->shape) +
                           " do not broadcast to the input " + shape_str(x->shape));
  if (scale->dtype != DType::f32()) return invalid(op, "the scale must be float32, not " + scale->dtype.to_string());
  return Status::ok();
}

OpPattern pattern(const Tensor& x, const Tensor& scale, const Tensor& zero_point) {
  return scale->shape == x->shape && zero_point->shape == x->shape ? OpPattern::kElementwise : OpPattern::kBroadcast;
}

}  // namespace

bool is_8_bit_integer(DType t) {
  return t == DType::i8() || t == DType::u8();
}

Result<Tensor> quantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_broadcast("quantize", x, scale, zero_point));
  if (x->dtype != DType::f32()) return invalid("quantize", "the input must be float32, not " + x->dtype.to_string());
  const DType t = zero_point->dtype;
  if (!is_8_bit_integer(t)) return invalid("quantize", "quantizes to int8 or uint8, not " + t.to_string());
  const DType f = DType::f32();
  return compute(
      x->shape,
      [&](const Vars& i) {
        const Expr q = round(read(x, broadcast_indices(x, i)) / read(scale, broadcast_indices(scale, i))) +
                       cast(f, read(zero_point, broadcast_indices(zero_point, i)));
        return cast(t, min(max(q, constant(f, integer_min(t))), constant(f, integer_max(t))));
      },
      name, pattern(x, scale, zero_point));
}

Result<Tensor> dequantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_broadcast("dequantize", x, scale, zero_point));
  if (!is_8_bit_integer(x->dtype) && x->dtype != DType::i32())
    return invalid("dequantize", "dequantizes int8, uint8 or int32, not " + x->dtype.to_string());
  if (zero_point->dtype != x->dtype)
    return invalid("dequantize",
                   "the zero point is " + zero_point->dtype.to_string() + ", the input " + x->dtype.to_string());
  const DType i32 = DType::i32();
  return compute(
      x->shape,
      [&](const Vars& i) {
        const Expr q =
            cast(i32, read(x, broadcast_indices(x, i))) - cast(i32, read(zero_point, broadcast_indices(zero_point, i)));
        return cast(DType::f32(), q) * read(scale, broadcast_indices(scale, i));
      },
      name, pattern(x, scale, zero_point));
}

double quantize_reference(double x, double scale, double zero_point, DType t) {
  const float q = std::nearbyint(static_cast<float>(x) / static_cast<float>(scale)) + static_cast<float>(zero_point);
  return std::fmin(std::fmax(q, integer_min(t)), integer_max(t));
}

double dequantize_reference(double x, double scale, double zero_point) {
  const auto q = static_cast<int32_t>(static_cast<int64_t>(x) - static_cast<int64_t>(zero_point));
  return static_cast<float>(q) * static_cast<float>(scale);
}

}  // namespace tessera::ops
