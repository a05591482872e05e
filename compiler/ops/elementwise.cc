#include "compiler/ops/elementwise.h"

#include <cmath>
#include <functional>

#include "compiler/ir/op.h"
#include "compiler/ops/op_util.h"

namespace tessera::ops {

using detail::check_float;
using detail::constant;
using detail::invalid;
using detail::shape_str;

namespace {

using BinaryFn = std::function<Expr(Expr, Expr)>;
using UnaryFn = std::function<Expr(Expr)>;

// The indices of `t` (broadcast into an output of rank `rank`) at output point i.
std::vector<Expr> broadcast_indices(const Tensor& t, const Vars& i) {
  const size_t offset = i.size() - t->shape.size();
  std::vector<Expr> idx;
  for (size_t d = 0; d < t->shape.size(); ++d) idx.push_back(t->shape[d] == 1 ? make_int(0) : static_cast<const Expr&>(i[offset + d]));
  return idx;
}

Status check_defined(const std::string& op, const Tensor& t) {
  if (!t.defined()) return invalid(op, "input is undefined");
  for (int64_t d : t->shape)
    if (d <= 0) return invalid(op, "input has an empty dimension: " + shape_str(t->shape));
  return Status::ok();
}

Result<Tensor> binary_op(const std::string& op, const Tensor& a, const Tensor& b, bool float_only,
                         const BinaryFn& f, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_defined(op, a));
  TESSERA_RETURN_IF_ERROR(check_defined(op, b));
  if (a->dtype != b->dtype)
    return invalid(op, "operand types differ: " + a->dtype.to_string() + " and " + b->dtype.to_string());
  if (float_only) TESSERA_RETURN_IF_ERROR(check_float(op, "input", a));
  auto shape = broadcast_shape(a->shape, b->shape);
  if (!shape.is_ok()) return shape.status().with_context(op);
  const bool same = a->shape == *shape && b->shape == *shape;
  return compute(
      *shape, [&](const Vars& i) { return f(read(a, broadcast_indices(a, i)), read(b, broadcast_indices(b, i))); },
      name, same ? OpPattern::kElementwise : OpPattern::kBroadcast);
}

Result<Tensor> unary_op(const std::string& op, const Tensor& x, bool float_only, const UnaryFn& f,
                        const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_defined(op, x));
  if (float_only) TESSERA_RETURN_IF_ERROR(check_float(op, "input", x));
  return compute(
      x->shape, [&](const Vars& i) { return f(read(x, detail::as_exprs(i))); }, name, OpPattern::kElementwise);
}

}  // namespace

Result<std::vector<int64_t>> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    // Dimension d counted from the end.
    const int64_t x = d < a.size() ? a[a.size() - 1 - d] : 1, y = d < b.size() ? b[b.size() - 1 - d] : 1;
    if (x != y && x != 1 && y != 1)
      return Status(ErrorCode::kInvalidArgument,
                    "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[rank - 1 - d] = x == 1 ? y : x;
  }
  return out;
}

Result<Tensor> add(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary_op("add", a, b, false, [](Expr x, Expr y) { return x + y; }, name);
}
Result<Tensor> sub(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary_op("sub", a, b, false, [](Expr x, Expr y) { return x - y; }, name);
}
Result<Tensor> mul(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary_op("mul", a, b, false, [](Expr x, Expr y) { return x * y; }, name);
}
Result<Tensor> div(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary_op("div", a, b, false, [](Expr x, Expr y) { return x / y; }, name);
}
Result<Tensor> maximum(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary_op("maximum", a, b, false, [](Expr x, Expr y) { return max(x, y); }, name);
}
Result<Tensor> minimum(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary_op("minimum", a, b, false, [](Expr x, Expr y) { return min(x, y); }, name);
}
Result<Tensor> power(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary_op("power", a, b, true, [](Expr x, Expr y) { return tessera::pow(x, y); }, name);
}

Result<Tensor> relu(const Tensor& x, const std::string& name) {
  return unary_op("relu", x, false, [](Expr v) { return max(v, constant(v.dtype(), 0.0)); }, name);
}
Result<Tensor> sigmoid(const Tensor& x, const std::string& name) {
  return unary_op("sigmoid", x, true, [](Expr v) { return tessera::sigmoid(v); }, name);
}
Result<Tensor> tanh(const Tensor& x, const std::string& name) {
  return unary_op("tanh", x, true, [](Expr v) { return tessera::tanh(v); }, name);
}
Result<Tensor> exp(const Tensor& x, const std::string& name) {
  return unary_op("exp", x, true, [](Expr v) { return tessera::exp(v); }, name);
}
Result<Tensor> hardswish(const Tensor& x, const std::string& name) {
  return unary_op("hardswish", x, true,
                  [](Expr v) {
                    DType t = v.dtype();
                    Expr gate = min(max(v + constant(t, 3.0), constant(t, 0.0)), constant(t, 6.0));
                    return v * gate / constant(t, 6.0);
                  },
                  name);
}
Result<Tensor> clip(const Tensor& x, double lo, double hi, const std::string& name) {
  if (!(lo <= hi)) return invalid("clip", "lo " + std::to_string(lo) + " must not exceed hi " + std::to_string(hi));
  return unary_op("clip", x, false,
                  [=](Expr v) { return min(max(v, constant(v.dtype(), lo)), constant(v.dtype(), hi)); }, name);
}
Result<Tensor> leaky_relu(const Tensor& x, double alpha, const std::string& name) {
  return unary_op("leaky_relu", x, true,
                  [=](Expr v) {
                    DType t = v.dtype();
                    return select(v > constant(t, 0.0), v, v * constant(t, alpha));
                  },
                  name);
}
Result<Tensor> gelu(const Tensor& x, const std::string& name) {
  return unary_op("gelu", x, true,
                  [](Expr v) {
                    DType t = v.dtype();
                    return constant(t, 0.5) * v * (constant(t, 1.0) + tessera::erf(v * constant(t, M_SQRT1_2)));
                  },
                  name);
}

}  // namespace tessera::ops
