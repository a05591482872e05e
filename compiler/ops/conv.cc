#include "compiler/ops/conv.h"

#include <functional>

#include "compiler/ir/op.h"
#include "compiler/ops/op_util.h"

namespace tessera::ops {

using detail::check_rank;
using detail::invalid;
using detail::shape_str;
using detail::Window;
using detail::window_geometry;

namespace {

int64_t num_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Pads dims h_dim and w_dim of x, or returns x itself when there is no padding.
Result<Tensor> pad_spatial(const Tensor& x, int h_dim, int w_dim, const Padding2& p, double value,
                           const std::string& name) {
  if (p.is_zero()) return x;
  std::vector<int64_t> before(x->ndim(), 0), after(x->ndim(), 0);
  before[h_dim] = p.top;
  after[h_dim] = p.bottom;
  before[w_dim] = p.left;
  after[w_dim] = p.right;
  return pad(x, before, after, value, name);
}

// The same padding of an integer conv's NHWC input by its pad value.
Result<Tensor> pad_spatial(const std::string& op, const Tensor& x, const Padding2& p, const PadValue& value) {
  if (!value.tensor.defined()) {
    if (value.constant < 0 || value.constant > 255)
      return invalid(op, "the pad value " + std::to_string(value.constant) + " is not a uint8");
    return pad_spatial(x, 1, 2, p, static_cast<double>(value.constant), "pad");
  }
  if (value.tensor->dtype != DType::u8() || num_elements(value.tensor->shape) != 1)
    return invalid(op, "the pad value " + shape_str(value.tensor->shape) + " " + value.tensor->dtype.to_string() +
                           " is not one uint8");
  if (p.is_zero()) return x;
  return pad(x, {0, p.top, p.left, 0}, {0, p.bottom, p.right, 0}, value.tensor, "pad");
}

// out[i] = x[i - before] inside x, `outside()` elsewhere.
Result<Tensor> pad_with(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                        const std::function<Expr()>& outside, const std::string& name) {
  const int rank = x->ndim();
  if (static_cast<int>(before.size()) != rank || static_cast<int>(after.size()) != rank)
    return invalid("pad", "give one padding per dimension of " + shape_str(x->shape));
  std::vector<int64_t> shape(rank);
  for (int d = 0; d < rank; ++d) {
    if (before[d] < 0 || after[d] < 0) return invalid("pad", "padding must not be negative");
    shape[d] = x->shape[d] + before[d] + after[d];
  }
  return compute(
      shape,
      [&](const Vars& i) {
        Expr inside;
        std::vector<Expr> idx;
        for (int d = 0; d < rank; ++d) {
          if (before[d] == 0 && after[d] == 0) {
            idx.push_back(i[d]);
            continue;
          }
          Expr cond = i[d] >= before[d] && i[d] < x->shape[d] + before[d];
          inside = inside.defined() ? (inside && cond) : cond;
          idx.push_back(i[d] - before[d]);
        }
        Expr v = read(x, idx);
        return inside.defined() ? if_then_else(inside, v, outside()) : v;
      },
      name, OpPattern::kInjective);
}

}  // namespace

Result<Tensor> pad(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after, double value,
                   const std::string& name) {
  if (!x.defined()) return invalid("pad", "input is undefined");
  return pad_with(
      x, before, after, [&] { return detail::constant(x->dtype, value); }, name);
}

Result<Tensor> pad(const Tensor& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                   const Tensor& value, const std::string& name) {
  if (!x.defined() || !value.defined()) return invalid("pad", "input is undefined");
  if (num_elements(value->shape) != 1)
    return invalid("pad", "the pad value " + shape_str(value->shape) + " is not one element");
  return pad_with(
      x, before, after,
      [&] { return cast(x->dtype, read(value, std::vector<Expr>(value->shape.size(), make_int(0)))); }, name);
}

Result<Tensor> conv2d_nchw(const Tensor& x, const Tensor& w, Size2 stride, Padding2 padding, Size2 dilation,
                           int64_t groups, const std::string& name) {
  const std::string op = "conv2d_nchw";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "W", w, 4));
  const int64_t n = x->shape[0], c = x->shape[1], k = w->shape[0];
  if (groups <= 0 || c % groups != 0 || k % groups != 0)
    return invalid(op, "groups=" + std::to_string(groups) + " must be positive and divide C=" + std::to_string(c) +
                           " and K=" + std::to_string(k));
  const int64_t cg = c / groups, kg = k / groups;
  if (w->shape[1] != cg)
    return invalid(op,
                   "W " + shape_str(w->shape) + " must be K x C/groups x R x S with C/groups = " + std::to_string(cg));
  if (x->dtype != w->dtype) return invalid(op, "X and W types differ");
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[2], x->shape[3], w->shape[2], w->shape[3], stride, padding, dilation));
  TESSERA_ASSIGN_OR_RETURN(Tensor in, pad_spatial(x, 2, 3, padding, 0.0, "pad"));
  IterVar rc = reduce_axis(cg, "rc"), ry = reduce_axis(w->shape[2], "ry"), rx = reduce_axis(w->shape[3], "rx");
  return compute(
      {n, k, g.out_h, g.out_w},
      [&](const Vars& i) {
        Expr channel = groups == 1 ? static_cast<const Expr&>(rc->var) : (i[1] / kg) * cg + rc->var;
        Expr h = i[2] * stride.h + ry->var * dilation.h, wi = i[3] * stride.w + rx->var * dilation.w;
        return sum(read(in, {i[0], channel, h, wi}) * read(w, {i[1], rc->var, ry->var, rx->var}), {rc, ry, rx});
      },
      name, OpPattern::kComplex);
}

Result<Tensor> conv2d_nhwc(const Tensor& x, const Tensor& w, Size2 stride, Padding2 padding, Size2 dilation,
                           int64_t groups, const std::string& name) {
  const std::string op = "conv2d_nhwc";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "W", w, 4));
  const int64_t n = x->shape[0], c = x->shape[3], k = w->shape[3];
  if (groups <= 0 || c % groups != 0 || k % groups != 0)
    return invalid(op, "groups=" + std::to_string(groups) + " must be positive and divide C=" + std::to_string(c) +
                           " and K=" + std::to_string(k));
  const int64_t cg = c / groups, kg = k / groups;
  if (w->shape[2] != cg)
    return invalid(op,
                   "W " + shape_str(w->shape) + " must be R x S x C/groups x K with C/groups = " + std::to_string(cg));
  if (!detail::takes_weights(x, w)) return invalid(op, "X and W types differ");
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[1], x->shape[2], w->shape[0], w->shape[1], stride, padding, dilation));
  TESSERA_ASSIGN_OR_RETURN(Tensor in, pad_spatial(x, 1, 2, padding, 0.0, "pad"));
  IterVar ry = reduce_axis(w->shape[0], "ry"), rx = reduce_axis(w->shape[1], "rx"), rc = reduce_axis(cg, "rc");
  return compute(
      {n, g.out_h, g.out_w, k},
      [&](const Vars& i) {
        Expr channel = groups == 1 ? static_cast<const Expr&>(rc->var) : (i[3] / kg) * cg + rc->var;
        Expr h = i[1] * stride.h + ry->var * dilation.h, wi = i[2] * stride.w + rx->var * dilation.w;
        return sum(read(in, {i[0], h, wi, channel}) * detail::read_weight(x, w, {ry->var, rx->var, rc->var, i[3]}),
                   {ry, rx, rc});
      },
      name, OpPattern::kComplex);
}

Result<Tensor> conv2d_nhwc_u8s8(const Tensor& x, const Tensor& w, Size2 stride, Padding2 padding, Size2 dilation,
                                const PadValue& pad_value, int64_t groups, const std::string& name) {
  const std::string op = "conv2d_nhwc_u8s8";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "W", w, 4));
  if (x->dtype != DType::u8() || w->dtype != DType::i32())
    return invalid(op, "X is uint8 and W int32 words, not " + x->dtype.to_string() + " and " + w->dtype.to_string());
  const int64_t c = x->shape[3], k = w->shape[3];
  if (groups <= 0 || c % groups != 0 || k % groups != 0)
    return invalid(op, "groups=" + std::to_string(groups) + " must be positive and divide C=" + std::to_string(c) +
                           " and K=" + std::to_string(k));
  const int64_t cg = c / groups, kg = k / groups;
  if (cg % 4 != 0 || w->shape[2] != cg / 4)
    return invalid(op, "X " + shape_str(x->shape) + " and W " + shape_str(w->shape) +
                           " disagree on C (C/groups a multiple of 4, W holds C/(4 groups) words of four channels)");
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[1], x->shape[2], w->shape[0], w->shape[1], stride, padding, dilation));
  TESSERA_ASSIGN_OR_RETURN(Tensor in, pad_spatial(op, x, padding, pad_value));
  IterVar ry = reduce_axis(w->shape[0], "ry"), rx = reduce_axis(w->shape[1], "rx"), rc = reduce_axis(cg / 4, "rc");
  return compute(
      {x->shape[0], g.out_h, g.out_w, k},
      [&](const Vars& i) {
        Expr h = i[1] * stride.h + ry->var * dilation.h, wi = i[2] * stride.w + rx->var * dilation.w;
        Expr q = groups == 1 ? static_cast<const Expr&>(rc->var) : (i[3] / kg) * (cg / 4) + rc->var;
        Expr word = detail::byte_word(in, {i[0], h, wi}, q);
        return sum(dot_u8s8(word, read(w, {ry->var, rx->var, rc->var, i[3]})), {ry, rx, rc});
      },
      name, OpPattern::kComplex);
}

Result<Tensor> conv2d_nhwc_u8s8_pairs(const Tensor& x, const Tensor& w, Size2 stride, Padding2 padding, Size2 dilation,
                                      const PadValue& pad_value, const std::string& name) {
  const std::string op = "conv2d_nhwc_u8s8_pairs";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "W", w, 4));
  if (x->dtype != DType::u8() || w->dtype != DType::i32())
    return invalid(op, "X is uint8 and W int32 words, not " + x->dtype.to_string() + " and " + w->dtype.to_string());
  const int64_t c = x->shape[3], k = w->shape[3];
  if (c % 8 != 0 || w->shape[2] != c / 4 || k % 2 != 0)
    return invalid(op, "X " + shape_str(x->shape) + " and W " + shape_str(w->shape) +
                           " must have C a multiple of 8, W C/4 words of four channels and K even");
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[1], x->shape[2], w->shape[0], w->shape[1], stride, padding, dilation));
  // An odd Q: the tiles' last column reads one stride past the window's
  // reach, padding that the output never reads back.
  Padding2 reach = padding;
  if (g.out_w % 2 != 0) reach.right += stride.w;
  TESSERA_ASSIGN_OR_RETURN(Tensor in, pad_spatial(op, x, reach, pad_value));
  IterVar ry = reduce_axis(w->shape[0], "ry"), rx = reduce_axis(w->shape[1], "rx"), rc = reduce_axis(c / 8, "rc");
  const Expr two = make_int(2);
  Tensor t = compute(
      {x->shape[0], g.out_h, (g.out_w + 1) / 2, k / 2, 2, 2},
      [&](const Vars& i) {
        const Expr h = i[1] * stride.h + ry->var * dilation.h;
        const Expr wi = (i[2] * two + i[4]) * stride.w + rx->var * dilation.w;
        const Expr column = i[3] * two + i[5];
        auto product = [&](int word) {
          const Expr q = rc->var * two + make_int(word);
          return dot_u8s8(detail::byte_word(in, {i[0], h, wi}, q), read(w, {ry->var, rx->var, q, column}));
        };
        return sum(product(0) + product(1), {ry, rx, rc});
      },
      name + ".tiles", OpPattern::kComplex);
  return compute(
      {x->shape[0], g.out_h, g.out_w, k},
      [&](const Vars& i) {
        return read(t, {i[0], i[1], i[2] / two, i[3] / two, i[2] % two, i[3] % two});
      },
      name, OpPattern::kInjective);
}

Result<Tensor> depthwise_conv2d_nhwc_u8s8(const Tensor& x, const Tensor& w, Size2 stride, Padding2 padding,
                                          Size2 dilation, const PadValue& pad_value, const std::string& name) {
  const std::string op = "depthwise_conv2d_nhwc_u8s8";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "W", w, 4));
  if (x->dtype != DType::u8() || w->dtype != DType::i8())
    return invalid(op, "X is uint8 and W int8, not " + x->dtype.to_string() + " and " + w->dtype.to_string());
  const int64_t c = x->shape[3], k = w->shape[3];
  if (w->shape[2] != 1 || k % c != 0)
    return invalid(op, "W " + shape_str(w->shape) + " must be R x S x 1 x C*M with C = " + std::to_string(c));
  const int64_t m = k / c;
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[1], x->shape[2], w->shape[0], w->shape[1], stride, padding, dilation));
  TESSERA_ASSIGN_OR_RETURN(Tensor in, pad_spatial(op, x, padding, pad_value));
  // Exact in float32 while no partial sum can pass 2^24 (see conv.h).
  constexpr int64_t kExactFloatTaps = (int64_t{1} << 24) / (255 * 128);
  const DType acc = w->shape[0] * w->shape[1] <= kExactFloatTaps ? DType::f32() : DType::i32();
  IterVar ry = reduce_axis(w->shape[0], "ry"), rx = reduce_axis(w->shape[1], "rx");
  Tensor sums = compute(
      {x->shape[0], g.out_h, g.out_w, k},
      [&](const Vars& i) {
        Expr ic = m == 1 ? static_cast<const Expr&>(i[3]) : i[3] / m;
        Expr h = i[1] * stride.h + ry->var * dilation.h, wi = i[2] * stride.w + rx->var * dilation.w;
        return sum(cast(acc, read(in, {i[0], h, wi, ic})) * cast(acc, read(w, {ry->var, rx->var, make_int(0), i[3]})),
                   {ry, rx});
      },
      acc == DType::i32() ? name : name + ".sums", OpPattern::kComplex);
  if (acc == DType::i32()) return sums;
  return compute(
      sums->shape, [&](const Vars& i) { return cast(DType::i32(), read(sums, detail::as_exprs(i))); }, name,
      OpPattern::kElementwise);
}

Result<Tensor> conv2d_nhwc_bf16(const Tensor& x, const Tensor& w, Size2 stride, Padding2 padding, Size2 dilation,
                                const std::string& name) {
  const std::string op = "conv2d_nhwc_bf16";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "W", w, 5));
  if (x->dtype != DType::bf16() || w->dtype != DType::bf16())
    return invalid(op, "X and W are bfloat16, not " + x->dtype.to_string() + " and " + w->dtype.to_string());
  const int64_t c = x->shape[3];
  if (c % 2 != 0 || w->shape[2] != c / 2 || w->shape[4] != 2)
    return invalid(op, "X " + shape_str(x->shape) + " and W " + shape_str(w->shape) +
                           " disagree on C (C even, W is R x S x C/2 x K x 2)");
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[1], x->shape[2], w->shape[0], w->shape[1], stride, padding, dilation));
  TESSERA_ASSIGN_OR_RETURN(Tensor in, pad_spatial(x, 1, 2, padding, 0.0, "pad"));
  IterVar ry = reduce_axis(w->shape[0], "ry"), rx = reduce_axis(w->shape[1], "rx"), rc = reduce_axis(c / 2, "rc");
  return compute(
      {x->shape[0], g.out_h, g.out_w, w->shape[3]},
      [&](const Vars& i) {
        Expr h = i[1] * stride.h + ry->var * dilation.h, wi = i[2] * stride.w + rx->var * dilation.w;
        Expr two_c = rc->var * make_int(2);
        Expr pixel = pack_bf16(read(in, {i[0], h, wi, two_c}), read(in, {i[0], h, wi, two_c + make_int(1)}));
        Expr weight = pack_bf16(read(w, {ry->var, rx->var, rc->var, i[3], make_int(0)}),
                                read(w, {ry->var, rx->var, rc->var, i[3], make_int(1)}));
        return sum(dot_bf16(pixel, weight), {ry, rx, rc});
      },
      name, OpPattern::kComplex);
}

Result<Tensor> depthwise_conv2d_nchw(const Tensor& x, const Tensor& w, Size2 stride, Padding2 padding, Size2 dilation,
                                     const std::string& name) {
  const std::string op = "depthwise_conv2d_nchw";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "W", w, 4));
  const int64_t c = x->shape[1], m = w->shape[1];
  if (w->shape[0] != c)
    return invalid(op, "W " + shape_str(w->shape) + " must be C x M x R x S with C = " + std::to_string(c));
  if (x->dtype != w->dtype) return invalid(op, "X and W types differ");
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[2], x->shape[3], w->shape[2], w->shape[3], stride, padding, dilation));
  TESSERA_ASSIGN_OR_RETURN(Tensor in, pad_spatial(x, 2, 3, padding, 0.0, "pad"));
  IterVar ry = reduce_axis(w->shape[2], "ry"), rx = reduce_axis(w->shape[3], "rx");
  return compute(
      {x->shape[0], c * m, g.out_h, g.out_w},
      [&](const Vars& i) {
        Expr ic = m == 1 ? static_cast<const Expr&>(i[1]) : i[1] / m, im = m == 1 ? make_int(0) : i[1] % m;
        Expr h = i[2] * stride.h + ry->var * dilation.h, wi = i[3] * stride.w + rx->var * dilation.w;
        return sum(read(in, {i[0], ic, h, wi}) * read(w, {ic, im, ry->var, rx->var}), {ry, rx});
      },
      name, OpPattern::kComplex);
}

Result<Tensor> depthwise_conv2d_nhwc(const Tensor& x, const Tensor& w, Size2 stride, Padding2 padding, Size2 dilation,
                                     const std::string& name) {
  const std::string op = "depthwise_conv2d_nhwc";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "W", w, 4));
  const int64_t c = x->shape[3], k = w->shape[3];
  if (w->shape[2] != 1 || k % c != 0)
    return invalid(op, "W " + shape_str(w->shape) + " must be R x S x 1 x C*M with C = " + std::to_string(c));
  if (!detail::takes_weights(x, w)) return invalid(op, "X and W types differ");
  const int64_t m = k / c;
  TESSERA_ASSIGN_OR_RETURN(
      Window g, window_geometry(op, x->shape[1], x->shape[2], w->shape[0], w->shape[1], stride, padding, dilation));
  TESSERA_ASSIGN_OR_RETURN(Tensor in, pad_spatial(x, 1, 2, padding, 0.0, "pad"));
  IterVar ry = reduce_axis(w->shape[0], "ry"), rx = reduce_axis(w->shape[1], "rx");
  return compute(
      {x->shape[0], g.out_h, g.out_w, k},
      [&](const Vars& i) {
        Expr ic = m == 1 ? static_cast<const Expr&>(i[3]) : i[3] / m;
        Expr h = i[1] * stride.h + ry->var * dilation.h, wi = i[2] * stride.w + rx->var * dilation.w;
        return sum(read(in, {i[0], h, wi, ic}) * detail::read_weight(x, w, {ry->var, rx->var, make_int(0), i[3]}),
                   {ry, rx});
      },
      name, OpPattern::kComplex);
}

}  // namespace tessera::ops
