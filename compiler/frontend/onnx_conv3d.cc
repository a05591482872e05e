// 3-D Conv and ConvTranspose (NCDHW input, OIDHW / IODHW weight) as 2-D
// convolutions over the kernels' height and width, so that the tuner's 2-D
// spaces schedule them and the graph needs no kind of its own:
//
// - Conv gathers, for each output depth, the KD input planes its window
//   reads (an im2col along depth only) into the channels, and convolves all
//   output depths at once as a batch: one 2-D conv with KD * C/groups input
//   channels per group, the weight's depth moved next to its channels.
// - ConvTranspose scatters each input plane through all KD depth taps at once
//   (a 2-D transposed conv with KD * K/groups output channels per group),
//   then adds the taps into their output depths with a second transposed
//   conv along depth whose weight is the identity over the taps.
#include "compiler/frontend/onnx_context.h"

namespace tessera::frontend::detail {

using graph::OpKind;
using graph::ValueId;
using Node = onnx::NodeProto;

namespace {
// The window attributes of a 3-D operator, each with 3 values (pads 6).
struct Window3 {
  int64_t groups = 1;
  std::vector<int64_t> kernel, strides, dilations, pads;
};

Result<Window3> read_window(const Node& node, const std::vector<int64_t>& ws, int kernel_dim) {
  Window3 w;
  w.groups = attr_int(node, "group", 1);
  w.kernel = {ws[kernel_dim], ws[kernel_dim + 1], ws[kernel_dim + 2]};
  w.strides = attr_ints(node, "strides", {1, 1, 1});
  w.dilations = attr_ints(node, "dilations", {1, 1, 1});
  w.pads = attr_ints(node, "pads", {0, 0, 0, 0, 0, 0});
  const auto ks = attr_ints(node, "kernel_shape", w.kernel);
  if (w.strides.size() != 3 || w.dilations.size() != 3 || w.pads.size() != 6)
    return invalid("strides and dilations need 3 values and pads 6 for a 3-D window");
  if (ks != w.kernel)
    return invalid("kernel_shape " + graph::shape_string(ks) + " does not match the weight " + graph::shape_string(ws));
  for (int i = 0; i < 3; ++i)
    if (w.strides[i] <= 0 || w.dilations[i] <= 0) return invalid("strides and dilations must be positive");
  if (w.groups <= 0) return invalid("group must be positive");
  return w;
}

// Applies auto_pad (SAME_UPPER/LOWER, VALID) of a Conv to w.pads.
Status conv_auto_pads(const Node& node, const std::vector<int64_t>& xs, Window3& w) {
  const std::string autopad = attr_string(node, "auto_pad", "NOTSET");
  if (autopad == "NOTSET") {
    for (int64_t p : w.pads)
      if (p < 0) return invalid("negative padding");
    return Status::ok();
  }
  if (autopad == "VALID") {
    w.pads.assign(6, 0);
    return Status::ok();
  }
  if (autopad != "SAME_UPPER" && autopad != "SAME_LOWER")
    return invalid("auto_pad '" + autopad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  for (int i = 0; i < 3; ++i) {
    const int64_t in = xs[2 + i], s = w.strides[i];
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + (w.kernel[i] - 1) * w.dilations[i] + 1 - in);
    w.pads[i] = autopad == "SAME_UPPER" ? total / 2 : total - total / 2;
    w.pads[i + 3] = total - w.pads[i];
  }
  return Status::ok();
}

graph::ConvAttrs conv_2d_attrs(const Window3& w, int64_t groups, int64_t pad_bottom_extra = 0,
                               int64_t pad_right_extra = 0) {
  graph::ConvAttrs a;
  a.groups = groups;
  a.stride_h = w.strides[1], a.stride_w = w.strides[2];
  a.dilation_h = w.dilations[1], a.dilation_w = w.dilations[2];
  a.pad_top = w.pads[1], a.pad_left = w.pads[2];
  a.pad_bottom = w.pads[4] + pad_bottom_extra, a.pad_right = w.pads[5] + pad_right_extra;
  return a;
}

// Shape-only steps, named `base`.tag.
struct Steps {
  ImportContext& ctx;
  std::string base;
  DType t;
  Result<ValueId> reshape(const std::string& tag, ValueId v, std::vector<int64_t> shape) {
    return ctx.add(base + "." + tag, OpKind::kReshape, graph::NoAttrs{}, {v}, std::move(shape), t);
  }
  Result<ValueId> transpose(const std::string& tag, ValueId v, const std::vector<int64_t>& perm) {
    const auto in = ctx.value(v).shape;
    std::vector<int64_t> shape;
    for (int64_t p : perm) shape.push_back(in[p]);
    return ctx.add(base + "." + tag, OpKind::kTranspose, graph::PermAttrs{perm}, {v}, shape, t);
  }
};

// Emits node's output: `y` permuted by `perm` to N x K x D x H x W, plus the
// bias (input 2, shape [K]) when there is one.
Status finish(ImportContext& ctx, const Node& node, Steps& st, ValueId y, const std::vector<int64_t>& perm) {
  std::vector<int64_t> shape;
  for (int64_t p : perm) shape.push_back(ctx.value(y).shape[p]);
  if (!ImportContext::has_input(node, 2))
    return ctx.emit(node, OpKind::kTranspose, graph::PermAttrs{perm}, {y}, shape, st.t);
  const int64_t k = shape[1];
  TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 2));
  if (ctx.value(b).shape != std::vector<int64_t>{k}) return invalid("bias must have shape [K]");
  if (ctx.value(b).dtype != st.t) return invalid("bias and input types differ");
  TESSERA_ASSIGN_OR_RETURN(ValueId yt, st.transpose("ncdhw", y, perm));
  TESSERA_ASSIGN_OR_RETURN(ValueId b5, st.reshape("bias", b, {1, k, 1, 1, 1}));
  return ctx.emit(node, OpKind::kAdd, graph::NoAttrs{}, {yt, b5}, shape, st.t);
}

}  // namespace

Status convert_conv_3d(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId wt, ctx.input(node, 1));
  const auto xs = ctx.value(x).shape, ws = ctx.value(wt).shape;
  const DType t = ctx.value(x).dtype;
  if (ws.size() != 5) return invalid("a 3-D convolution needs a rank-5 weight, got " + graph::shape_string(ws));
  if (ctx.value(wt).dtype != t) return invalid("input and weight types differ");
  TESSERA_ASSIGN_OR_RETURN(Window3 w, read_window(node, ws, 2));
  const int64_t n = xs[0], c = xs[1], k = ws[0], g = w.groups;
  if (c % g || k % g || ws[1] * g != c)
    return invalid("group " + std::to_string(g) + " does not match input " + graph::shape_string(xs) + " and weight " +
                   graph::shape_string(ws));
  TESSERA_RETURN_IF_ERROR(conv_auto_pads(node, xs, w));
  int64_t out[3];
  for (int i = 0; i < 3; ++i) {
    out[i] = (xs[2 + i] + w.pads[i] + w.pads[i + 3] - w.dilations[i] * (w.kernel[i] - 1) - 1) / w.strides[i] + 1;
    if (out[i] <= 0) return invalid("the window is larger than the padded input " + graph::shape_string(xs));
  }
  const int64_t cg = c / g, kd = w.kernel[0], od = out[0], h = xs[3], wd = xs[4];
  Steps st{ctx, base_name(node), t};
  ValueId in = x;
  if (w.pads[0] != 0 || w.pads[3] != 0) {
    graph::PadAttrs pa;
    pa.before = {0, 0, w.pads[0], 0, 0};
    pa.after = {0, 0, w.pads[3], 0, 0};
    TESSERA_ASSIGN_OR_RETURN(
        in, ctx.add(st.base + ".pad_depth", OpKind::kPad, pa, {x}, {n, c, xs[2] + w.pads[0] + w.pads[3], h, wd}, t));
  }
  // planes[n, c, o, j] = in[n, c, o * stride + j * dilation]: the depth taps of output depth o.
  std::vector<int64_t> taps;
  for (int64_t o = 0; o < od; ++o)
    for (int64_t j = 0; j < kd; ++j) taps.push_back(o * w.strides[0] + j * w.dilations[0]);
  const ValueId idx = ctx.g.add_constant(st.base + ".depth_taps", graph::Constant::from_int64s({od, kd}, taps));
  TESSERA_ASSIGN_OR_RETURN(ValueId planes, ctx.add(st.base + ".planes", OpKind::kGather, graph::AxisAttrs{2}, {in, idx},
                                                   {n, c, od, kd, h, wd}, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId p7, st.reshape("planes_grouped", planes, {n, g, cg, od, kd, h, wd}));
  TESSERA_ASSIGN_OR_RETURN(ValueId pt, st.transpose("planes_by_depth", p7, {0, 3, 1, 4, 2, 5, 6}));
  TESSERA_ASSIGN_OR_RETURN(ValueId x2, st.reshape("x2d", pt, {n * od, g * kd * cg, h, wd}));
  // Weight K x Cg x KD x R x S -> K x (KD * Cg) x R x S, taps outermost as in x2d.
  TESSERA_ASSIGN_OR_RETURN(ValueId wtt, st.transpose("w_taps", wt, {0, 2, 1, 3, 4}));
  TESSERA_ASSIGN_OR_RETURN(ValueId w2, st.reshape("w2d", wtt, {k, kd * cg, ws[3], ws[4]}));
  TESSERA_ASSIGN_OR_RETURN(ValueId y2, ctx.add(st.base + ".conv2d", OpKind::kConv, conv_2d_attrs(w, g), {x2, w2},
                                               {n * od, k, out[1], out[2]}, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId y5, st.reshape("by_depth", y2, {n, od, k, out[1], out[2]}));
  return finish(ctx, node, st, y5, {0, 2, 1, 3, 4});
}

Status convert_conv_transpose_3d(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId wt, ctx.input(node, 1));
  const auto xs = ctx.value(x).shape, ws = ctx.value(wt).shape;
  const DType t = ctx.value(x).dtype;
  if (ws.size() != 5) return invalid("a 3-D transposed convolution needs a rank-5 weight");
  if (ctx.value(wt).dtype != t) return invalid("input and weight types differ");
  TESSERA_ASSIGN_OR_RETURN(Window3 w, read_window(node, ws, 2));
  const int64_t n = xs[0], c = xs[1], g = w.groups, kg = ws[1], k = kg * g;
  if (xs[1] != ws[0] || c % g) return invalid("group and weight do not match the input");
  const auto out_pad = attr_ints(node, "output_padding", {0, 0, 0}), out_shape = attr_ints(node, "output_shape");
  if (out_pad.size() != 3) return invalid("output_padding needs 3 values");
  if (!out_shape.empty() && out_shape.size() != 3 && out_shape.size() != 5)
    return invalid("output_shape needs 3 values (or 5 with batch and channels)");
  const std::string autopad = attr_string(node, "auto_pad", "NOTSET");
  if (autopad != "NOTSET" && autopad != "VALID" && autopad != "SAME_UPPER" && autopad != "SAME_LOWER")
    return invalid("auto_pad '" + autopad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  if (autopad == "VALID") w.pads.assign(6, 0);
  int64_t out[3], full[3];
  for (int i = 0; i < 3; ++i) {
    if (out_pad[i] < 0 || out_pad[i] >= std::max(w.strides[i], w.dilations[i]))
      return invalid("output_padding must be in [0, max(stride, dilation))");
    full[i] = w.strides[i] * (xs[2 + i] - 1) + out_pad[i] + (w.kernel[i] - 1) * w.dilations[i] + 1;
    const bool same = autopad == "SAME_UPPER" || autopad == "SAME_LOWER";
    const int64_t want = !out_shape.empty() ? out_shape[out_shape.size() - 3 + i]
                         : same             ? xs[2 + i] * w.strides[i]
                                            : -1;
    if (want > 0) {
      // As the 2-D converter: SAME_UPPER puts the smaller half first.
      const int64_t total = full[i] - want;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.pads[i] = autopad == "SAME_UPPER" ? half : total - half;
      w.pads[i + 3] = total - w.pads[i];
    }
    out[i] = full[i] - w.pads[i] - w.pads[i + 3];
    if (out[i] <= 0) return invalid("the output would be empty");
  }
  const int64_t d = xs[2], kd = w.kernel[0], od = out[0], oh = out[1], ow = out[2];
  Steps st{ctx, base_name(node), t};
  // Every input plane through every depth tap: (N * D) x C x H x W with the
  // weight C x (KD * Kg) x R x S, taps outside the per-group channels.
  TESSERA_ASSIGN_OR_RETURN(ValueId xt, st.transpose("x_by_depth", x, {0, 2, 1, 3, 4}));
  TESSERA_ASSIGN_OR_RETURN(ValueId x2, st.reshape("x2d", xt, {n * d, c, xs[3], xs[4]}));
  TESSERA_ASSIGN_OR_RETURN(ValueId wtt, st.transpose("w_taps", wt, {0, 2, 1, 3, 4}));
  TESSERA_ASSIGN_OR_RETURN(ValueId w2, st.reshape("w2d", wtt, {c, kd * kg, ws[3], ws[4]}));
  TESSERA_ASSIGN_OR_RETURN(ValueId y2, ctx.add(st.base + ".conv_transpose2d", OpKind::kConvTranspose,
                                               conv_2d_attrs(w, g), {x2, w2}, {n * d, g * kd * kg, oh, ow}, t));
  // [n, d, g, tap, kg, hw] -> one row per output element (n, g, kg, hw), taps as channels.
  TESSERA_ASSIGN_OR_RETURN(ValueId y6, st.reshape("taps", y2, {n, d, g, kd, kg, oh * ow}));
  TESSERA_ASSIGN_OR_RETURN(ValueId yt, st.transpose("taps_last", y6, {0, 2, 4, 5, 3, 1}));
  TESSERA_ASSIGN_OR_RETURN(ValueId rows, st.reshape("rows", yt, {n * k * oh * ow, kd, 1, d}));
  // Tap j of input depth i lands at depth i * stride + j * dilation - pad: a
  // transposed conv along depth whose weight is the identity over the taps.
  std::vector<double> eye(static_cast<size_t>(kd * kd), 0.0);
  for (int64_t j = 0; j < kd; ++j) eye[static_cast<size_t>(j * kd + j)] = 1.0;
  const ValueId id =
      ctx.g.add_constant(st.base + ".tap_identity", graph::Constant::from_doubles(t, {kd, 1, 1, kd}, eye));
  graph::ConvAttrs da;
  da.stride_w = w.strides[0], da.dilation_w = w.dilations[0], da.pad_left = w.pads[0], da.pad_right = w.pads[3];
  TESSERA_ASSIGN_OR_RETURN(ValueId z, ctx.add(st.base + ".depth_scatter", OpKind::kConvTranspose, da, {rows, id},
                                              {n * k * oh * ow, 1, 1, od}, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId z6, st.reshape("by_output", z, {n, k, oh, ow, od}));
  return finish(ctx, node, st, z6, {0, 1, 4, 2, 3});
}

}  // namespace tessera::frontend::detail
