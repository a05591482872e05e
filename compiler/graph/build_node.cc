#include "compiler/graph/build_node.h"

#include <cmath>
#include <iterator>
#include <optional>

#include "compiler/ir/op.h"
#include "compiler/ops/ops.h"

namespace tessera::graph {

namespace {

Status error(const Node& n, const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, std::string("node ") + n.name + " (" + op_kind_name(n.kind) + "): " + why);
}

Expr cst(DType t, double v) {
  return make_const(t, v);
}

std::vector<Expr> exprs(const Vars& vars) {
  std::vector<Expr> out;
  for (const Var& v : vars) out.push_back(static_cast<const Expr&>(v));
  return out;
}

// y[..., k, ...] = x[..., k, ...] op per-channel vectors (channels on `axis`, 1 by default).
Tensor channel_epilogue(const Tensor& x, const std::function<Expr(Expr, const Expr&)>& f, const std::string& name,
                        size_t axis = 1) {
  return compute(
      x->shape, [&](const Vars& i) { return f(read(x, exprs(i)), i[axis]); }, name, OpPattern::kBroadcast);
}

// A grouped NCHW conv with one input channel per group and one output channel
// per group (multiplier 1): its OIHW weights C x 1 x R x S are the depthwise
// operator's C x M x R x S. A multiplier above 1 keeps the grouped form, as
// its weights are shaped K x 1 x R x S (the depthwise templates take both).
bool is_depthwise_nchw(const ConvAttrs& a, const Tensor& x, const Tensor& w) {
  return !a.nhwc && a.groups > 1 && x->ndim() == 4 && w->ndim() == 4 && a.groups == x->shape[1] &&
         w->shape[0] == x->shape[1] && w->shape[1] == 1;
}

// The same in NHWC: its HWIO weights R x S x 1 x K are the NHWC depthwise
// operator's, for any multiplier K / C.
bool is_depthwise_nhwc(const ConvAttrs& a, const Tensor& x, const Tensor& w) {
  return a.nhwc && !a.winograd && a.groups > 1 && x->ndim() == 4 && w->ndim() == 4 && a.groups == x->shape[3] &&
         w->shape[2] == 1;
}

Result<Tensor> build_conv(const Node& n, const std::vector<Tensor>& in) {
  const auto& a = std::get<ConvAttrs>(n.attrs);
  const ops::Padding2 pad(a.pad_top, a.pad_left, a.pad_bottom, a.pad_right);
  Tensor y;
  if (a.winograd) {
    TESSERA_ASSIGN_OR_RETURN(y, ops::conv2d_winograd_nhwc(in[0], in[1], pad, n.name));
  } else if (is_depthwise_nchw(a, in[0], in[1])) {
    // The operator library's depthwise form: the DAG (and so the workload
    // key) of `tessera tune --op depthwise_conv2d:...` for the same layer.
    TESSERA_ASSIGN_OR_RETURN(y, ops::depthwise_conv2d_nchw(in[0], in[1], ops::Size2(a.stride_h, a.stride_w), pad,
                                                           ops::Size2(a.dilation_h, a.dilation_w), n.name));
  } else if (is_depthwise_nhwc(a, in[0], in[1])) {
    TESSERA_ASSIGN_OR_RETURN(y, ops::depthwise_conv2d_nhwc(in[0], in[1], ops::Size2(a.stride_h, a.stride_w), pad,
                                                           ops::Size2(a.dilation_h, a.dilation_w), n.name));
  } else {
    auto conv = a.nhwc ? ops::conv2d_nhwc : ops::conv2d_nchw;
    TESSERA_ASSIGN_OR_RETURN(y, conv(in[0], in[1], ops::Size2(a.stride_h, a.stride_w), pad,
                                     ops::Size2(a.dilation_h, a.dilation_w), a.groups, n.name));
  }
  if (in.size() < 3) return y;
  const Tensor bias = in[2];
  return channel_epilogue(
      y, [&](Expr v, const Expr& k) { return v + read(bias, {k}); }, n.name + ".bias", a.nhwc ? 3 : 1);
}

// kConvU8S8: NHWC on the dot-product path (weights packed to words) or
// the depthwise one (int8 weights R x S x 1 x K); NCHW (as imported)
// widened to int32, padded with the pad value, then a plain convolution.
// The padding reads the pad value, or a third input (a zero point known at
// run time).
Result<Tensor> build_conv_u8s8(const Node& n, const std::vector<Tensor>& in) {
  const auto& a = std::get<ConvAttrs>(n.attrs);
  const ops::Padding2 pad(a.pad_top, a.pad_left, a.pad_bottom, a.pad_right);
  const ops::Size2 stride(a.stride_h, a.stride_w), dilation(a.dilation_h, a.dilation_w);
  const ops::PadValue pad_value = in.size() > 2 ? ops::PadValue(in[2]) : ops::PadValue(a.pad_value);
  if (a.nhwc && in[1]->dtype == DType::i8()) {
    if (!is_depthwise_nhwc(a, in[0], in[1])) return error(n, "int8 NHWC weights are a depthwise conv's alone");
    return ops::depthwise_conv2d_nhwc_u8s8(in[0], in[1], stride, pad, dilation, pad_value, n.name);
  }
  if (a.nhwc && a.pairs) {
    if (a.groups != 1) return error(n, "a convolution in 2 x 2 tiles has one group");
    return ops::conv2d_nhwc_u8s8_pairs(in[0], in[1], stride, pad, dilation, pad_value, n.name);
  }
  if (a.nhwc) return ops::conv2d_nhwc_u8s8(in[0], in[1], stride, pad, dilation, pad_value, a.groups, n.name);
  auto widen = [&](const Tensor& t, const std::string& name) {
    return compute(
        t->shape, [&](const Vars& i) { return cast(DType::i32(), read(t, exprs(i))); }, name, OpPattern::kElementwise);
  };
  const Tensor x = widen(in[0], n.name + ".x_i32");
  const std::vector<int64_t> before = {0, 0, a.pad_top, a.pad_left}, after = {0, 0, a.pad_bottom, a.pad_right};
  TESSERA_ASSIGN_OR_RETURN(
      Tensor padded, in.size() > 2 ? ops::pad(x, before, after, in[2], n.name + ".pad")
                                   : ops::pad(x, before, after, static_cast<double>(a.pad_value), n.name + ".pad"));
  return ops::conv2d_nchw(padded, widen(in[1], n.name + ".w_i32"), stride, 0, dilation, a.groups, n.name);
}

// kConvBf16: the bfloat16 convolution (NHWC), then its bias.
Result<Tensor> build_conv_bf16(const Node& n, const std::vector<Tensor>& in) {
  const auto& a = std::get<ConvAttrs>(n.attrs);
  if (!a.nhwc || a.groups != 1) return error(n, "a bfloat16 convolution is NHWC with one group");
  TESSERA_ASSIGN_OR_RETURN(Tensor y,
                           ops::conv2d_nhwc_bf16(in[0], in[1], ops::Size2(a.stride_h, a.stride_w),
                                                 ops::Padding2(a.pad_top, a.pad_left, a.pad_bottom, a.pad_right),
                                                 ops::Size2(a.dilation_h, a.dilation_w), n.name));
  if (in.size() < 3) return y;
  const Tensor bias = in[2];
  return channel_epilogue(
      y, [&](Expr v, const Expr& k) { return v + read(bias, {k}); }, n.name + ".bias", 3);
}

// The strided ConvTranspose by phases: output row y = oy * sh + py only
// receives window rows r = (py + pad_top) % sh + r' * sh, from input row
// iy = oy + (py + pad_top) / sh - r' (likewise for columns). Each phase
// (py, px) is a dense convolution over R/sh x S/sw taps, instead of R x S taps
// of which all but one in sh * sw are masked. Applies when the window and the
// output divide by the stride and dilation is 1; the phases are computed as
// [N, sh, sw, K, OY/sh, OX/sw] (the last axis contiguous in the input too) and
// interleaved by an injective stage that inlines into the epilogue.
std::optional<Tensor> conv_transpose_by_phases(const ConvAttrs& a, const Tensor& x, const Tensor& w,
                                               const std::vector<int64_t>& out_shape, const std::string& name) {
  const int64_t sh = a.stride_h, sw = a.stride_w, r_taps = w->shape[2], s_taps = w->shape[3];
  if ((sh == 1 && sw == 1) || a.dilation_h != 1 || a.dilation_w != 1 || r_taps % sh || s_taps % sw ||
      out_shape[2] % sh || out_shape[3] % sw)
    return std::nullopt;
  const int64_t cg = x->shape[1] / a.groups, kg = w->shape[1];
  IterVar c = reduce_axis(cg, "c"), r = reduce_axis(r_taps / sh, "r"), s = reduce_axis(s_taps / sw, "s");
  const DType t = x->dtype;
  auto i64 = [](int64_t v) { return make_int(v); };
  Tensor phases = compute(
      {out_shape[0], sh, sw, out_shape[1], out_shape[2] / sh, out_shape[3] / sw},
      [&](const Vars& i) {
        const Expr py = static_cast<const Expr&>(i[1]) + i64(a.pad_top);
        const Expr px = static_cast<const Expr&>(i[2]) + i64(a.pad_left);
        const Expr k = i[3];
        const Expr ch = k / i64(kg) * i64(cg) + c->var;
        const Expr iy = static_cast<const Expr&>(i[4]) + py / i64(sh) - r->var;
        const Expr ix = static_cast<const Expr&>(i[5]) + px / i64(sw) - s->var;
        const Expr valid = iy >= i64(0) && iy < i64(x->shape[2]) && ix >= i64(0) && ix < i64(x->shape[3]);
        const Expr prod = read(x, {i[0], ch, iy, ix}) *
                          read(w, {ch, k % i64(kg), py % i64(sh) + r->var * i64(sh), px % i64(sw) + s->var * i64(sw)});
        return sum(if_then_else(valid, prod, cst(t, 0.0)), {c, r, s});
      },
      name + ".phases", OpPattern::kComplex);
  return compute(
      out_shape,
      [&](const Vars& i) {
        const Expr y = i[2], xo = i[3];
        return read(phases, {i[0], y % i64(sh), xo % i64(sw), i[1], y / i64(sh), xo / i64(sw)});
      },
      name, OpPattern::kInjective);
}

// out[n, k, y, x] = sum over c, r, s of X[n, c, iy, ix] * W[c, k, r, s] where
// y + pad_top - r * dilation_h = iy * stride_h (and likewise for x): each
// input pixel scatters a weighted window; written as a gather with a guard
// (by phases when the stride allows, above).
Result<Tensor> build_conv_transpose(const Graph& g, const Node& n, const std::vector<Tensor>& in) {
  const auto& a = std::get<ConvAttrs>(n.attrs);
  const Tensor x = in[0], w = in[1];
  const auto& out_shape = g.value(n.outputs[0]).shape;
  const int64_t cg = x->shape[1] / a.groups, kg = w->shape[1];
  const DType t = x->dtype;
  Tensor y;
  if (auto phased = conv_transpose_by_phases(a, x, w, out_shape, n.name)) {
    y = *phased;
  } else {
    IterVar c = reduce_axis(cg, "c"), r = reduce_axis(w->shape[2], "r"), s = reduce_axis(w->shape[3], "s");
    y = compute(
        out_shape,
        [&](const Vars& i) {
          const Expr group = static_cast<const Expr&>(i[1]) / make_int(kg);
          const Expr ch = group * make_int(cg) + c->var;
          const Expr ty = static_cast<const Expr&>(i[2]) + make_int(a.pad_top) - r->var * make_int(a.dilation_h);
          const Expr tx = static_cast<const Expr&>(i[3]) + make_int(a.pad_left) - s->var * make_int(a.dilation_w);
          const Expr iy = ty / make_int(a.stride_h), ix = tx / make_int(a.stride_w);
          const Expr valid = ty >= make_int(0) && tx >= make_int(0) && ty % make_int(a.stride_h) == make_int(0) &&
                             tx % make_int(a.stride_w) == make_int(0) && iy < make_int(x->shape[2]) &&
                             ix < make_int(x->shape[3]);
          const Expr prod = read(x, {i[0], ch, iy, ix}) *
                            read(w, {ch, static_cast<const Expr&>(i[1]) % make_int(kg), r->var, s->var});
          return sum(if_then_else(valid, prod, cst(t, 0.0)), {c, r, s});
        },
        n.name, OpPattern::kComplex);
  }
  if (in.size() < 3) return y;
  const Tensor bias = in[2];
  return channel_epilogue(
      y, [&](Expr v, const Expr& k) { return v + read(bias, {k}); }, n.name + ".bias");
}

// The input coordinate (float) of output index `i` along dimension `d`.
Expr resize_coord(const ResizeAttrs& a, Expr i, size_t d, int64_t in_len, int64_t out_len, double scale) {
  const DType f = DType::f32();
  const Expr x = cast(f, i);
  switch (a.coord) {
    case ResizeAttrs::Coord::kTfCropAndResize: {
      const size_t rank = a.roi.size() / 2;
      const double start = a.roi[d], end = a.roi[rank + d], span = static_cast<double>(in_len - 1);
      if (out_len <= 1) return cst(f, 0.5 * (start + end) * span);
      return cst(f, start * span) + x * cst(f, (end - start) * span / static_cast<double>(out_len - 1));
    }
    case ResizeAttrs::Coord::kHalfPixel: return (x + cst(f, 0.5)) / cst(f, scale) - cst(f, 0.5);
    case ResizeAttrs::Coord::kAsymmetric: return x / cst(f, scale);
    case ResizeAttrs::Coord::kAlignCorners: {
      // ONNX divides by the unrounded resized length, in_len * scale.
      const double resized = static_cast<double>(in_len) * scale;
      return resized <= 1.0 ? cst(f, 0.0) : x * cst(f, static_cast<double>(in_len - 1) / (resized - 1.0));
    }
    case ResizeAttrs::Coord::kPytorchHalfPixel:
      return out_len > 1 ? (x + cst(f, 0.5)) / cst(f, scale) - cst(f, 0.5) : cst(f, 0.0);
    case ResizeAttrs::Coord::kTfHalfPixelForNn: return (x + cst(f, 0.5)) / cst(f, scale);
  }
  return x;
}

Expr clamp_index(Expr i, int64_t len) {
  return min(max(i, make_int(0)), make_int(len - 1));
}

// Weights of the 4 cubic taps at floor(c) - 1 .. floor(c) + 2 for t = c -
// floor(c) (ONNX's cubic_coeffs): Keys' kernel with coefficient `a`.
std::vector<Expr> cubic_weights(double a, const Expr& t) {
  const DType f = DType::f32();
  auto far = [&](const Expr& s) {  // 1 < |s| < 2
    return ((cst(f, a) * s - cst(f, 5 * a)) * s + cst(f, 8 * a)) * s - cst(f, 4 * a);
  };
  auto near = [&](const Expr& s) {  // |s| <= 1
    return ((cst(f, a + 2) * s - cst(f, a + 3)) * s) * s + cst(f, 1.0);
  };
  const Expr u = cst(f, 1.0) - t;
  return {far(t + cst(f, 1.0)), near(t), near(u), far(u + cst(f, 1.0))};
}

// Nearest: round the coordinate per nearest_mode and clamp. Linear and cubic:
// blend the clamped neighbours (2 or 4 taps) along every resized dimension
// (2^k or 4^k terms).
Tensor build_resize(const Graph& g, const Node& n, const Tensor& x) {
  const auto& a = std::get<ResizeAttrs>(n.attrs);
  const auto& out_shape = g.value(n.outputs[0]).shape;
  const DType f = DType::f32();
  return compute(
      out_shape,
      [&](const Vars& i) {
        std::vector<Expr> idx(out_shape.size());
        std::vector<std::vector<Expr>> taps(out_shape.size()), weights(out_shape.size());
        std::vector<size_t> resized;
        const bool crop = a.coord == ResizeAttrs::Coord::kTfCropAndResize;
        Expr outside;  // crop: some coordinate falls outside the input
        for (size_t d = 0; d < out_shape.size(); ++d) {
          idx[d] = i[d];
          const bool whole = !crop || (a.roi[d] == 0.0 && a.roi[a.roi.size() / 2 + d] == 1.0);
          if (out_shape[d] == x->shape[d] && a.scales[d] == 1.0 && whole) continue;
          const Expr c = resize_coord(a, i[d], d, x->shape[d], out_shape[d], a.scales[d]);
          if (crop) {
            const Expr out_d = c < cst(f, 0.0) || c > cst(f, static_cast<double>(x->shape[d] - 1));
            outside = outside.defined() ? (outside || out_d) : out_d;
          }
          if (a.mode == ResizeAttrs::Mode::kNearest) {
            Expr r;
            switch (a.round) {
              case ResizeAttrs::Round::kPreferFloor: r = ceil(c - cst(f, 0.5)); break;
              case ResizeAttrs::Round::kPreferCeil: r = floor(c + cst(f, 0.5)); break;
              case ResizeAttrs::Round::kFloor: r = floor(c); break;
              case ResizeAttrs::Round::kCeil: r = ceil(c); break;
            }
            idx[d] = clamp_index(cast(kIndexType, r), x->shape[d]);
          } else {
            const Expr fl = floor(c);
            const Expr t = c - fl;
            const Expr base = cast(kIndexType, fl);
            if (a.mode == ResizeAttrs::Mode::kLinear) {
              taps[d] = {clamp_index(base, x->shape[d]), clamp_index(base + make_int(1), x->shape[d])};
              weights[d] = {cst(f, 1.0) - t, t};
            } else {
              weights[d] = cubic_weights(a.cubic_a, t);
              Expr sum;
              for (int j = 0; j < 4; ++j) {
                const Expr raw = base + make_int(j - 1);
                taps[d].push_back(clamp_index(raw, x->shape[d]));
                if (a.exclude_outside)
                  weights[d][j] =
                      if_then_else(raw >= make_int(0) && raw < make_int(x->shape[d]), weights[d][j], cst(f, 0.0));
                sum = sum.defined() ? sum + weights[d][j] : weights[d][j];
              }
              if (a.exclude_outside)
                for (Expr& w : weights[d]) w = w / sum;
            }
            resized.push_back(d);
          }
        }
        auto extrapolate = [&](Expr v) {
          return outside.defined() ? if_then_else(outside, cst(x->dtype, a.extrapolation_value), v) : v;
        };
        if (resized.empty()) return extrapolate(read(x, idx));
        // Every combination of one tap per resized dimension (mixed radix).
        size_t combos = 1;
        for (size_t d : resized) combos *= taps[d].size();
        Expr total;
        for (size_t combo = 0; combo < combos; ++combo) {
          std::vector<Expr> at = idx;
          Expr weight = cst(x->dtype, 1.0);
          size_t rest = combo;
          for (size_t d : resized) {
            const size_t j = rest % taps[d].size();
            rest /= taps[d].size();
            at[d] = taps[d][j];
            weight = weight * weights[d][j];
          }
          const Expr term = read(x, at) * weight;
          total = total.defined() ? total + term : term;
        }
        return extrapolate(total);
      },
      n.name, OpPattern::kInjective);
}

// Edge and reflect padding: every output element reads one input element,
// its index clamped (edge) or mirrored (reflect) per dimension.
Tensor build_index_pad(const Graph& g, const Node& n, const Tensor& x) {
  const auto& a = std::get<PadAttrs>(n.attrs);
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < x->shape.size(); ++d) {
          const int64_t len = x->shape[d];
          const Expr j = static_cast<const Expr&>(i[d]) - make_int(a.before[d]);
          if (a.mode == PadAttrs::Mode::kEdge) {
            idx.push_back(clamp_index(j, len));
          } else {
            const Expr low = if_then_else(j < make_int(0), make_int(0) - j, j);
            idx.push_back(if_then_else(low >= make_int(len), make_int(2 * (len - 1)) - low, low));
          }
        }
        return read(x, idx);
      },
      n.name, OpPattern::kInjective);
}

// MaxPool's Indices (PoolAttrs::indices): the window maximum, then the
// first window position (ry * kernel_w + rx) holding it among the positions
// inside X, then that position's flat index into X. A window always holds a
// position inside X (padding is smaller than the window).
Result<Tensor> build_max_pool_indices(const Graph& g, const Node& n, const Tensor& x) {
  const auto& a = std::get<PoolAttrs>(n.attrs);
  TESSERA_ASSIGN_OR_RETURN(Tensor m,
                           ops::max_pool2d(x, ops::Size2(a.kernel_h, a.kernel_w), ops::Size2(a.stride_h, a.stride_w),
                                           ops::Padding2(a.pad_top, a.pad_left, a.pad_bottom, a.pad_right),
                                           ops::Size2(a.dilation_h, a.dilation_w), n.name + ".max"));
  const auto& out = g.value(n.outputs[0]).shape;
  const int64_t channels = x->shape[1], height = x->shape[2], width = x->shape[3];
  auto row = [&](const Expr& p, const Expr& k) {
    return p * make_int(a.stride_h) + k * make_int(a.dilation_h) - make_int(a.pad_top);
  };
  auto col = [&](const Expr& q, const Expr& k) {
    return q * make_int(a.stride_w) + k * make_int(a.dilation_w) - make_int(a.pad_left);
  };
  const int64_t window = a.kernel_h * a.kernel_w;
  IterVar ry = reduce_axis(a.kernel_h, "ky"), rx = reduce_axis(a.kernel_w, "kx");
  const Tensor first = compute(
      out,
      [&](const Vars& i) {
        const Expr h = row(i[2], ry->var), w = col(i[3], rx->var);
        const Expr inside = h >= make_int(0) && h < make_int(height) && w >= make_int(0) && w < make_int(width);
        const Expr at = read(x, {i[0], i[1], clamp_index(h, height), clamp_index(w, width)});
        const Expr hit = inside && at == read(m, {i[0], i[1], i[2], i[3]});
        // max of (window size - position) rather than min of position: the
        // int64 identity of a min reduction (reduce_identity) is not INT64_MAX
        // but 2^63 converted from double, which wraps to INT64_MIN.
        return max_reduce(if_then_else(hit, make_int(window) - (ry->var * make_int(a.kernel_w) + rx->var), make_int(0)),
                          {ry, rx});
      },
      n.name + ".first", OpPattern::kReduction);
  return compute(
      out,
      [&](const Vars& i) {
        const Expr k = make_int(window) - read(first, {i[0], i[1], i[2], i[3]});
        const Expr h = row(i[2], k / make_int(a.kernel_w)), w = col(i[3], k % make_int(a.kernel_w));
        const Expr plane = (static_cast<const Expr&>(i[0]) * make_int(channels) + i[1]) * make_int(height * width);
        return a.column_major ? plane + w * make_int(height) + h : plane + h * make_int(width) + w;
      },
      n.name, OpPattern::kInjective);
}

Tensor transpose2d(const Tensor& x, const std::string& name) {
  return compute(
      {x->shape[1], x->shape[0]},
      [&](const Vars& i) {
        return read(x, {i[1], i[0]});
      },
      name, OpPattern::kInjective);
}

Result<Tensor> build_gemm(const Node& n, const std::vector<Tensor>& in) {
  const auto& a = std::get<GemmAttrs>(n.attrs);
  Tensor x = a.trans_a ? transpose2d(in[0], n.name + ".a_t") : in[0];
  Result<Tensor> y = a.trans_b ? ops::dense(x, in[1], std::nullopt, false, n.name) : ops::matmul(x, in[1], n.name);
  if (!y.is_ok()) return y.status().with_context("node " + n.name);
  Tensor out = *y;
  if (a.alpha != 1.0) {
    const Tensor t = out;
    out = compute(
        t->shape, [&](const Vars& i) { return read(t, exprs(i)) * cst(t->dtype, a.alpha); }, n.name + ".alpha",
        OpPattern::kElementwise);
  }
  if (in.size() < 3 || a.beta == 0.0) return out;
  Tensor c = in[2];
  if (a.beta != 1.0)
    c = compute(
        c->shape, [&](const Vars& i) { return read(in[2], exprs(i)) * cst(c->dtype, a.beta); }, n.name + ".beta",
        OpPattern::kElementwise);
  return ops::add(out, c, n.name + ".bias");
}

// Batched matmul with NumPy broadcasting of the batch dims (ranks >= 2);
// operands may be views (MatMulAttrs), read in place.
Result<Tensor> build_matmul(const Graph& g, const Node& n, const std::vector<Tensor>& in) {
  static const MatMulAttrs kPlain;
  const MatMulAttrs& views = std::holds_alternative<MatMulAttrs>(n.attrs) ? std::get<MatMulAttrs>(n.attrs) : kPlain;
  if (in[0]->ndim() == 2 && in[1]->ndim() == 2 && views.a.map.empty() && views.b.map.empty())
    return ops::matmul(in[0], in[1], n.name);
  return ops::matmul_views(in[0], ops::OperandView{views.a.shape, views.a.map}, in[1],
                           ops::OperandView{views.b.shape, views.b.map}, g.value(n.outputs[0]).shape, n.name);
}

Tensor build_batch_norm(const Node& n, const std::vector<Tensor>& in) {
  const double eps = std::get<ScalarAttrs>(n.attrs).value;
  const Tensor& x = in[0];
  return channel_epilogue(
      x,
      [&](Expr v, const Expr& c) {
        const DType t = x->dtype;
        return (v - read(in[3], {c})) / sqrt(read(in[4], {c}) + cst(t, eps)) * read(in[1], {c}) + read(in[2], {c});
      },
      n.name);
}

Tensor build_reshape(const Graph& g, const Node& n, const Tensor& x) {
  const auto& shape = g.value(n.outputs[0]).shape;
  return compute(
      shape,
      [&](const Vars& i) {
        Expr flat = make_int(0);
        for (size_t d = 0; d < shape.size(); ++d) flat = flat * make_int(shape[d]) + i[d];
        std::vector<Expr> idx(x->shape.size());
        for (size_t d = x->shape.size(); d-- > 0;) {
          idx[d] = flat % make_int(x->shape[d]);
          flat = flat / make_int(x->shape[d]);
        }
        return read(x, idx);
      },
      n.name, OpPattern::kInjective);
}

Tensor build_transpose(const Graph& g, const Node& n, const Tensor& x) {
  const auto& perm = std::get<PermAttrs>(n.attrs).perm;
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        std::vector<Expr> idx(perm.size());
        for (size_t d = 0; d < perm.size(); ++d) idx[static_cast<size_t>(perm[d])] = i[d];
        return read(x, idx);
      },
      n.name, OpPattern::kInjective);
}

Tensor build_concat(const Graph& g, const Node& n, const std::vector<Tensor>& in) {
  const auto axis = static_cast<size_t>(std::get<AxisAttrs>(n.attrs).axis);
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        // Nested selects from the last input back; the interpreter and codegen
        // evaluate only the taken branch, so no read goes out of range.
        std::vector<int64_t> offsets{0};
        for (const Tensor& t : in) offsets.push_back(offsets.back() + t->shape[axis]);
        Expr result;
        for (size_t j = in.size(); j-- > 0;) {
          std::vector<Expr> idx = exprs(i);
          idx[axis] = idx[axis] - make_int(offsets[j]);
          Expr v = read(in[j], idx);
          result = result.defined()
                       ? if_then_else(static_cast<const Expr&>(i[axis]) < make_int(offsets[j + 1]), v, result)
                       : v;
        }
        return result;
      },
      n.name, OpPattern::kInjective);
}

Tensor build_gather(const Graph& g, const Node& n, const Tensor& data, const Tensor& indices) {
  const auto axis = static_cast<size_t>(std::get<AxisAttrs>(n.attrs).axis);
  const size_t q = indices->shape.size();
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        std::vector<Expr> at;
        for (size_t d = 0; d < q; ++d) at.push_back(i[axis + d]);
        Expr j = cast(kIndexType, read(indices, at));
        j = if_then_else(j < make_int(0), j + make_int(data->shape[axis]), j);
        std::vector<Expr> idx;
        for (size_t d = 0; d < data->shape.size(); ++d)
          idx.push_back(d < axis    ? static_cast<const Expr&>(i[d])
                        : d == axis ? j
                                    : static_cast<const Expr&>(i[d + q - 1]));
        return read(data, idx);
      },
      n.name, OpPattern::kInjective);
}

Tensor build_slice(const Graph& g, const Node& n, const Tensor& x) {
  const auto& a = std::get<SliceAttrs>(n.attrs);
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < i.size(); ++d) idx.push_back(make_int(a.starts[d]) + i[d] * make_int(a.steps[d]));
        return read(x, idx);
      },
      n.name, OpPattern::kInjective);
}

// Expand: NumPy broadcast of x to the output shape. Tile: x repeated, each
// output index read modulo x's extent.
Tensor build_broadcast_read(const Graph& g, const Node& n, const Tensor& x) {
  const auto& shape = g.value(n.outputs[0]).shape;
  const bool tile = n.kind == OpKind::kTile;
  return compute(
      shape,
      [&](const Vars& i) {
        const size_t offset = shape.size() - x->shape.size();
        std::vector<Expr> idx;
        for (size_t d = 0; d < x->shape.size(); ++d) {
          const Expr v = i[offset + d];
          idx.push_back(tile ? (x->shape[d] == shape[d] ? v : v % make_int(x->shape[d]))
                             : (x->shape[d] == 1 ? make_int(0) : v));
        }
        return read(x, idx);
      },
      n.name, OpPattern::kInjective);
}

// out[i] = data[i with the axis coordinate replaced by indices[i]] (negative
// indices count from the end).
Tensor build_gather_elements(const Graph& g, const Node& n, const Tensor& data, const Tensor& indices) {
  const auto axis = static_cast<size_t>(std::get<AxisAttrs>(n.attrs).axis);
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        std::vector<Expr> at = exprs(i);
        Expr j = cast(kIndexType, read(indices, at));
        at[axis] = if_then_else(j < make_int(0), j + make_int(data->shape[axis]), j);
        return read(data, at);
      },
      n.name, OpPattern::kInjective);
}

Result<Tensor> build_reduce(const Node& n, const Tensor& x) {
  const auto& a = std::get<ReduceAttrs>(n.attrs);
  const std::vector<int> axes(a.axes.begin(), a.axes.end());
  switch (n.kind) {
    case OpKind::kReduceMean: return ops::reduce_mean(x, axes, a.keepdims, n.name);
    case OpKind::kReduceSum: return ops::reduce_sum(x, axes, a.keepdims, n.name);
    case OpKind::kReduceMax: return ops::reduce_max(x, axes, a.keepdims, n.name);
    case OpKind::kReduceMin: return ops::reduce_min(x, axes, a.keepdims, n.name);
    default: return ops::reduce_prod(x, axes, a.keepdims, n.name);
  }
}

// MaxPool (NCHW or NHWC, or with its argmax indices) and AvgPool.
Result<Tensor> build_pool(const Graph& g, const Node& n, const Tensor& x) {
  const auto& a = std::get<PoolAttrs>(n.attrs);
  const ops::Padding2 pad(a.pad_top, a.pad_left, a.pad_bottom, a.pad_right);
  if (n.kind == OpKind::kMaxPool && a.indices) return build_max_pool_indices(g, n, x);
  return n.kind == OpKind::kMaxPool
             ? (a.nhwc ? ops::max_pool2d_nhwc : ops::max_pool2d)(x, ops::Size2(a.kernel_h, a.kernel_w),
                                                                 ops::Size2(a.stride_h, a.stride_w), pad,
                                                                 ops::Size2(a.dilation_h, a.dilation_w), n.name)
             : ops::avg_pool2d(x, ops::Size2(a.kernel_h, a.kernel_w), ops::Size2(a.stride_h, a.stride_w), pad,
                               a.count_include_pad, n.name);
}

// Softmax along `axis` with exp evaluated once per element: the max, the
// stage `name`.exp = exp(x - max), its sum, and exp / sum. ops::softmax
// (the operator spec's DAG) evaluates exp in the sum and again in the
// output, twice the exponentials. The rows template stores `name`.exp in
// one sweep. Code generation computes exp of a float32 vector as a
// polynomial (llvm_math.cc); a scalar one calls expf. Below -87.3, exp(x) <
// 2^-126 is 0 here on either path: denormal probabilities made the
// attention's P * V product ten times slower.
constexpr double kExpFlushBelow = -87.3;

Result<Tensor> build_softmax(const Node& n, const Tensor& x) {
  const int axis = static_cast<int>(std::get<AxisAttrs>(n.attrs).axis);
  if (!x->dtype.is_float()) return error(n, "softmax needs floating-point input");
  TESSERA_ASSIGN_OR_RETURN(Tensor row_max, ops::reduce_max(x, {axis}, true, n.name + ".max"));
  auto reduced = [axis](const Vars& i) {
    std::vector<Expr> idx = exprs(i);
    idx[static_cast<size_t>(axis)] = make_int(0);
    return idx;
  };
  Tensor e = compute(
      x->shape,
      [&](const Vars& i) {
        const Expr d = read(x, exprs(i)) - read(row_max, reduced(i));
        return x->dtype == DType::f32() ? select(d < cst(x->dtype, kExpFlushBelow), cst(x->dtype, 0.0), exp(d))
                                        : exp(d);
      },
      n.name + ".exp", OpPattern::kBroadcast);
  TESSERA_ASSIGN_OR_RETURN(Tensor total, ops::reduce_sum(e, {axis}, true, n.name + ".sum"));
  // Times the sum's reciprocal, as ONNX Runtime's softmax computes it: the
  // reciprocal is one division a row (loop-invariant along the row, hoisted),
  // where dividing each element issued a vdivps every vector (a sixth of a
  // fused attention kernel's time).
  return compute(
      x->shape, [&](const Vars& i) { return read(e, exprs(i)) * (cst(x->dtype, 1.0) / read(total, reduced(i))); },
      n.name, OpPattern::kBroadcast);
}

// An elementwise kind: its scalar function as ops defines it (scalar_fn).
Result<Tensor> build_scalar_fn(const Node& n, const std::vector<Tensor>& in) {
  const std::optional<NodeScalarFn> f = scalar_fn(n);
  if (!f) return error(n, "not an elementwise function");
  return f->is_binary ? ops::binary(f->binary, in[0], in[1], n.name) : ops::unary(f->unary, in[0], f->params, n.name);
}

Tensor unary(const Node& n, const Tensor& x, const std::function<Expr(Expr)>& f) {
  return compute(
      x->shape, [&](const Vars& i) { return f(read(x, exprs(i))); }, n.name, OpPattern::kElementwise);
}

}  // namespace

Result<Tensor> build_node(const Graph& g, const Node& n, const std::vector<Tensor>& in) {
  if (in.size() != n.inputs.size()) return error(n, "wrong number of input tensors");
  const DType t = g.value(n.outputs.at(0)).dtype;
  Result<Tensor> r = error(n, "no kernel for this operator");
  switch (n.kind) {
    case OpKind::kConv: r = build_conv(n, in); break;
    case OpKind::kConvTranspose: r = build_conv_transpose(g, n, in); break;
    case OpKind::kGemm: r = build_gemm(n, in); break;
    case OpKind::kMatMul: r = build_matmul(g, n, in); break;
    case OpKind::kMatMulU8S8: {
      const auto* attrs = std::get_if<MatMulAttrs>(&n.attrs);
      r = attrs && attrs->pairs ? ops::matmul_u8s8_pairs(in[0], in[1], n.name) : ops::matmul_u8s8(in[0], in[1], n.name);
      break;
    }
    case OpKind::kMatMulBf16: r = ops::matmul_bf16(in[0], in[1], n.name); break;
    case OpKind::kConvBf16: r = build_conv_bf16(n, in); break;
    case OpKind::kConvU8S8: r = build_conv_u8s8(n, in); break;
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMax:
    case OpKind::kMin:
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kTanh:
    case OpKind::kHardSwish:
    case OpKind::kLeakyRelu:
    case OpKind::kClip:
    case OpKind::kHardSigmoid:
    case OpKind::kErf:
    case OpKind::kUnary:
    case OpKind::kBinary: r = build_scalar_fn(n, in); break;
    case OpKind::kCast: r = unary(n, in[0], [&](Expr x) { return cast(t, x); }); break;
    case OpKind::kBatchNorm: r = build_batch_norm(n, in); break;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool: r = build_pool(g, n, in[0]); break;
    case OpKind::kGlobalAvgPool: r = ops::global_avg_pool2d(in[0], n.name); break;
    case OpKind::kSoftmax: r = build_softmax(n, in[0]); break;
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceProd: r = build_reduce(n, in[0]); break;
    case OpKind::kReduceBounds: r = ops::reduce_bounds(in[0], n.name); break;
    case OpKind::kWhere: r = ops::where(in[0], in[1], in[2], n.name); break;
    case OpKind::kQuantize: r = ops::quantize(in[0], in[1], in[2], n.name); break;
    case OpKind::kDequantize: r = ops::dequantize(in[0], in[1], in[2], n.name); break;
    case OpKind::kArgMax:
    case OpKind::kArgMin: {
      const auto& a = std::get<ArgAttrs>(n.attrs);
      r = ops::arg_reduce(in[0], static_cast<int>(a.axis), a.keepdims, n.kind == OpKind::kArgMax, a.select_last,
                          n.name);
      break;
    }
    case OpKind::kCumSum: {
      const auto& a = std::get<ArgAttrs>(n.attrs);
      r = ops::cumsum(in[0], static_cast<int>(a.axis), a.exclusive, a.reverse, n.name);
      break;
    }
    case OpKind::kGatherElements: r = build_gather_elements(g, n, in[0], in[1]); break;
    case OpKind::kExpand:
    case OpKind::kTile: r = build_broadcast_read(g, n, in[0]); break;
    case OpKind::kGatherND:
    case OpKind::kScatterElements:
    case OpKind::kScatterND:
    case OpKind::kEinsum:
    case OpKind::kGridSample: r = build_index_node(g, n, in); break;
    case OpKind::kLayerNorm: {
      const auto& a = std::get<NormAttrs>(n.attrs);
      r = ops::layer_norm(in[0], in[1], in[2], static_cast<int>(a.axis), a.epsilon, n.name, static_cast<int>(a.count));
      break;
    }
    case OpKind::kPad: {
      const auto& a = std::get<PadAttrs>(n.attrs);
      if (a.mode == PadAttrs::Mode::kConstant)
        r = ops::pad(in[0], a.before, a.after, a.value, n.name);
      else
        r = build_index_pad(g, n, in[0]);
      break;
    }
    case OpKind::kSlice: r = build_slice(g, n, in[0]); break;
    case OpKind::kResize: r = build_resize(g, n, in[0]); break;
    case OpKind::kReshape: r = build_reshape(g, n, in[0]); break;
    case OpKind::kTranspose: r = build_transpose(g, n, in[0]); break;
    case OpKind::kConcat: r = build_concat(g, n, in); break;
    case OpKind::kGather: r = build_gather(g, n, in[0], in[1]); break;
    case OpKind::kShape: break;
    case OpKind::kExternal: break;  // its backend's code, never a Tessera kernel
    case OpKind::kIf:
    case OpKind::kLoop: break;  // control steps around its bodies' kernels
  }
  if (!r.is_ok())
    return r.status().code() == ErrorCode::kInvalidArgument && r.status().message().rfind("node ", 0) == 0
               ? r.status()
               : r.status().with_context("node " + n.name);
  if ((*r)->shape != g.value(n.outputs[0]).shape)
    return error(n, "kernel shape " + shape_string((*r)->shape) + " differs from the value's " +
                        shape_string(g.value(n.outputs[0]).shape));
  return r;
}

}  // namespace tessera::graph
