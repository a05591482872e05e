#include "compiler/ops/pool.h"

#include <cmath>
#include <limits>

#include "compiler/ir/op.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/op_util.h"

namespace tessera::ops {

using detail::check_float;
using detail::check_rank;
using detail::invalid;
using detail::Window;
using detail::window_geometry;

namespace {

Status check_padding_below_window(const std::string& op, const Padding2& p, Size2 kernel) {
  if (p.top >= kernel.h || p.bottom >= kernel.h || p.left >= kernel.w || p.right >= kernel.w)
    return invalid(op, "padding must be smaller than the window (a window entirely in padding has no input)");
  return Status::ok();
}

Result<Tensor> padded(const Tensor& x, const Padding2& p, double value) {
  if (p.is_zero()) return x;
  return pad(x, {0, 0, p.top, p.left}, {0, 0, p.bottom, p.right}, value, "pad");
}

// Max pooling over rows and columns at dims (h_dim, h_dim + 1) of a rank-4 x.
Result<Tensor> max_pool(const std::string& op, const Tensor& x, size_t h_dim, Size2 kernel, Size2 stride,
                        Padding2 padding, Size2 dilation, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  if (kernel.h <= 0 || kernel.w <= 0) return invalid(op, "kernel sizes must be positive");
  TESSERA_RETURN_IF_ERROR(check_padding_below_window(op, padding, kernel));
  TESSERA_ASSIGN_OR_RETURN(Window g, window_geometry(op, x->shape[h_dim], x->shape[h_dim + 1], kernel.h, kernel.w,
                                                     stride, padding, dilation));
  // Padding never wins: the type's lowest value (0 for unsigned types).
  const double lowest = x->dtype.is_float() ? -std::numeric_limits<double>::infinity()
                        : x->dtype.is_int() ? -std::ldexp(1.0, x->dtype.bits - 1)
                                            : 0.0;
  Tensor in = x;
  if (!padding.is_zero()) {
    std::vector<int64_t> before(4, 0), after(4, 0);
    before[h_dim] = padding.top, before[h_dim + 1] = padding.left;
    after[h_dim] = padding.bottom, after[h_dim + 1] = padding.right;
    TESSERA_ASSIGN_OR_RETURN(in, pad(x, before, after, lowest, "pad"));
  }
  IterVar ry = reduce_axis(kernel.h, "ry"), rx = reduce_axis(kernel.w, "rx");
  std::vector<int64_t> shape = x->shape;
  shape[h_dim] = g.out_h, shape[h_dim + 1] = g.out_w;
  return compute(
      shape,
      [&](const Vars& i) {
        std::vector<Expr> idx = {i[0], i[1], i[2], i[3]};
        idx[h_dim] = i[h_dim] * stride.h + ry->var * dilation.h;
        idx[h_dim + 1] = i[h_dim + 1] * stride.w + rx->var * dilation.w;
        return max_reduce(read(in, idx), {ry, rx});
      },
      name, OpPattern::kReduction);
}

}  // namespace

Result<Tensor> max_pool2d(const Tensor& x, Size2 kernel, Size2 stride, Padding2 padding, Size2 dilation,
                          const std::string& name) {
  return max_pool("max_pool2d", x, 2, kernel, stride, padding, dilation, name);
}

Result<Tensor> max_pool2d_nhwc(const Tensor& x, Size2 kernel, Size2 stride, Padding2 padding, Size2 dilation,
                               const std::string& name) {
  return max_pool("max_pool2d_nhwc", x, 1, kernel, stride, padding, dilation, name);
}

Result<Tensor> avg_pool2d(const Tensor& x, Size2 kernel, Size2 stride, Padding2 padding, bool count_include_pad,
                          const std::string& name) {
  const std::string op = "avg_pool2d";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_float(op, "X", x));
  if (kernel.h <= 0 || kernel.w <= 0) return invalid(op, "kernel sizes must be positive");
  TESSERA_RETURN_IF_ERROR(check_padding_below_window(op, padding, kernel));
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[2], x->shape[3], kernel.h, kernel.w, stride, padding, /*dilation=*/1));
  TESSERA_ASSIGN_OR_RETURN(Tensor in, padded(x, padding, 0.0));
  IterVar ry = reduce_axis(kernel.h, "ry"), rx = reduce_axis(kernel.w, "rx");
  const std::vector<int64_t> shape = {x->shape[0], x->shape[1], g.out_h, g.out_w};
  Tensor total = compute(
      shape,
      [&](const Vars& i) {
        return sum(read(in, {i[0], i[1], i[2] * stride.h + ry->var, i[3] * stride.w + rx->var}), {ry, rx});
      },
      name + ".sum", OpPattern::kReduction);
  const int64_t h = x->shape[2], w = x->shape[3];
  return compute(
      shape,
      [&](const Vars& i) {
        Expr count;
        if (count_include_pad || padding.is_zero()) {
          count = make_int(kernel.h * kernel.w);
        } else {
          // Rows [p*sh - top, p*sh - top + R) clipped to [0, H); columns alike.
          Expr h0 = i[2] * stride.h - padding.top, w0 = i[3] * stride.w - padding.left;
          count = (min(h0 + kernel.h, make_int(h)) - max(h0, make_int(0))) *
                  (min(w0 + kernel.w, make_int(w)) - max(w0, make_int(0)));
        }
        return read(total, detail::as_exprs(i)) / cast(x->dtype, count);
      },
      name, OpPattern::kElementwise);
}

Result<Tensor> global_avg_pool2d(const Tensor& x, const std::string& name) {
  const std::string op = "global_avg_pool2d";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_float(op, "X", x));
  IterVar ry = reduce_axis(x->shape[2], "ry"), rx = reduce_axis(x->shape[3], "rx");
  const std::vector<int64_t> shape = {x->shape[0], x->shape[1], 1, 1};
  Tensor total = compute(
      shape,
      [&](const Vars& i) {
        return sum(read(x, {i[0], i[1], ry->var, rx->var}), {ry, rx});
      },
      name + ".sum", OpPattern::kReduction);
  const double count = static_cast<double>(x->shape[2] * x->shape[3]);
  return compute(
      shape, [&](const Vars& i) { return read(total, detail::as_exprs(i)) / detail::constant(x->dtype, count); }, name,
      OpPattern::kElementwise);
}

}  // namespace tessera::ops
