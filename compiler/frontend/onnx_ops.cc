// One converter per ONNX operator: validate attributes and shapes, compute the
// static output shape, emit a graph node (folded at once when constant).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "compiler/frontend/onnx_context.h"

namespace tessera::frontend::detail {

using graph::OpKind;
using graph::ValueId;
using Node = onnx::NodeProto;

namespace {
Status emit_like(ImportContext& ctx, const Node& node, OpKind kind, graph::Attrs attrs, ValueId x) {
  const auto v = ctx.value(x);
  return ctx.emit(node, kind, std::move(attrs), {x}, v.shape, v.dtype);
}

Status convert_unary(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  static const std::map<std::string, OpKind> kKinds = {{"Relu", OpKind::kRelu},
                                                       {"Sigmoid", OpKind::kSigmoid},
                                                       {"Tanh", OpKind::kTanh},
                                                       {"Erf", OpKind::kErf},
                                                       {"HardSwish", OpKind::kHardSwish}};
  const std::string& op = node.op_type();
  if (op == "LeakyRelu")
    return emit_like(ctx, node, OpKind::kLeakyRelu, graph::ScalarAttrs{attr_float(node, "alpha", 0.01f)}, x);
  if (op == "HardSigmoid")
    return emit_like(ctx, node, OpKind::kHardSigmoid,
                     graph::AffineAttrs{attr_float(node, "alpha", 0.2f), attr_float(node, "beta", 0.5f)}, x);
  if (!ctx.value(x).dtype.is_float()) return invalid("input must be floating point");
  return emit_like(ctx, node, kKinds.at(op), graph::NoAttrs{}, x);
}

Result<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t x = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    const int64_t y = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1)
      return invalid("shapes " + graph::shape_string(a) + " and " + graph::shape_string(b) + " do not broadcast");
    out[d] = x == 1 ? y : x;
  }
  return out;
}

// Max/Min of several inputs as a chain of binary nodes; the last one is `node`.
Status emit_chain(ImportContext& ctx, const Node& node, OpKind kind, std::vector<ValueId> inputs) {
  if (inputs.empty()) return invalid("no inputs");
  ValueId acc = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    const auto va = ctx.value(acc), vb = ctx.value(inputs[i]);
    if (va.dtype != vb.dtype)
      return invalid("operand types differ: " + va.dtype.to_string() + " and " + vb.dtype.to_string());
    TESSERA_ASSIGN_OR_RETURN(auto shape, broadcast(va.shape, vb.shape));
    const std::string name =
        (node.name().empty() ? node.output(0) : node.name()) + (i + 1 < inputs.size() ? "." + std::to_string(i) : "");
    TESSERA_ASSIGN_OR_RETURN(acc, ctx.add(name, kind, graph::NoAttrs{}, {acc, inputs[i]}, shape, va.dtype));
  }
  ctx.alias(node, acc);
  return Status::ok();
}

Status convert_max_min(ImportContext& ctx, const Node& node) {
  std::vector<ValueId> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.input(node, i));
    inputs.push_back(v);
  }
  return emit_chain(ctx, node, node.op_type() == "Max" ? OpKind::kMax : OpKind::kMin, inputs);
}

Status convert_clip(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  double lo = attr_float(node, "min", -std::numeric_limits<float>::max());  // attributes before opset 11
  double hi = attr_float(node, "max", std::numeric_limits<float>::max());
  bool runtime_bounds = false;
  for (int i : {1, 2}) {
    if (!ImportContext::has_input(node, i)) continue;
    const auto* c = ctx.constant_input(node, i);
    if (!c)
      runtime_bounds = true;
    else if (c->num_elements() != 1)
      return invalid(std::string(i == 1 ? "min" : "max") + " is not a scalar");
    else
      (i == 1 ? lo : hi) = c->at(0);
  }
  const DType t = ctx.value(x).dtype;
  if (t.is_integral() && !t.is_bool()) {
    // Unbounded sides default to the type's range, not to +-FLT_MAX (which would wrap).
    const int bits = t.bits;
    const double tmin = t.is_int() ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double tmax = t.is_int() ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
    lo = std::clamp(lo, tmin, tmax);
    hi = std::clamp(hi, tmin, tmax);
  }
  if (!runtime_bounds) return emit_like(ctx, node, OpKind::kClip, graph::AffineAttrs{lo, hi}, x);
  // Bounds fed at run time: max(x, min) then min(., max).
  ValueId v = x;
  for (int i : {1, 2}) {
    if (!ImportContext::has_input(node, i)) continue;
    TESSERA_ASSIGN_OR_RETURN(ValueId bound, ctx.input(node, i));
    if (ctx.value(bound).shape.size() != 0 && graph::shape_size(ctx.value(bound).shape) != 1)
      return invalid(std::string(i == 1 ? "min" : "max") + " is not a scalar");
    const OpKind kind = i == 1 ? OpKind::kMax : OpKind::kMin;
    TESSERA_ASSIGN_OR_RETURN(auto shape, broadcast(ctx.value(v).shape, ctx.value(bound).shape));
    TESSERA_ASSIGN_OR_RETURN(v, ctx.add(node.name() + (i == 1 ? ".min" : ".max"), kind, graph::NoAttrs{}, {v, bound},
                                        shape, ctx.value(x).dtype));
  }
  ctx.alias(node, v);
  return Status::ok();
}

// Pow(T base, T1 exponent) -> T. A float base with an exponent of another
// type raises to the exponent converted to the base's type; an integer base
// is raised in float64 and the result converted back (truncating, as NumPy's
// astype does), exact for every result float64 holds exactly.
Status emit_pow(ImportContext& ctx, const Node& node, ValueId a, ValueId b, const std::vector<int64_t>& out) {
  const DType base = ctx.value(a).dtype, exponent = ctx.value(b).dtype;
  if (base.is_bool() || exponent.is_bool()) return invalid("Pow of bool is not supported");
  const DType compute = base.is_float() ? base : DType::f64();
  const std::string name = node.name().empty() ? node.output(0) : node.name();
  auto convert = [&](ValueId v, const std::string& suffix) -> Result<ValueId> {
    const auto value = ctx.value(v);
    if (value.dtype == compute) return v;
    return ctx.add(name + suffix, OpKind::kCast, graph::CastAttrs{compute}, {v}, value.shape, compute);
  };
  TESSERA_ASSIGN_OR_RETURN(ValueId x, convert(a, ".base"));
  TESSERA_ASSIGN_OR_RETURN(ValueId y, convert(b, ".exponent"));
  if (compute == base) return ctx.emit(node, OpKind::kPow, graph::NoAttrs{}, {x, y}, out, base);
  TESSERA_ASSIGN_OR_RETURN(ValueId p, ctx.add(name + ".pow", OpKind::kPow, graph::NoAttrs{}, {x, y}, out, compute));
  return ctx.emit(node, OpKind::kCast, graph::CastAttrs{base}, {p}, out, base);
}

Status convert_binary(ImportContext& ctx, const Node& node) {
  static const std::map<std::string, OpKind> kKinds = {{"Add", OpKind::kAdd},
                                                       {"Sub", OpKind::kSub},
                                                       {"Mul", OpKind::kMul},
                                                       {"Div", OpKind::kDiv},
                                                       {"Pow", OpKind::kPow}};
  TESSERA_ASSIGN_OR_RETURN(ValueId a, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 1));
  const auto va = ctx.value(a), vb = ctx.value(b);
  TESSERA_ASSIGN_OR_RETURN(auto out, broadcast(va.shape, vb.shape));
  if (node.op_type() == "Pow") return emit_pow(ctx, node, a, b, out);
  if (va.dtype != vb.dtype)
    return invalid("operand types differ: " + va.dtype.to_string() + " and " + vb.dtype.to_string());
  return ctx.emit(node, kKinds.at(node.op_type()), graph::NoAttrs{}, {a, b}, out, va.dtype);
}

// Window sizes, strides and dilations must be positive (they divide shapes).
Status check_positive(const std::vector<int64_t>& v, const char* what) {
  for (int64_t x : v)
    if (x <= 0) return invalid(std::string(what) + " must be positive");
  return Status::ok();
}

// Pads [top, left, bottom, right] of a 2-D window, from `pads` or auto_pad.
Result<std::array<int64_t, 4>> window_pads(const Node& node, const std::vector<int64_t>& in, const int64_t k[2],
                                           const int64_t s[2], const int64_t d[2]) {
  const std::string autopad = attr_string(node, "auto_pad", "NOTSET");
  std::array<int64_t, 4> p{0, 0, 0, 0};
  if (autopad == "NOTSET") {
    const auto pads = attr_ints(node, "pads", {0, 0, 0, 0});
    if (pads.size() != 4) return invalid("pads must have 4 values for a 2-D window");
    for (int i = 0; i < 4; ++i) p[i] = pads[i];
  } else if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
    for (int i = 0; i < 2; ++i) {
      const int64_t out = (in[2 + i] + s[i] - 1) / s[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[2 + i]);
      const int64_t small = total / 2;
      p[i] = autopad == "SAME_UPPER" ? small : total - small;
      p[i + 2] = total - p[i];
    }
  } else if (autopad != "VALID") {
    return invalid("auto_pad '" + autopad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  for (int64_t v : p)
    if (v < 0) return invalid("negative padding");
  return p;
}

// A 1-D window operator (rank-3 input) as its 2-D form with a unit height:
// input and weight get a unit dimension 2, the window attributes a leading 1
// (pads a leading 0 at each end), and the result loses the unit dimension.
Status convert_1d_as_2d(ImportContext& ctx, const Node& node, Status (*convert_2d)(ImportContext&, const Node&)) {
  const std::string name = node.name().empty() ? node.output(0) : node.name();
  Node lifted = node;
  for (int i = 0; i < 2 && i < node.input_size(); ++i) {
    if (!ImportContext::has_input(node, i)) continue;
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.input(node, i));
    auto shape = ctx.value(v).shape;
    if (shape.size() != 3) return invalid("input " + std::to_string(i) + " of a 1-D window must have rank 3");
    shape.insert(shape.begin() + 2, 1);
    const std::string lifted_name = name + ".2d_in" + std::to_string(i);
    TESSERA_ASSIGN_OR_RETURN(ValueId r,
                             ctx.add(lifted_name, OpKind::kReshape, graph::NoAttrs{}, {v}, shape, ctx.value(v).dtype));
    ctx.values[lifted_name] = r;
    lifted.set_input(i, lifted_name);
  }
  for (auto& attr : *lifted.mutable_attribute()) {
    const std::string& a = attr.name();
    auto* ints = attr.mutable_ints();
    if (a == "kernel_shape" || a == "strides" || a == "dilations" || a == "output_padding" || a == "output_shape") {
      if (ints->size() != 1) return invalid(a + " of a 1-D window needs 1 value");
      ints->Add(ints->Get(0));
      ints->Set(0, 1);
    } else if (a == "pads") {
      if (ints->size() != 2) return invalid("pads of a 1-D window need 2 values");
      const int64_t begin = ints->Get(0), end = ints->Get(1);
      ints->Clear();
      for (int64_t v : {int64_t{0}, begin, int64_t{0}, end}) ints->Add(v);
    }
  }
  lifted.set_output(0, name + ".2d_out");
  TESSERA_RETURN_IF_ERROR(convert_2d(ctx, lifted));
  const ValueId y = ctx.values.at(name + ".2d_out");
  auto shape = ctx.value(y).shape;
  shape.erase(shape.begin() + 2);
  return ctx.emit(node, OpKind::kReshape, graph::NoAttrs{}, {y}, shape, ctx.value(y).dtype);
}

}  // namespace

Result<ConvGeometry> conv_geometry(const Node& node, const std::vector<int64_t>& xs, const std::vector<int64_t>& ws) {
  if (xs.size() != 4 || ws.size() != 4) return invalid("a 2-D convolution needs rank-4 input and weight");
  graph::ConvAttrs a;
  a.groups = attr_int(node, "group", 1);
  const auto strides = attr_ints(node, "strides", {1, 1}), dil = attr_ints(node, "dilations", {1, 1});
  if (strides.size() != 2 || dil.size() != 2) return invalid("strides and dilations need 2 values");
  TESSERA_RETURN_IF_ERROR(check_positive(strides, "strides"));
  TESSERA_RETURN_IF_ERROR(check_positive(dil, "dilations"));
  const int64_t k[2] = {ws[2], ws[3]}, s[2] = {strides[0], strides[1]}, d[2] = {dil[0], dil[1]};
  if (a.groups <= 0 || xs[1] % a.groups || ws[0] % a.groups || ws[1] * a.groups != xs[1])
    return invalid("group " + std::to_string(a.groups) + " does not match input " + graph::shape_string(xs) +
                   " and weight " + graph::shape_string(ws));
  TESSERA_ASSIGN_OR_RETURN(auto p, window_pads(node, xs, k, s, d));
  a.stride_h = s[0], a.stride_w = s[1], a.dilation_h = d[0], a.dilation_w = d[1];
  a.pad_top = p[0], a.pad_left = p[1], a.pad_bottom = p[2], a.pad_right = p[3];
  const int64_t oh = (xs[2] + p[0] + p[2] - d[0] * (k[0] - 1) - 1) / s[0] + 1;
  const int64_t ow = (xs[3] + p[1] + p[3] - d[1] * (k[1] - 1) - 1) / s[1] + 1;
  return ConvGeometry{a, {xs[0], ws[0], oh, ow}};
}

namespace {

Status convert_conv(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId w, ctx.input(node, 1));
  const auto xs = ctx.value(x).shape, ws = ctx.value(w).shape;
  if (xs.size() == 3) return convert_1d_as_2d(ctx, node, convert_conv);
  if (xs.size() == 5) return convert_conv_3d(ctx, node);
  if (xs.size() != 4 || ws.size() != 4)
    return invalid("only 1-D, 2-D and 3-D convolutions (rank-3/4/5 input and weight) are supported");
  TESSERA_ASSIGN_OR_RETURN(ConvGeometry geometry, conv_geometry(node, xs, ws));
  std::vector<ValueId> inputs{x, w};
  if (ImportContext::has_input(node, 2)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 2));
    if (ctx.value(b).shape != std::vector<int64_t>{ws[0]}) return invalid("bias must have shape [K]");
    inputs.push_back(b);
  }
  TESSERA_ASSIGN_OR_RETURN(bool on_integers, convert_dequantized_conv(ctx, node, geometry));
  if (on_integers) return Status::ok();
  return ctx.emit(node, OpKind::kConv, geometry.attrs, inputs, geometry.shape, ctx.value(x).dtype);
}

Status convert_conv_transpose(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId w, ctx.input(node, 1));
  const auto xs = ctx.value(x).shape, ws = ctx.value(w).shape;
  if (xs.size() == 3) return convert_1d_as_2d(ctx, node, convert_conv_transpose);
  if (xs.size() == 5) return convert_conv_transpose_3d(ctx, node);
  if (xs.size() != 4 || ws.size() != 4) return invalid("only 1-D, 2-D and 3-D transposed convolutions are supported");
  graph::ConvAttrs a;
  a.groups = attr_int(node, "group", 1);
  if (a.groups <= 0 || xs[1] != ws[0] || xs[1] % a.groups) return invalid("group and weight do not match the input");
  const auto strides = attr_ints(node, "strides", {1, 1}), dil = attr_ints(node, "dilations", {1, 1});
  const auto out_pad = attr_ints(node, "output_padding", {0, 0}), out_shape = attr_ints(node, "output_shape");
  if (strides.size() != 2 || dil.size() != 2 || out_pad.size() != 2)
    return invalid("strides, dilations and output_padding need 2 values");
  TESSERA_RETURN_IF_ERROR(check_positive(strides, "strides"));
  TESSERA_RETURN_IF_ERROR(check_positive(dil, "dilations"));
  a.stride_h = strides[0], a.stride_w = strides[1], a.dilation_h = dil[0], a.dilation_w = dil[1];
  int64_t pads[4] = {0, 0, 0, 0};
  const auto given = attr_ints(node, "pads", {0, 0, 0, 0});
  if (given.size() != 4) return invalid("pads must have 4 values");
  std::copy(given.begin(), given.end(), pads);
  const std::string autopad = attr_string(node, "auto_pad", "NOTSET");
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t full = strides[i] * (xs[2 + i] - 1) + out_pad[i] + (ws[2 + i] - 1) * dil[i] + 1;
    const int64_t want = !out_shape.empty()                                   ? out_shape[out_shape.size() - 2 + i]
                         : autopad == "SAME_UPPER" || autopad == "SAME_LOWER" ? xs[2 + i] * strides[i]
                                                                              : -1;
    if (want > 0) {
      // ONNX: SAME_UPPER puts the smaller half first, otherwise the larger;
      // a negative total (more output than the windows cover) floors.
      const int64_t total = full - want;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pads[i] = autopad == "SAME_UPPER" ? half : total - half;
      pads[i + 2] = total - pads[i];
    }
    out[i] = full - pads[i] - pads[i + 2];
    if (out[i] <= 0) return invalid("the output would be empty");
  }
  a.pad_top = pads[0], a.pad_left = pads[1], a.pad_bottom = pads[2], a.pad_right = pads[3];
  std::vector<ValueId> inputs{x, w};
  if (ImportContext::has_input(node, 2)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 2));
    inputs.push_back(b);
  }
  return ctx.emit(node, OpKind::kConvTranspose, a, inputs, {xs[0], ws[1] * a.groups, out[0], out[1]},
                  ctx.value(x).dtype);
}

Status convert_resize(ImportContext& ctx, const Node& node) {
  using A = graph::ResizeAttrs;
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  if (!ctx.value(x).dtype.is_float()) return invalid("only floating-point input is supported");
  A a;
  const std::string mode = attr_string(node, "mode", "nearest");
  if (mode == "linear")
    a.mode = A::Mode::kLinear;
  else if (mode == "cubic")
    a.mode = A::Mode::kCubic;
  else if (mode != "nearest")
    return invalid("mode '" + mode + "' is not supported (nearest, linear, cubic)");
  a.cubic_a = attr_float(node, "cubic_coeff_a", -0.75f);
  a.exclude_outside = attr_int(node, "exclude_outside", 0) != 0;
  static const std::map<std::string, A::Coord> kCoords = {{"half_pixel", A::Coord::kHalfPixel},
                                                          {"asymmetric", A::Coord::kAsymmetric},
                                                          {"align_corners", A::Coord::kAlignCorners},
                                                          {"pytorch_half_pixel", A::Coord::kPytorchHalfPixel},
                                                          {"tf_half_pixel_for_nn", A::Coord::kTfHalfPixelForNn},
                                                          {"tf_crop_and_resize", A::Coord::kTfCropAndResize}};
  static const std::map<std::string, A::Round> kRounds = {{"round_prefer_floor", A::Round::kPreferFloor},
                                                          {"round_prefer_ceil", A::Round::kPreferCeil},
                                                          {"floor", A::Round::kFloor},
                                                          {"ceil", A::Round::kCeil}};
  const std::string coord = attr_string(node, "coordinate_transformation_mode", "half_pixel");
  const std::string round = attr_string(node, "nearest_mode", "round_prefer_floor");
  if (!kCoords.count(coord)) return invalid("coordinate_transformation_mode '" + coord + "' is not supported");
  if (!kRounds.count(round)) return invalid("nearest_mode '" + round + "' is not supported");
  a.coord = kCoords.at(coord);
  a.round = kRounds.at(round);
  if (a.coord == A::Coord::kTfCropAndResize) {
    const auto* roi = ctx.constant_input(node, 1);
    if (!roi || roi->num_elements() != 2 * static_cast<int64_t>(xs.size()))
      return invalid("tf_crop_and_resize needs a constant roi of 2 * rank values");
    a.roi = roi->to_doubles();
    a.extrapolation_value = attr_float(node, "extrapolation_value", 0.0f);
  }
  // Inputs: X, roi, scales, sizes (opset 11+); scales or sizes must be a constant.
  const auto* scales = ctx.constant_input(node, 2);
  const auto* sizes = ctx.constant_input(node, 3);
  std::vector<int64_t> shape = xs;
  if (sizes && sizes->num_elements() > 0) {
    if (sizes->num_elements() != static_cast<int64_t>(xs.size()))
      return invalid("sizes must have one value per dimension");
    for (size_t d = 0; d < xs.size(); ++d) {
      shape[d] = static_cast<int64_t>(sizes->at(static_cast<int64_t>(d)));
      a.scales.push_back(static_cast<double>(shape[d]) / static_cast<double>(xs[d]));
    }
  } else if (scales && scales->num_elements() > 0) {
    if (scales->num_elements() != static_cast<int64_t>(xs.size()))
      return invalid("scales must have one value per dimension");
    for (size_t d = 0; d < xs.size(); ++d) {
      a.scales.push_back(scales->at(static_cast<int64_t>(d)));
      shape[d] = static_cast<int64_t>(std::floor(static_cast<double>(xs[d]) * a.scales[d]));
    }
  } else {
    return invalid("neither scales nor sizes is a constant");
  }
  return ctx.emit(node, OpKind::kResize, a, {x}, shape, ctx.value(x).dtype);
}

// A 3-D pooling (rank-5 input) as two 2-D poolings: over (H, W) with the
// depth folded into the channels, then over D with H and W folded into one
// axis. Max and average are separable over a box window, and so is the
// padding: the valid part of a box is the product of its per-axis parts, so
// even average pooling without count_include_pad divides correctly.
Status convert_pool_3d(ImportContext& ctx, const Node& node, Status (*convert_2d)(ImportContext&, const Node&)) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  const std::string name = node.name().empty() ? node.output(0) : node.name();
  const auto ks = attr_ints(node, "kernel_shape"), strides = attr_ints(node, "strides", {1, 1, 1});
  const auto dil = attr_ints(node, "dilations", {1, 1, 1}), pads = attr_ints(node, "pads", {0, 0, 0, 0, 0, 0});
  if (ks.size() != 3 || strides.size() != 3 || dil.size() != 3 || pads.size() != 6)
    return invalid("kernel_shape, strides and dilations need 3 values and pads 6 for a 3-D window");
  // One 2-D pass: `node` with the given window, reading `in` (bound to a new name).
  auto pass = [&](const std::string& tag, ValueId in, std::vector<int64_t> k, std::vector<int64_t> st,
                  std::vector<int64_t> di, std::vector<int64_t> pd) -> Result<ValueId> {
    Node sub = node;
    sub.clear_attribute();
    for (const auto& attr : node.attribute())
      if (attr.name() != "kernel_shape" && attr.name() != "strides" && attr.name() != "dilations" &&
          attr.name() != "pads")
        *sub.add_attribute() = attr;
    const std::pair<const char*, std::vector<int64_t>*> window[] = {
        {"kernel_shape", &k}, {"strides", &st}, {"dilations", &di}, {"pads", &pd}};
    for (const auto& [attr_name, values] : window) {
      auto* a = sub.add_attribute();
      a->set_name(attr_name);
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : *values) a->add_ints(v);
    }
    const std::string in_name = name + "." + tag + "_in", out_name = name + "." + tag + "_out";
    ctx.values[in_name] = in;
    sub.set_input(0, in_name);
    sub.set_output(0, out_name);
    TESSERA_RETURN_IF_ERROR(convert_2d(ctx, sub));
    return ctx.values.at(out_name);
  };
  TESSERA_ASSIGN_OR_RETURN(ValueId hw_in, ctx.add(name + ".fold_depth", OpKind::kReshape, graph::NoAttrs{}, {x},
                                                  {xs[0], xs[1] * xs[2], xs[3], xs[4]}, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId hw, pass("hw", hw_in, {ks[1], ks[2]}, {strides[1], strides[2]}, {dil[1], dil[2]},
                                            {pads[1], pads[2], pads[4], pads[5]}));
  const auto hs = ctx.value(hw).shape;  // [N, C * D, OH, OW]
  TESSERA_ASSIGN_OR_RETURN(ValueId d_in, ctx.add(name + ".fold_hw", OpKind::kReshape, graph::NoAttrs{}, {hw},
                                                 {xs[0], xs[1], xs[2], hs[2] * hs[3]}, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId d,
                           pass("d", d_in, {ks[0], 1}, {strides[0], 1}, {dil[0], 1}, {pads[0], 0, pads[3], 0}));
  const int64_t od = ctx.value(d).shape[2];
  return ctx.emit(node, OpKind::kReshape, graph::NoAttrs{}, {d}, {xs[0], xs[1], od, hs[2], hs[3]}, t);
}

Status convert_pool(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const bool want_indices = node.output_size() > 1 && !node.output(1).empty();
  if (want_indices && xs.size() != 4) return invalid("the Indices output is supported for 2-D pooling only");
  if (xs.size() == 3) return convert_1d_as_2d(ctx, node, convert_pool);
  if (xs.size() == 5) return convert_pool_3d(ctx, node, convert_pool);
  if (xs.size() != 4) return invalid("only 1-D, 2-D and 3-D pooling (rank-3/4/5 input) is supported");
  const bool is_max = node.op_type() == "MaxPool";
  const DType t = ctx.value(x).dtype;
  if (t.is_bool() || (!is_max && !t.is_float()))
    return invalid(node.op_type() + " of " + t.to_string() + " is not supported");
  const auto ks = attr_ints(node, "kernel_shape"), strides = attr_ints(node, "strides", {1, 1});
  const auto dil = attr_ints(node, "dilations", {1, 1});
  if (ks.size() != 2 || strides.size() != 2 || dil.size() != 2)
    return invalid("kernel_shape, strides and dilations need 2 values");
  TESSERA_RETURN_IF_ERROR(check_positive(ks, "kernel_shape"));
  TESSERA_RETURN_IF_ERROR(check_positive(strides, "strides"));
  TESSERA_RETURN_IF_ERROR(check_positive(dil, "dilations"));
  if (!is_max && (dil[0] != 1 || dil[1] != 1)) return invalid("dilated average pooling is not supported");
  const int64_t k[2] = {ks[0], ks[1]}, s[2] = {strides[0], strides[1]}, d[2] = {dil[0], dil[1]};
  TESSERA_ASSIGN_OR_RETURN(auto p, window_pads(node, xs, k, s, d));
  graph::PoolAttrs a{
      k[0], k[1], s[0], s[1], d[0], d[1], p[0], p[1], p[2], p[3], attr_int(node, "count_include_pad", 0) != 0};
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t span = xs[2 + i] + p[i] + p[i + 2] - d[i] * (k[i] - 1) - 1;
    out[i] = span / s[i] + 1;
    if (attr_int(node, "ceil_mode", 0) && span % s[i] != 0) {
      // Ceil mode: one more window, which must start inside input or left padding.
      if ((out[i]) * s[i] >= xs[2 + i] + p[i]) continue;
      if (!is_max && a.count_include_pad) return invalid("ceil_mode with count_include_pad is not supported");
      const int64_t extra = s[i] - span % s[i];
      (i == 0 ? a.pad_bottom : a.pad_right) += extra;
      out[i] += 1;
    }
  }
  const std::vector<int64_t> shape{xs[0], xs[1], out[0], out[1]};
  TESSERA_RETURN_IF_ERROR(ctx.emit(node, is_max ? OpKind::kMaxPool : OpKind::kAvgPool, a, {x}, shape, t));
  if (!want_indices) return Status::ok();
  // The Indices output: a node of its own that finds each window's maximum again.
  graph::PoolAttrs ia = a;
  ia.indices = true;
  ia.column_major = attr_int(node, "storage_order", 0) != 0;
  TESSERA_ASSIGN_OR_RETURN(ValueId indices, ctx.add(node.output(1), OpKind::kMaxPool, ia, {x}, shape, DType::i64()));
  ctx.values[node.output(1)] = indices;
  return Status::ok();
}

Status convert_gemm(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId a, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 1));
  graph::GemmAttrs at{attr_float(node, "alpha", 1.0f), attr_float(node, "beta", 1.0f), attr_int(node, "transA", 0) != 0,
                      attr_int(node, "transB", 0) != 0};
  const auto as = ctx.value(a).shape, bs = ctx.value(b).shape;
  if (as.size() != 2 || bs.size() != 2) return invalid("Gemm operands must be 2-D");
  const int64_t m = at.trans_a ? as[1] : as[0], ka = at.trans_a ? as[0] : as[1];
  const int64_t kb = at.trans_b ? bs[1] : bs[0], n = at.trans_b ? bs[0] : bs[1];
  if (ka != kb) return invalid("inner dimensions differ: " + graph::shape_string(as) + " x " + graph::shape_string(bs));
  if (at.alpha == 1.0 && at.beta == 1.0 && !at.trans_a) {
    TESSERA_ASSIGN_OR_RETURN(bool on_integers, convert_dequantized_matmul(ctx, node, at.trans_b));
    if (on_integers) return Status::ok();
  }
  std::vector<ValueId> inputs{a, b};
  if (ImportContext::has_input(node, 2)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId c, ctx.input(node, 2));
    inputs.push_back(c);
  }
  return ctx.emit(node, OpKind::kGemm, at, inputs, {m, n}, ctx.value(a).dtype);
}

Status convert_matmul(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId a, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 1));
  const auto as = ctx.value(a).shape, bs = ctx.value(b).shape;
  if (as.size() < 2 || bs.size() < 2) return invalid("1-D MatMul operands are not supported");
  if (as.back() != bs[bs.size() - 2])
    return invalid("inner dimensions differ: " + graph::shape_string(as) + " x " + graph::shape_string(bs));
  const size_t rank = std::max(as.size(), bs.size());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d + 2 < rank; ++d) {
    const int64_t x = d + as.size() >= rank ? as[d + as.size() - rank] : 1;
    const int64_t y = d + bs.size() >= rank ? bs[d + bs.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) return invalid("batch dimensions do not broadcast");
    out[d] = x == 1 ? y : x;
  }
  out[rank - 2] = as[as.size() - 2];
  out[rank - 1] = bs.back();
  if (bs.size() == 2) {
    TESSERA_ASSIGN_OR_RETURN(bool on_integers, convert_dequantized_matmul(ctx, node, false));
    if (on_integers) return Status::ok();
  }
  return ctx.emit(node, OpKind::kMatMul, graph::NoAttrs{}, {a, b}, out, ctx.value(a).dtype);
}

// BatchNormalization with training_mode=1 (opset 14+): normalizes with the
// batch's own mean and population variance over every axis but 1, and the
// optional outputs 1 and 2 are the running statistics
// input * momentum + batch * (1 - momentum).
Status emit_batch_norm_training(ImportContext& ctx, const Node& node, std::vector<ValueId> inputs) {
  const ValueId x = inputs[0];
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  const std::string name = node.name().empty() ? node.output(0) : node.name();
  std::vector<int64_t> axes, kept(xs.size(), 1);
  for (size_t d = 0; d < xs.size(); ++d)
    if (d != 1) axes.push_back(static_cast<int64_t>(d));
  kept[1] = xs[1];
  const std::vector<int64_t> channels{xs[1]};
  TESSERA_ASSIGN_OR_RETURN(
      ValueId mean_k, ctx.add(name + ".batch_mean", OpKind::kReduceMean, graph::ReduceAttrs{axes, true}, {x}, kept, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId dev, ctx.add(name + ".dev", OpKind::kSub, graph::NoAttrs{}, {x, mean_k}, xs, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId sq, ctx.add(name + ".sq", OpKind::kMul, graph::NoAttrs{}, {dev, dev}, xs, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId var, ctx.add(name + ".batch_var", OpKind::kReduceMean,
                                                graph::ReduceAttrs{axes, false}, {sq}, channels, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId mean,
                           ctx.add(name + ".batch_mean_c", OpKind::kReshape, graph::NoAttrs{}, {mean_k}, channels, t));
  const ValueId running_mean = inputs[3], running_var = inputs[4];
  inputs[3] = mean;
  inputs[4] = var;
  TESSERA_RETURN_IF_ERROR(
      ctx.emit(node, OpKind::kBatchNorm, graph::ScalarAttrs{attr_float(node, "epsilon", 1e-5f)}, inputs, xs, t));
  const double momentum = attr_float(node, "momentum", 0.9f);
  const ValueId keep = ctx.g.add_constant(name + ".momentum", graph::Constant::from_doubles(t, {}, {momentum}));
  const ValueId take =
      ctx.g.add_constant(name + ".one_minus_momentum", graph::Constant::from_doubles(t, {}, {1 - momentum}));
  const std::pair<ValueId, ValueId> stats[2] = {{running_mean, mean}, {running_var, var}};
  for (int i = 0; i < 2; ++i) {
    if (node.output_size() <= i + 1 || node.output(i + 1).empty()) continue;
    const std::string out = node.output(i + 1);
    TESSERA_ASSIGN_OR_RETURN(
        ValueId old_part, ctx.add(out + ".old", OpKind::kMul, graph::NoAttrs{}, {stats[i].first, keep}, channels, t));
    TESSERA_ASSIGN_OR_RETURN(
        ValueId new_part, ctx.add(out + ".new", OpKind::kMul, graph::NoAttrs{}, {stats[i].second, take}, channels, t));
    TESSERA_ASSIGN_OR_RETURN(ValueId sum,
                             ctx.add(out, OpKind::kAdd, graph::NoAttrs{}, {old_part, new_part}, channels, t));
    ctx.values[out] = sum;
  }
  return Status::ok();
}

Status convert_batch_norm(ImportContext& ctx, const Node& node) {
  std::vector<ValueId> inputs;
  for (int i = 0; i < 5; ++i) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.input(node, i));
    inputs.push_back(v);
  }
  const auto xs = ctx.value(inputs[0]).shape;
  if (xs.size() < 2) return invalid("input must have a channel dimension");
  for (int i = 1; i < 5; ++i)
    if (ctx.value(inputs[i]).shape != std::vector<int64_t>{xs[1]}) return invalid("parameters must have shape [C]");
  if (attr_int(node, "training_mode", 0) != 0) return emit_batch_norm_training(ctx, node, inputs);
  return ctx.emit(node, OpKind::kBatchNorm, graph::ScalarAttrs{attr_float(node, "epsilon", 1e-5f)}, inputs, xs,
                  ctx.value(inputs[0]).dtype);
}

Status convert_softmax(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", ctx.opset < 13 ? 1 : -1), xs.size(), "axis"));
  // Before opset 13 Softmax flattens [axis, rank) into one axis; that equals
  // the per-axis form only when axis is the last one.
  if (ctx.opset < 13 && axis != static_cast<int64_t>(xs.size()) - 1)
    return invalid("opset-" + std::to_string(ctx.opset) + " Softmax over axes [" + std::to_string(axis) +
                   ", rank) is not supported; only the last axis");
  return emit_like(ctx, node, OpKind::kSoftmax, graph::AxisAttrs{axis}, x);
}

Status convert_layer_norm(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId scale, ctx.input(node, 1));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", -1), xs.size(), "axis"));
  const double eps = attr_float(node, "epsilon", 1e-5f);
  const std::vector<int64_t> norm_shape(xs.begin() + axis, xs.end());
  const std::string name = node.name().empty() ? node.output(0) : node.name();
  ValueId bias = -1;
  if (ImportContext::has_input(node, 2)) {
    TESSERA_ASSIGN_OR_RETURN(bias, ctx.input(node, 2));
  } else {
    bias = ctx.g.add_constant(
        name + ".zero_bias",
        graph::Constant::from_doubles(t, norm_shape, std::vector<double>(graph::shape_size(norm_shape), 0.0)));
  }
  if (ctx.value(scale).shape != norm_shape || ctx.value(bias).shape != norm_shape)
    return invalid("Scale and B must have the normalized shape " + graph::shape_string(norm_shape));
  TESSERA_RETURN_IF_ERROR(ctx.emit(node, OpKind::kLayerNorm, graph::NormAttrs{axis, eps}, {x, scale, bias}, xs, t));
  const bool want_mean = node.output_size() > 1 && !node.output(1).empty();
  const bool want_inv = node.output_size() > 2 && !node.output(2).empty();
  if (!want_mean && !want_inv) return Status::ok();
  // The optional Mean and InvStdDev outputs (reduced axes kept as 1) as
  // separate nodes: mean, then 1 / sqrt(mean((x - mean)^2) + eps).
  std::vector<int64_t> axes, reduced = xs;
  for (int64_t d = axis; d < static_cast<int64_t>(xs.size()); ++d) {
    axes.push_back(d);
    reduced[d] = 1;
  }
  TESSERA_ASSIGN_OR_RETURN(
      ValueId mean, ctx.add(name + ".mean", OpKind::kReduceMean, graph::ReduceAttrs{axes, true}, {x}, reduced, t));
  if (want_mean) ctx.values[node.output(1)] = mean;
  if (!want_inv) return Status::ok();
  TESSERA_ASSIGN_OR_RETURN(ValueId dev, ctx.add(name + ".dev", OpKind::kSub, graph::NoAttrs{}, {x, mean}, xs, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId sq, ctx.add(name + ".sq", OpKind::kMul, graph::NoAttrs{}, {dev, dev}, xs, t));
  TESSERA_ASSIGN_OR_RETURN(
      ValueId var, ctx.add(name + ".var", OpKind::kReduceMean, graph::ReduceAttrs{axes, true}, {sq}, reduced, t));
  const ValueId e = ctx.g.add_constant(name + ".eps", graph::Constant::from_doubles(t, {}, {eps}));
  TESSERA_ASSIGN_OR_RETURN(ValueId ve,
                           ctx.add(name + ".var_eps", OpKind::kAdd, graph::NoAttrs{}, {var, e}, reduced, t));
  const ValueId p = ctx.g.add_constant(name + ".minus_half", graph::Constant::from_doubles(t, {}, {-0.5}));
  TESSERA_ASSIGN_OR_RETURN(ValueId inv,
                           ctx.add(name + ".inv_std", OpKind::kPow, graph::NoAttrs{}, {ve, p}, reduced, t));
  ctx.values[node.output(2)] = inv;
  return Status::ok();
}

Status convert_global_pool(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  if (xs.size() != 4) return invalid("only rank-4 (NCHW) input is supported");
  return ctx.emit(node, OpKind::kGlobalAvgPool, graph::NoAttrs{}, {x}, {xs[0], xs[1], 1, 1}, ctx.value(x).dtype);
}

std::map<std::string, Converter> make_converters() {
  std::map<std::string, Converter> table = {
      {"Add", convert_binary},
      {"Sub", convert_binary},
      {"Mul", convert_binary},
      {"Div", convert_binary},
      {"Pow", convert_binary},
      {"Relu", convert_unary},
      {"LeakyRelu", convert_unary},
      {"Sigmoid", convert_unary},
      {"HardSigmoid", convert_unary},
      {"HardSwish", convert_unary},
      {"Tanh", convert_unary},
      {"Erf", convert_unary},
      {"Clip", convert_clip},
      {"Conv", convert_conv},
      {"Resize", convert_resize},
      {"ConvTranspose", convert_conv_transpose},
      {"Gemm", convert_gemm},
      {"MatMul", convert_matmul},
      {"BatchNormalization", convert_batch_norm},
      {"MaxPool", convert_pool},
      {"AveragePool", convert_pool},
      {"GlobalAveragePool", convert_global_pool},
      {"Flatten", convert_reshape},
      {"Reshape", convert_reshape},
      {"Squeeze", convert_reshape},
      {"Unsqueeze", convert_reshape},
      {"Transpose", convert_transpose},
      {"Concat", convert_concat},
      {"Softmax", convert_softmax},
      {"LayerNormalization", convert_layer_norm},
      {"Slice", convert_slice},
      {"Split", convert_split},
      {"Pad", convert_pad},
      {"Constant", convert_constant},
      {"Shape", convert_shape},
      {"Gather", convert_gather},
      {"Cast", convert_cast},
      {"Identity", convert_identity},
      {"Dropout", convert_identity},
      {"Max", convert_max_min},
      {"Min", convert_max_min},
  };
  add_math_converters(table);
  add_data_converters(table);
  add_quant_converters(table);
  add_control_flow_converters(table);
  add_sequence_converters(table);
  add_recurrent_converters(table);
  return table;
}

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> kTable = make_converters();
  return kTable;
}

}  // namespace

std::string base_name(const Node& node) {
  return node.name().empty() ? node.output(0) : node.name();
}

ValueId scalar_constant(ImportContext& ctx, const std::string& name, DType dtype, double value) {
  return ctx.g.add_constant(name, graph::Constant::from_doubles(dtype, {}, {value}));
}

Status convert_node(ImportContext& ctx, const Node& node) {
  if (node.output_size() < 1) return invalid("the node has no output");
  if (ctx.opset < 7 && has_legacy_broadcast(node.op_type())) {
    TESSERA_ASSIGN_OR_RETURN(Node current, legacy_broadcast(ctx, node));
    return converters().at(node.op_type())(ctx, current);
  }
  // Attributes that only opsets before 7 had (or a Reshape before 5) change
  // what the node means; the converters read the current semantics.
  // (Binary operators of such an opset are rewritten above.) broadcast=1
  // without an axis aligns trailing dimensions like NumPy does
  // unidirectionally; consumed_inputs is only an in-place hint; is_test=1 is
  // inference.
  if (find_attr(node, "broadcast") && find_attr(node, "axis") && node.op_type() != "Concat" &&
      node.op_type() != "Softmax" && node.op_type() != "Gather" && node.op_type() != "Flatten")
    return invalid("legacy attribute 'broadcast' with an axis (opset < 7) is not supported");
  if (find_attr(node, "is_test") && attr_int(node, "is_test", 0) == 0)
    return invalid("legacy attribute 'is_test=0' (training, opset < 7) is not supported");
  if (node.op_type() == "Reshape" && find_attr(node, "shape"))
    return invalid("the opset < 5 'shape' attribute is not supported");
  if (node.op_type() == "BatchNormalization" && attr_int(node, "spatial", 1) == 0)
    return invalid("spatial=0 (opset < 9) is not supported");
  return converters().at(node.op_type())(ctx, node);
}

bool is_supported_op(const std::string& op_type) {
  return converters().count(op_type) != 0;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : converters()) out.push_back(name);
  return out;
}

}  // namespace tessera::frontend::detail
